@preconcurrency import CCmark
import Synchronization
import TerminalIO

/// The model's markdown for a terminal, parsed by cmark-gfm (with its table, strikethrough
/// and autolink extensions). Escape sequences are neutralised before parsing, so a reply
/// cannot inject any through markdown; the only escapes in the output are the renderer's own
/// styles, and none at all without `styled`.
public struct MarkdownRenderer: Sendable {
    public let styled: Bool

    public init(styled: Bool) { self.styled = styled }

    /// cmark-gfm keeps process-wide tables (its extension registry and the inline parser's
    /// special characters) that parsers change as they attach extensions, so two parses at
    /// once can corrupt each other. Every use of the library goes through this lock.
    private static let libraryLock = Mutex<Void>(())

    /// The rendered top-level blocks of `markdown`, in order.
    public func blocks(_ markdown: String) -> [String] { startedBlocks(markdown).map(\.text) }

    /// Each rendered top-level block with the line (from 1) of `markdown` it starts on.
    func startedBlocks(_ markdown: String) -> [(text: String, line: Int)] {
        let safe = EscapeNeutralizer.neutralize(markdown)
        return Self.libraryLock.withLock { _ in parsedBlocks(safe) }
    }

    private func parsedBlocks(_ safe: String) -> [(text: String, line: Int)] {
        cmark_gfm_core_extensions_ensure_registered()
        guard let parser = cmark_parser_new(CMARK_OPT_DEFAULT) else { return [(safe, 1)] }
        defer { cmark_parser_free(parser) }
        for name in ["table", "strikethrough", "autolink"] {
            if let extensionSyntax = cmark_find_syntax_extension(name) { cmark_parser_attach_syntax_extension(parser, extensionSyntax) }
        }
        safe.withCString { cmark_parser_feed(parser, $0, safe.utf8.count) }
        guard let document = cmark_parser_finish(parser) else { return [(safe, 1)] }
        defer { cmark_node_free(document) }
        var rendered: [(text: String, line: Int)] = []
        var node = cmark_node_first_child(document)
        while let block = node {
            rendered.append((self.block(block, indent: ""), Int(cmark_node_get_start_line(block))))
            node = cmark_node_next(block)
        }
        return rendered
    }

    public func render(_ markdown: String) -> String { blocks(markdown).joined(separator: "\n") }

    // MARK: Blocks

    private func block(_ node: OpaquePointer, indent: String) -> String {
        switch type(node) {
        case "paragraph":
            return prefixLines(inlines(node), first: indent, rest: indent)
        case "heading":
            let level = Int(cmark_node_get_heading_level(node))
            let text = inlines(node)
            return indent + (level == 1 ? style("1;4", text) : style("1", (level > 2 ? "" : "") + text)) + "\n"
        case "block_quote":
            let inner = children(node).map { block($0, indent: "") }.joined(separator: "\n")
            return prefixLines(inner, first: indent + style("2", "│ "), rest: indent + style("2", "│ "))
        case "list":
            let ordered = cmark_node_get_list_type(node) == CMARK_ORDERED_LIST
            var number = Int(cmark_node_get_list_start(node))
            var text = ""
            for item in children(node) {
                let marker = ordered ? "\(number). " : "• "
                number += 1
                let body = children(item).map { block($0, indent: "") }.joined()
                text += prefixLines(body, first: indent + style("1", marker), rest: indent + String(repeating: " ", count: marker.count))
            }
            return text
        case "code_block":
            let language = literal(cmark_node_get_fence_info(node)).split(separator: " ").first.map(String.init) ?? ""
            var code = literal(cmark_node_get_literal(node))
            if code.hasSuffix("\n") { code.removeLast() }
            let header = indent + style("2", "┌─" + (language.isEmpty ? "" : " \(language) ") + "─")
            let lines = code.split(separator: "\n", omittingEmptySubsequences: false).map { indent + style("2", "│ ") + style("36", String($0)) }
            return ([header] + lines + [indent + style("2", "└─")]).joined(separator: "\n") + "\n"
        case "thematic_break":
            return indent + style("2", "────────") + "\n"
        case "html_block":
            return prefixLines(literal(cmark_node_get_literal(node)), first: indent, rest: indent)
        case "table":
            return table(node, indent: indent)
        default:
            return prefixLines(inlines(node), first: indent, rest: indent)
        }
    }

    /// Columns aligned by display width, so Chinese and emoji line up.
    private func table(_ node: OpaquePointer, indent: String) -> String {
        let rows = children(node).map { row in children(row).map { inlines($0) } }
        guard let columns = rows.map(\.count).max(), columns > 0 else { return "" }
        var widths = [Int](repeating: 0, count: columns)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], DisplayWidth.of(plain(cell))) } }
        var lines: [String] = []
        for (number, row) in rows.enumerated() {
            let cells = (0..<columns).map { index -> String in
                let cell = index < row.count ? row[index] : ""
                return cell + String(repeating: " ", count: widths[index] - DisplayWidth.of(plain(cell)))
            }
            lines.append(indent + (number == 0 ? cells.map { style("1", $0) } : cells).joined(separator: style("2", " │ ")))
            if number == 0 { lines.append(indent + style("2", widths.map { String(repeating: "─", count: $0) }.joined(separator: "─┼─"))) }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    // MARK: Inlines

    private func inlines(_ node: OpaquePointer) -> String {
        children(node).map(inline).joined()
    }

    private func inline(_ node: OpaquePointer) -> String {
        switch type(node) {
        case "text", "html_inline": return literal(cmark_node_get_literal(node))
        case "softbreak": return " "
        case "linebreak": return "\n"
        case "code": return style("36", literal(cmark_node_get_literal(node)))
        case "emph": return style("3", inlines(node))
        case "strong": return style("1", inlines(node))
        case "strikethrough": return style("9", inlines(node))
        case "link":
            let text = inlines(node)
            let url = literal(cmark_node_get_url(node))
            return plain(text) == url || url.isEmpty ? style("4", text) : style("4", text) + " (" + url + ")"
        case "image":
            return "[image: " + inlines(node) + "] (" + literal(cmark_node_get_url(node)) + ")"
        default:
            return inlines(node)
        }
    }

    // MARK: Helpers

    private func type(_ node: OpaquePointer) -> String { literal(cmark_node_get_type_string(node)) }

    private func children(_ node: OpaquePointer) -> [OpaquePointer] {
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
    private func literal(_ text: UnsafePointer<CChar>?) -> String {
        text.map { EscapeNeutralizer.neutralize(String(cString: $0)) } ?? ""
    }

    private func style(_ code: String, _ text: String) -> String {
        styled && !text.isEmpty ? "\u{1B}[\(code)m" + text + "\u{1B}[0m" : text
    }

    /// `text` without this renderer's own styles, for measuring.
    func plain(_ text: String) -> String {
        guard styled else { return text }
        var result = ""
        var skipping = false
        for scalar in text.unicodeScalars {
            if scalar == "\u{1B}" { skipping = true; continue }
            if skipping { if scalar == "m" { skipping = false }; continue }
            result.unicodeScalars.append(scalar)
        }
        return result
    }

    private func prefixLines(_ text: String, first: String, rest: String) -> String {
        let body = text.hasSuffix("\n") ? String(text.dropLast()) : text
        return body.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            .map { ($0.offset == 0 ? first : rest) + $0.element }.joined(separator: "\n") + "\n"
    }
}

/// Markdown rendered while it streams in, block by block: a block is printed once the next
/// one has begun (so it cannot change any more); nothing printed is redrawn. `finish` prints
/// what is left, an unterminated code fence included.
///
/// Only the text of the block still open is kept and parsed again, and only when a whole
/// line arrived, so a reply of many small pieces costs little more than one parse of it (a
/// flood of 20,000 events once took minutes).
public final class MarkdownStream {
    private let renderer: MarkdownRenderer
    /// The source of the blocks not printed yet.
    private var source = ""
    private var printedAny = false
    /// The size of `source` at the last parse: a huge open block is parsed again only once
    /// it has grown by a quarter, so even one block of megabytes costs O(n log n).
    private var parsedCount = 0

    public init(renderer: MarkdownRenderer) { self.renderer = renderer }

    /// The blocks that became complete with `text`.
    public func feed(_ text: String) -> String {
        source += text
        // Only whole lines are parsed: half a line can look like the start of another block
        // (a table row cut after its first `|` reads as a paragraph), so a block is taken as
        // complete only once a whole line of the next one has arrived.
        guard text.contains("\n"), let lastNewline = source.lastIndex(of: "\n") else { return "" }
        let size = source.utf8.count
        guard size < 64 << 10 || size - parsedCount >= size / 4 else { return "" }
        parsedCount = size
        let blocks = renderer.startedBlocks(String(source[...lastNewline]))
        guard blocks.count > 1, let open = blocks.last else { return "" }
        // Printed blocks never change again: keep the source of the open one only.
        source = source.split(separator: "\n", omittingEmptySubsequences: false).dropFirst(open.line - 1).joined(separator: "\n")
        parsedCount = source.utf8.count
        return emit(blocks.dropLast().map(\.text))
    }

    public func finish() -> String {
        let blocks = source.isEmpty ? [] : renderer.blocks(source)
        source = ""
        return emit(blocks)
    }

    private func emit(_ blocks: [String]) -> String {
        guard !blocks.isEmpty else { return "" }
        defer { printedAny = true }
        return (printedAny ? "\n" : "") + blocks.joined(separator: "\n")
    }
}
