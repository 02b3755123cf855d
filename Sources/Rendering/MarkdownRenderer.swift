@preconcurrency import CCmark
import Synchronization
import TerminalIO

/// One top-level piece of a reply, parsed and not yet laid out: laying out happens at the
/// width of the moment, so a resize changes what is drawn next.
public indirect enum MarkdownBlock: Equatable, Sendable {
    /// Prose: wrapped to the width; a newline in a run is a line break the reply meant.
    case paragraph([StyledRun])
    case heading(level: Int, [StyledRun])
    /// Every space kept; a line wider than the width is broken there, inside the frame.
    /// `number` counts the reply's code blocks in order, as `/copy code N` does.
    case code(language: String, lines: [String], number: Int)
    case list(ordered: Bool, tight: Bool, items: [ListItem])
    case quote([MarkdownBlock])
    case table(rows: [[[StyledRun]]], alignments: [TableAlignment])
    case rule
    /// Lines shown as they are (HTML blocks).
    case verbatim([String])

    public struct ListItem: Equatable, Sendable {
        public var marker: String
        public var blocks: [MarkdownBlock]
    }

    public enum TableAlignment: Equatable, Sendable { case left, center, right }

    /// The code blocks inside this one, nested ones included.
    var codeBlockCount: Int {
        switch self {
        case .code: 1
        case .quote(let blocks): blocks.reduce(0) { $0 + $1.codeBlockCount }
        case .list(_, _, let items): items.reduce(0) { $0 + $1.blocks.reduce(0) { $0 + $1.codeBlockCount } }
        default: 0
        }
    }

    /// This block with its code blocks numbered in document order from `next`.
    func numberingCode(_ next: inout Int) -> MarkdownBlock {
        switch self {
        case .code(let language, let lines, _):
            defer { next += 1 }
            return .code(language: language, lines: lines, number: next)
        case .quote(let blocks):
            return .quote(blocks.map { $0.numberingCode(&next) })
        case .list(let ordered, let tight, let items):
            return .list(ordered: ordered, tight: tight, items: items.map { item in
                ListItem(marker: item.marker, blocks: item.blocks.map { $0.numberingCode(&next) })
            })
        default:
            return self
        }
    }
}

/// The model's markdown for a terminal, parsed by cmark-gfm (with its table, strikethrough
/// and autolink extensions) and laid out at a width. Escape sequences are neutralised before
/// parsing and again on everything the parser hands back, so a reply cannot inject any
/// through markdown; the only escapes in the output are the renderer's own styles, and none
/// at all without `styled`.
public struct MarkdownRenderer: Sendable {
    public let styled: Bool

    public init(styled: Bool) { self.styled = styled }

    /// cmark-gfm keeps process-wide tables (its extension registry and the inline parser's
    /// special characters) that parsers change as they attach extensions, so two parses at
    /// once can corrupt each other. Every use of the library goes through this lock.
    private static let libraryLock = Mutex<Void>(())

    // MARK: Whole replies

    /// `markdown` as lines at `width` (a blank line between blocks); `firstWidth` is the
    /// room on the first line, when something (a label) stands before it.
    public func lines(_ markdown: String, width: Int = DisplayWidth.unlimited, firstWidth: Int? = nil) -> [StyledLine] {
        Self.lines(of: parse(markdown).map(\.block), width: width, firstWidth: firstWidth ?? width)
    }

    /// `markdown` rendered for a terminal `width` columns wide, or unwrapped (for a pipe).
    public func render(_ markdown: String, width: Int = DisplayWidth.unlimited) -> String {
        let lines = self.lines(markdown, width: width)
        return lines.isEmpty ? "" : lines.map { $0.encoded(styled: styled) }.joined(separator: "\n") + "\n"
    }

    public static func lines(of blocks: [MarkdownBlock], width: Int, firstWidth: Int) -> [StyledLine] {
        var lines: [StyledLine] = []
        for block in blocks {
            if !lines.isEmpty { lines.append(.empty) }
            lines += Self.layout(block, width: width, firstWidth: lines.isEmpty ? firstWidth : width)
        }
        return lines
    }

    // MARK: Parsing

    /// Each top-level block of `markdown` with the line (from 1) it starts on; its code
    /// blocks numbered from `firstCode` (more than 1 for the rest of a streaming reply).
    func parse(_ markdown: String, firstCode: Int = 1) -> [(block: MarkdownBlock, line: Int)] {
        let safe = EscapeNeutralizer.neutralize(markdown)
        var next = firstCode
        return Self.libraryLock.withLock { _ in Self.parsedBlocks(safe) }.map { ($0.block.numberingCode(&next), $0.line) }
    }

    /// The text of each code block of `markdown` (fenced, indented, nested), numbered as the
    /// rendered reply numbers them; a block's last newlines are left off, so a pasted command
    /// does not run by itself. Parsed from the neutralised reply, as the screen is: the code
    /// copied is the code drawn (a lone CR ends a line for cmark, but is drawn as `^M`).
    /// `asDrawn: false` parses the reply as it came, to tell what neutralising changed.
    public static func codeBlocks(in markdown: String, asDrawn: Bool = true) -> [String] {
        let safe = asDrawn ? EscapeNeutralizer.neutralize(markdown) : markdown
        return libraryLock.withLock { _ in
            guard let document = parsedDocument(safe) else { return [] }
            defer { cmark_node_free(document) }
            var found: [String] = []
            func walk(_ node: OpaquePointer) {
                if type(node) == "code_block" {
                    var code = literal(cmark_node_get_literal(node))
                    while code.hasSuffix("\n") { code.removeLast() }
                    found.append(code)
                }
                children(node).forEach(walk)
            }
            walk(document)
            return found
        }
    }

    private static func parsedBlocks(_ safe: String) -> [(block: MarkdownBlock, line: Int)] {
        guard let document = parsedDocument(safe) else {
            return [(MarkdownBlock.verbatim(safe.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)), 1)]
        }
        defer { cmark_node_free(document) }
        return children(document).map { (block($0, depth: 0), Int(cmark_node_get_start_line($0))) }
    }

    /// The document cmark-gfm makes of `markdown` with the extensions replies use; the caller
    /// holds the library lock and frees it.
    private static func parsedDocument(_ markdown: String) -> OpaquePointer? {
        cmark_gfm_core_extensions_ensure_registered()
        guard let parser = cmark_parser_new(CMARK_OPT_DEFAULT) else { return nil }
        defer { cmark_parser_free(parser) }
        for name in ["table", "strikethrough", "autolink"] {
            if let extensionSyntax = cmark_find_syntax_extension(name) { cmark_parser_attach_syntax_extension(parser, extensionSyntax) }
        }
        markdown.withCString { cmark_parser_feed(parser, $0, markdown.utf8.count) }
        return cmark_parser_finish(parser)
    }

    private static func block(_ node: OpaquePointer, depth: Int) -> MarkdownBlock {
        switch type(node) {
        case "paragraph":
            return .paragraph(inlines(node, .plain))
        case "heading":
            return .heading(level: Int(cmark_node_get_heading_level(node)), inlines(node, .plain))
        case "block_quote":
            return .quote(children(node).map { block($0, depth: depth) })
        case "list":
            let ordered = cmark_node_get_list_type(node) == CMARK_ORDERED_LIST
            let delimiter = cmark_node_get_list_delim(node) == CMARK_PAREN_DELIM ? ")" : "."
            var number = Int(cmark_node_get_list_start(node))
            let bullets = ["•", "◦", "▪"]
            var items: [MarkdownBlock.ListItem] = []
            for item in children(node) {
                var marker = ordered ? "\(number)\(delimiter) " : bullets[min(depth, bullets.count - 1)] + " "
                number += 1
                var blocks = children(item).map { block($0, depth: depth + 1) }
                // A task list item (`- [ ] todo`, `- [x] done`): a box instead of the bullet.
                if !ordered, case .paragraph(var runs)? = blocks.first, let first = runs.first,
                   let box = ["[ ] ": "☐ ", "[x] ": "☑ ", "[X] ": "☑ "].first(where: { first.text.hasPrefix($0.key) }) {
                    runs[0] = StyledRun(String(first.text.dropFirst(4)), style: first.style, kind: first.kind)
                    blocks[0] = .paragraph(runs)
                    marker = box.value
                }
                items.append(.init(marker: marker, blocks: blocks))
            }
            return .list(ordered: ordered, tight: cmark_node_get_list_tight(node) != 0, items: items)
        case "code_block":
            let language = literal(cmark_node_get_fence_info(node)).split(separator: " ").first.map(String.init) ?? ""
            var code = literal(cmark_node_get_literal(node))
            if code.hasSuffix("\n") { code.removeLast() }
            return .code(language: language, lines: code.split(separator: "\n", omittingEmptySubsequences: false).map { expandingTabs(String($0)) }, number: 0)
        case "thematic_break":
            return .rule
        case "html_block":
            var html = literal(cmark_node_get_literal(node))
            if html.hasSuffix("\n") { html.removeLast() }
            return .verbatim(html.split(separator: "\n", omittingEmptySubsequences: false).map { expandingTabs(String($0)) })
        case "table":
            let rows = children(node).map { row in children(row).map { inlines($0, .plain) } }
            let columns = rows.map(\.count).max() ?? 0
            var alignments = [MarkdownBlock.TableAlignment](repeating: .left, count: columns)
            if let raw = cmark_gfm_extensions_get_table_alignments(node) {
                for column in 0..<columns {
                    switch raw[column] {
                    case UInt8(ascii: "r"): alignments[column] = .right
                    case UInt8(ascii: "c"): alignments[column] = .center
                    default: break
                    }
                }
            }
            return .table(rows: rows, alignments: alignments)
        default:
            return .paragraph(inlines(node, .plain))
        }
    }

    // MARK: Inlines

    private static func inlines(_ node: OpaquePointer, _ style: TextStyle) -> [StyledRun] {
        children(node).flatMap { inline($0, style) }
    }

    private static func inline(_ node: OpaquePointer, _ style: TextStyle) -> [StyledRun] {
        switch type(node) {
        case "text", "html_inline": return [StyledRun(literal(cmark_node_get_literal(node)), style: style)]
        // A single newline in a reply is a line break the model meant (a poem, an address).
        case "softbreak", "linebreak": return [StyledRun("\n", style: style)]
        case "code": return [StyledRun(literal(cmark_node_get_literal(node)), style: TextStyle.code.within(style), kind: .code)]
        case "emph": return inlines(node, TextStyle(italic: true).within(style))
        case "strong": return inlines(node, TextStyle(bold: true).within(style))
        case "strikethrough": return inlines(node, TextStyle(strike: true).within(style))
        case "link":
            let linkStyle = TextStyle(underline: true).within(style)
            let text = inlines(node, linkStyle)
            let url = literal(cmark_node_get_url(node))
            let shown = text.map(\.text).joined()
            if url.isEmpty { return text }
            if shown == url || "http://" + shown == url || "mailto:" + shown == url {
                return [StyledRun(shown, style: linkStyle, kind: .url)]
            }
            return text + [StyledRun(" (", style: style), StyledRun(url, style: style, kind: .url), StyledRun(")", style: style)]
        case "image":
            return [StyledRun("[image: ", style: style)] + inlines(node, style)
                + [StyledRun("] (", style: style), StyledRun(literal(cmark_node_get_url(node)), style: style, kind: .url), StyledRun(")", style: style)]
        default:
            return inlines(node, style)
        }
    }

    // MARK: Layout

    static let frameStyle = TextStyle(dim: true)

    /// The lines of one block at `width`. The first line has `firstWidth` columns; a block
    /// that cannot wrap (code, a table, a rule) starts below a shortened first line instead.
    /// From `resume` on only: the lines before that position were printed already.
    static func layout(_ block: MarkdownBlock, width: Int, firstWidth: Int, resume: LinePosition? = nil) -> [StyledLine] {
        var state = LayoutState(resume: resume)
        return layout(block, width: width, firstWidth: firstWidth, &state)
    }

    /// Numbers the units of a block's layout as it goes, and leaves out those before `resume`.
    struct LayoutState {
        let resume: LinePosition?
        var unit = 0

        /// Prose wrapped to the width, as one unit.
        mutating func wrapped(_ runs: [StyledRun], width: Int, firstWidth: Int) -> [StyledLine] {
            defer { unit += 1 }
            if let resume, unit < resume.unit { return [] }
            let start = resume?.unit == unit ? resume?.offset ?? 0 : 0
            return LineBreaker.wrap(runs, firstWidth: firstWidth, width: width, from: start).map { line in
                var line = line
                line.position.unit = unit
                return line
            }
        }

        /// A code line as one unit, its spaces kept, broken only where it meets the width: each
        /// row starts with `gutter`, the rows after the first with `continuation` too, so a long
        /// line stays inside its frame. A row's position is the character it starts with.
        mutating func broken(_ text: String, style: TextStyle, width: Int, gutter: StyledLine, continuation: StyledLine) -> [StyledLine] {
            defer { unit += 1 }
            if let resume, unit < resume.unit { return [] }
            let start = resume?.unit == unit ? resume?.offset ?? 0 : 0
            var rows: [StyledLine] = []
            var row = ""
            var rowWidth = 0
            var rowStart = start
            func room(_ offset: Int) -> Int { max(1, width - gutter.width - (offset > 0 ? continuation.width : 0)) }
            func close(next: Int) {
                var line = rowStart > 0 ? gutter + continuation : gutter
                line.append(row, style: style)
                line.position = LinePosition(unit: unit, offset: rowStart)
                rows.append(line)
                row = ""
                rowWidth = 0
                rowStart = next
            }
            for (index, character) in text.enumerated() where index >= start {
                let cells = DisplayWidth.of(character)
                if rowWidth > 0 && rowWidth + cells > room(rowStart) { close(next: index) }
                row.append(character)
                rowWidth += cells
            }
            if rowWidth > 0 || rows.isEmpty { close(next: 0) }
            return rows
        }

        /// The lines of one table row (or record) as one unit. A layout resuming inside it
        /// draws the whole row again: the table's columns (or its switch to records) depend on
        /// every row, so the part printed before may have been laid out differently, and a row
        /// shown twice in part is better than one lost in part.
        mutating func group(_ lines: [StyledLine]) -> [StyledLine] {
            defer { unit += 1 }
            if let resume, unit < resume.unit { return [] }
            return lines.enumerated().map { offset, line in
                var line = line
                line.position = LinePosition(unit: unit, offset: offset)
                return line
            }
        }

        /// Lines never wrapped, a unit each.
        mutating func fixed(_ lines: [StyledLine]) -> [StyledLine] {
            lines.compactMap { line in
                defer { unit += 1 }
                if let resume, LinePosition(unit: unit, offset: 0) < resume { return nil }
                var line = line
                line.position = LinePosition(unit: unit, offset: 0)
                return line
            }
        }
    }

    private static func layout(_ block: MarkdownBlock, width: Int, firstWidth: Int, _ state: inout LayoutState) -> [StyledLine] {
        switch block {
        case .paragraph(let runs):
            return state.wrapped(runs, width: width, firstWidth: firstWidth)
        case .heading(let level, let runs):
            let style = headingStyle(level)
            return state.wrapped(runs.map { StyledRun($0.text, style: $0.style.within(style), kind: $0.kind) }, width: width, firstWidth: firstWidth)
        case .code(let language, let lines, let number):
            // The number is the one `/copy code N` takes.
            let header = StyledLine("┌─ #\(number)" + (language.isEmpty ? "" : " \(language)") + " ─", style: frameStyle)
            let top = state.fixed(startingBelow(firstWidth, width, [header]))
            let gutter = StyledLine("│ ", style: frameStyle)
            let continuation = StyledLine("↪ ", style: frameStyle)
            let body = lines.flatMap { state.broken($0, style: .code, width: width, gutter: gutter, continuation: continuation) }
            return top + body + state.fixed([StyledLine("└─", style: frameStyle)])
        case .list(_, let tight, let items):
            var lines: [StyledLine] = []
            var first = true
            for item in items {
                if !tight && !first { lines += state.fixed([.empty]) }
                let markerWidth = DisplayWidth.of(item.marker)
                let itemFirstWidth = first ? firstWidth : width
                let itemStart = LinePosition(unit: state.unit, offset: 0)
                var body: [StyledLine] = []
                for (number, inner) in item.blocks.enumerated() {
                    if !tight && number > 0 { body += state.fixed([.empty]) }
                    body += layout(inner, width: width - markerWidth, firstWidth: (number == 0 ? itemFirstWidth : width) - markerWidth, &state)
                }
                if item.blocks.isEmpty { body = state.fixed([.empty]) }
                let marker = StyledLine(item.marker, style: TextStyle(bold: true))
                let indent = StyledLine(String(repeating: " ", count: markerWidth))
                // The bullet goes on the item's own first line, not on one a resumed layout starts with.
                var bulleted = false
                for line in body {
                    let first = !bulleted && line.position == itemStart
                    bulleted = bulleted || first
                    lines.append(line.after(first ? marker : indent))
                }
                first = false
            }
            return lines
        case .quote(let blocks):
            let bar = StyledLine("│ ", style: frameStyle)
            var body: [StyledLine] = []
            for (number, inner) in blocks.enumerated() {
                if number > 0 { body += state.fixed([.empty]) }
                body += layout(inner, width: width - 2, firstWidth: (number == 0 ? firstWidth : width) - 2, &state)
            }
            return body.map { $0.after(bar) }
        case .table(let rows, let alignments):
            let laid = table(rows, alignments, width: width)
            return state.fixed(startingBelow(firstWidth, width, [])) + laid.flatMap { state.group($0) }
        case .rule:
            return state.fixed(startingBelow(firstWidth, width, [StyledLine(String(repeating: "─", count: max(1, min(width, 40))), style: frameStyle)]))
        case .verbatim(let lines):
            return state.fixed(lines.map { StyledLine($0) })
        }
    }

    /// Each level its own look, none the same as bold text: 1 bold underlined, 2 bold in
    /// magenta, 3 bold italic, 4 to 6 italic underlined.
    static func headingStyle(_ level: Int) -> TextStyle {
        switch level {
        case 1: TextStyle(bold: true, underline: true)
        case 2: TextStyle(bold: true, color: 35)
        case 3: TextStyle(bold: true, italic: true)
        default: TextStyle(italic: true, underline: true)
        }
    }

    private static func startingBelow(_ firstWidth: Int, _ width: Int, _ lines: [StyledLine]) -> [StyledLine] {
        firstWidth < width ? [.empty] + lines : lines
    }

    /// Tabs as spaces to the next multiple of four: a terminal's tab stops are not the code's,
    /// and a tab's width could not be measured.
    static func expandingTabs(_ line: String) -> String {
        guard line.contains("\t") else { return line }
        var result = ""
        var column = 0
        for character in line {
            if character == "\t" {
                let spaces = 4 - column % 4
                result += String(repeating: " ", count: spaces)
                column += spaces
            } else {
                result.append(character)
                column += DisplayWidth.of(character)
            }
        }
        return result
    }

    // MARK: cmark helpers

    private static func type(_ node: OpaquePointer) -> String { literal(cmark_node_get_type_string(node)) }

    private static func children(_ node: OpaquePointer) -> [OpaquePointer] {
        var result: [OpaquePointer] = []
        var child = cmark_node_first_child(node)
        while let current = child {
            result.append(current)
            child = cmark_node_next(current)
        }
        return result
    }

    /// Text from the parsed tree, neutralised again: cmark decodes character references, so
    /// `&#27;` in a reply would otherwise become a real ESC here.
    private static func literal(_ text: UnsafePointer<CChar>?) -> String {
        text.map { EscapeNeutralizer.neutralize(String(cString: $0)) } ?? ""
    }
}

extension String {
    /// Newlines and tabs as spaces, for text that must stay on one line of known width.
    func flattened() -> String {
        guard contains(where: { $0 == "\n" || $0 == "\t" }) else { return self }
        return String(map { $0 == "\n" || $0 == "\t" ? " " : $0 })
    }
}
