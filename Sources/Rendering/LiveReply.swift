import SystemIO
import TerminalIO

/// Where the blocks of a streaming reply end: the blocks that can no longer change, and the
/// source of those that still can (a partial last line included).
protocol ReplyBlockSource {
    /// Appends `text` and returns the blocks it made final.
    mutating func append(_ text: String) -> [MarkdownBlock]
    /// The blocks not final yet, as they read now.
    func openBlocks() -> [MarkdownBlock]
    /// Everything not returned yet, made final: the reply has ended.
    mutating func finish() -> [MarkdownBlock]
    /// Whether a blank line stands between two blocks.
    var blankLineBetweenBlocks: Bool { get }
}

/// Markdown arriving in pieces, split into top-level blocks. A block is final once a whole
/// line of the next one has arrived: half a line can look like the start of another block
/// (a table row cut after its first `|` reads as a paragraph).
///
/// Only the source of the blocks still open is kept and parsed again, and only when a whole
/// line arrived, so a reply of many small pieces costs little more than one parse of it (a
/// flood of 20,000 events once took minutes).
public struct MarkdownBlockSplitter: ReplyBlockSource {
    let renderer: MarkdownRenderer
    /// The source of the blocks not final yet.
    public private(set) var openSource = ""
    /// The size of `openSource` at the last parse: a huge open block is parsed again only once
    /// it has grown by a quarter, so even one block of megabytes costs O(n log n).
    private var parsedCount = 0
    /// The code blocks among the final blocks, so the open ones go on counting after them.
    private var finalCodeBlocks = 0

    public init(renderer: MarkdownRenderer) { self.renderer = renderer }

    var blankLineBetweenBlocks: Bool { true }

    public mutating func append(_ text: String) -> [MarkdownBlock] {
        openSource += text
        // Lines end at LF, CRLF included, counted by scalars as cmark counts them: as Characters
        // a CRLF is one, which is not "\n", and the text after a CRLF line was once dropped.
        guard text.utf8.contains(UInt8(ascii: "\n")), let lastNewline = openSource.unicodeScalars.lastIndex(of: "\n") else { return [] }
        let size = openSource.utf8.count
        guard size < 64 << 10 || size - parsedCount >= size / 4 else { return [] }
        parsedCount = size
        let blocks = renderer.parse(String(openSource.unicodeScalars[...lastNewline]), firstCode: finalCodeBlocks + 1)
        guard blocks.count > 1, let open = blocks.last else { return [] }
        // Final blocks never change again: keep the source of the open one only.
        let lines = openSource.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false)
        openSource = lines.dropFirst(open.line - 1).map(String.init).joined(separator: "\n")
        parsedCount = openSource.utf8.count
        let final = blocks.dropLast().map(\.block)
        finalCodeBlocks += final.reduce(0) { $0 + $1.codeBlockCount }
        return final
    }

    /// A joiner or CR at the very end is left out until what follows it came: alone, it would show as an escape.
    public func openBlocks() -> [MarkdownBlock] {
        let source = openSource.withoutPendingEnd
        return source.isEmpty ? [] : renderer.parse(source, firstCode: finalCodeBlocks + 1).map(\.block)
    }

    public mutating func finish() -> [MarkdownBlock] {
        defer { openSource = "" }
        return openSource.isEmpty ? [] : renderer.parse(openSource, firstCode: finalCodeBlocks + 1).map(\.block)
    }
}

/// Text shown as it came (`chat --raw --bubbles`): each line is final once it ends.
struct PlainTextSource: ReplyBlockSource {
    private var openLine = ""

    var blankLineBetweenBlocks: Bool { false }

    mutating func append(_ text: String) -> [MarkdownBlock] {
        openLine += text
        guard text.utf8.contains(UInt8(ascii: "\n")) else { return [] }
        // Split by scalars: as Characters a CRLF is one, which is not "\n".
        var lines = openLine.unicodeScalars.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        openLine = lines.removeLast()
        return lines.map(Self.block)
    }

    func openBlocks() -> [MarkdownBlock] {
        let line = openLine.withoutPendingEnd
        return line.isEmpty ? [] : [Self.block(line)]
    }

    mutating func finish() -> [MarkdownBlock] {
        defer { openLine = "" }
        return openLine.isEmpty ? [] : [Self.block(openLine)]
    }

    /// Neutralised as a whole line, so a CRLF split between two pieces is still one line end.
    private static func block(_ line: String) -> MarkdownBlock {
        .paragraph([StyledRun(EscapeNeutralizer.neutralize(line.hasSuffix("\r") ? String(line.dropLast()) : line))])
    }
}

/// A reply drawn on a terminal while it streams. Final blocks are printed once and never
/// touched again; the blocks still open are drawn below them and redrawn in place as they
/// grow: the cursor goes up over their lines only, erases from there down, and draws them
/// anew. Nothing above is ever moved over, erased or repeated, and the screen is never cleared.
///
/// * Each redraw is one write inside synchronized output (DEC mode 2026), so terminals that
///   know it show it whole; others ignore the mode. Only the lines from the first one that
///   changed are drawn again.
/// * The open lines are drawn with autowrap off (DECAWM), so each takes exactly one row and
///   the count to go back up is exact, whatever width the terminal gives a character; they
///   are printed for good with autowrap on, where a line too wide (a long URL or code line)
///   wraps whole.
/// * Open lines that would take more than half the window are printed for good, from the top:
///   only the tail is redrawn, and it can still be reached after the window is narrowed to
///   half its width (when every line wraps in two).
/// * The width and height are read for every redraw: after a resize the open lines are laid
///   out anew at the new width, resuming after the last line printed for good (lines know
///   their position in their block), so nothing is repeated or lost. The rows the old lines
///   took are counted as the terminal shows them now (`reflows`: wrapped again to the new
///   width, as tmux, VTE, kitty and most terminals do; else cut, as xterm does). A frame
///   already on its way when the window changes size is drawn by the terminal at the new
///   size though it was laid out for the old one; no program can tell this afterwards, so
///   such a frame's rows can be miscounted once.
/// * Redraws are spaced out by what they cost (at least 1/30 s apart, and four times the last
///   one's time), so a flood of tiny pieces draws a few frames, not one per piece.
///
/// The output contains no escape sequences but the renderer's SGR styles, CR, and these:
/// `CSI n A`, `CSI n C`, `CSI J`, `CSI ?7l`/`h` and `CSI ?2026h`/`l`.
public final class LiveReply {
    public enum Frame: Sendable {
        /// Lines from the left edge; `label` (chat's `gemini ›`; none for ask) begins the first.
        case labelled(StyledLine)
        /// The model's bubble, grown in place.
        case bubble(color: Bool)
    }

    private var source: any ReplyBlockSource
    private let frame: Frame
    private let styled: Bool
    private let size: () -> TerminalSize
    private let reflows: Bool
    private let synchronized: Bool
    private let clock: () -> Double
    /// Every line dimmed (thought summaries drawn as they stream).
    private let dimmed: Bool

    /// Final blocks not printed for good yet (a bubble fitting its reply keeps them open).
    private var finalBlocks: [MarkdownBlock] = []
    /// Blocks printed for good so far, for the blank line between blocks.
    private var printedBlocks = 0
    /// Where the first line not printed for good begins, when lines of the open blocks were
    /// (they were taller than the window): the block (counted from the first not printed)
    /// and the position in it. Laid out again, at any width, the blocks resume there.
    private var resume: (block: Int, position: LinePosition)?
    /// The open lines on the screen, drawn at `drawnWidth`, the first from column `regionColumn`.
    private var drawn: [StyledLine] = []
    private var drawnWidth = 0
    private var regionColumn = 0
    private var started = false
    private var ended = false
    private var bubbleTopPrinted = false
    /// The bubble's box, fixed once its top is printed for good; until then it fits the widest line.
    private var bubbleBox: Int?
    private var dirty = false
    private var nextDrawTime = 0.0
    private var lastSize: TerminalSize?

    static let minimumInterval = 1.0 / 30

    /// `size` is read for every redraw; `styled` adds the SGR styles (off for NO_COLOR).
    public init(markdown renderer: MarkdownRenderer?, frame: Frame, size: @escaping () -> TerminalSize, reflows: Bool,
                synchronized: Bool = true, dimmed: Bool = false, clock: @escaping () -> Double = Clock.monotonicSeconds) {
        self.dimmed = dimmed
        self.source = renderer.map { MarkdownBlockSplitter(renderer: $0) as any ReplyBlockSource } ?? PlainTextSource()
        var frameColor = true
        if case .bubble(let color) = frame { frameColor = color }
        // Plain text (no renderer) takes its colours from the frame: none under NO_COLOR.
        self.styled = renderer?.styled ?? frameColor
        self.frame = frame
        self.size = size
        self.reflows = reflows
        self.synchronized = synchronized
        self.clock = clock
    }

    /// What to write for `text`, just arrived: a redraw, or nothing until the next is due.
    public func feed(_ text: String) -> String {
        guard !ended else { return "" }
        finalBlocks += source.append(text)
        dirty = true
        return drawIfDue()
    }

    /// What to write now that time passed: a redraw put off, or one for a new window size.
    public func tick() -> String {
        guard !ended else { return "" }
        if started, size() != lastSize { dirty = true }
        return drawIfDue()
    }

    /// The rest of the reply, printed for good; the cursor ends at the start of a new line.
    public func finish() -> String {
        guard !ended else { return "" }
        finalBlocks += source.finish()
        let text = started || !finalBlocks.isEmpty ? redraw(final: true) : ""
        ended = true
        return text
    }

    private func drawIfDue() -> String {
        let now = clock()
        guard dirty, now >= nextDrawTime else { return "" }
        let text = redraw(final: false)
        let after = clock()
        nextDrawTime = after + max(Self.minimumInterval, (after - now) * 4)
        return text
    }

    // MARK: Drawing

    private func redraw(final: Bool) -> String {
        dirty = false
        let window = size()
        lastSize = window
        let columns = max(1, window.columns)
        var contentWidth = columns
        var bubble: (layout: BubbleLayout, box: Int)?
        if case .bubble(let color) = frame {
            let layout = BubbleLayout(width: columns, color: color)
            bubble = (layout, layout.maxBoxWidth(.model))
            contentWidth = layout.contentWidth(.model)
        }

        // The lines of the blocks that became final, then of those still open, from where the
        // last lines printed for good ended; each line knows its block and position.
        let laid = layOut(width: contentWidth, final: final)
        var lines = laid.lines
        if lines.isEmpty && !started { return "" }

        var printCount = final ? lines.count : laid.finalCount
        // A bubble whose top is not printed yet keeps all its lines open while they fit the
        // room, so that its box can still fit the widest of them.
        let fitting = bubble != nil && bubbleBox == nil
        if fitting && !final { printCount = 0 }
        // The open part takes at most half the window (the bubble's frame lines included), so that it
        // can still be reached after the window is narrowed to half its width and it wraps again.
        let room = max(1, (window.rows - 1) / 2 - (bubble == nil ? 0 : fitting ? 2 : 1))
        if lines.count - printCount > room { printCount = lines.count - room }
        // Blocks printed whole are done; the next layout starts at the first line left open.
        keepOpen(from: printCount, of: lines, blocks: laid.blocks, finalBlockCount: laid.finalBlockCount)

        // In a bubble each line gets its frame; the top is printed for good with the first line.
        if let bubble { putInBubble(&lines, printCount: &printCount, bubble, final: final) }

        var text = ""
        if !started {
            started = true
            if case .labelled(let label) = frame, label.width > 0 {
                text += label.encoded(styled: styled)
                regionColumn = label.width
            }
        }
        // Lines on the screen as they should be stay; one printed for good is drawn again only
        // if it is too wide, so that it wraps whole instead of being cut.
        let same = unchangedLines(lines, printCount: printCount, columns: columns)
        if same == drawn.count && same == lines.count && printCount < lines.count {
            // Nothing to draw; lines that turned final are left where they are.
            if printCount > 0 { regionColumn = 0 }
            drawn = Array(lines[printCount...])
            return text
        }

        text += draw(lines, from: same, printCount: printCount, columns: columns, rows: window.rows)
        return text
    }

    /// The lines of the blocks that became final, then (unless `final`) of those still open,
    /// from where the last lines printed for good ended, with the block of each line.
    private func layOut(width contentWidth: Int, final: Bool) -> (lines: [StyledLine], blocks: [Int], finalBlockCount: Int, finalCount: Int) {
        var lines: [StyledLine] = []
        var blocks: [Int] = []
        var blocksBefore = printedBlocks
        var blockIndex = 0
        func add(_ block: MarkdownBlock) {
            defer {
                blocksBefore += 1
                blockIndex += 1
            }
            if let resume, blockIndex < resume.block { return }
            let from = resume?.block == blockIndex ? resume?.position : nil
            if blocksBefore > 0 && source.blankLineBetweenBlocks && from.map({ $0 <= Self.separator }) ?? true {
                var separator = StyledLine.empty
                separator.position = Self.separator
                lines.append(separator)
                blocks.append(blockIndex)
            }
            let first = blocksBefore == 0 ? contentWidth - labelWidth : contentWidth
            let laid = MarkdownRenderer.layout(block, width: contentWidth, firstWidth: first, resume: from.map { max($0, LinePosition()) })
            lines += laid
            blocks += Array(repeating: blockIndex, count: laid.count)
        }
        let finalBlockCount = finalBlocks.count
        finalBlocks.forEach(add)
        let finalCount = lines.count
        if !final { source.openBlocks().forEach(add) }
        return (lines, blocks, finalBlockCount, finalCount)
    }

    /// Blocks printed whole are dropped; the next layout resumes at the first line left open.
    private func keepOpen(from printCount: Int, of lines: [StyledLine], blocks: [Int], finalBlockCount: Int) {
        if printCount < lines.count {
            let first = blocks[printCount]
            let done = min(first, finalBlockCount)
            finalBlocks.removeFirst(done)
            printedBlocks += done
            resume = (first - done, lines[printCount].position)
        } else {
            finalBlocks = []
            printedBlocks += finalBlockCount
            resume = nil
        }
    }

    /// In a bubble each line gets its frame; the top is printed for good with the first line.
    private func putInBubble(_ lines: inout [StyledLine], printCount: inout Int, _ bubble: (layout: BubbleLayout, box: Int), final: Bool) {
        let (layout, widest) = bubble
        let box: Int
        if let fixed = bubbleBox {
            box = fixed
        } else {
            // Streaming on past the room, later lines may be wider: the box takes the width then.
            let fitted = min(widest, max(Self.smallestBox, (lines.map(\.width).max() ?? 0) + 4))
            box = printCount > 0 && !final ? widest : fitted
            if printCount > 0 { bubbleBox = box }
        }
        lines = lines.map { layout.middle($0, .model, box: box) }
        if !bubbleTopPrinted {
            lines.insert(layout.top(.model, box: box), at: 0)
            if printCount > 0 {
                printCount += 1
                bubbleTopPrinted = true
            }
        }
        lines.append(layout.bottom(.model, box: box))
        if final { printCount = lines.count }
    }

    /// How many lines on the screen are as they should be; one printed for good counts only
    /// if it fits, so that a too wide one wraps whole instead of being cut.
    private func unchangedLines(_ lines: [StyledLine], printCount: Int, columns: Int) -> Int {
        var same = 0
        if drawnWidth == columns {
            while same < min(drawn.count, lines.count), drawn[same] == lines[same],
                  same >= printCount || lines[same].width + (same == 0 ? regionColumn : 0) <= columns {
                same += 1
            }
        }
        return same
    }

    /// The lines from `same` on, drawn over what is there; those from `printCount` on unwrapped.
    private func draw(_ lines: [StyledLine], from same: Int, printCount: Int, columns: Int, rows: Int) -> String {
        var text = ""
        text += synchronized ? "\u{1B}[?2026h" : ""
        text += cursorBack(to: same, columns: columns, rows: rows)
        var wrapOff = false
        for index in same..<lines.count {
            // The cursor is at the end of the line before, or (after going back) where this one starts.
            if index > same || same == drawn.count && same > 0 { text += "\n" }
            if index >= printCount && !wrapOff {
                text += "\u{1B}[?7l"
                wrapOff = true
            }
            text += (dimmed ? lines[index].dimmed : lines[index]).encoded(styled: styled)
        }
        if wrapOff { text += "\u{1B}[?7h" }
        if printCount > 0 { regionColumn = 0 }
        if printCount == lines.count && (!lines.isEmpty || regionColumn > 0) {
            // All printed for good: the next output starts on a line of its own.
            text += "\n"
            regionColumn = 0
        }
        drawn = Array(lines[printCount...])
        drawnWidth = columns
        text += synchronized ? "\u{1B}[?2026l" : ""
        return text
    }

    /// The narrowest bubble: a frame around a few columns.
    private static let smallestBox = 8

    /// The position of the blank line before a block: ahead of everything in it.
    private static let separator = LinePosition(unit: -1, offset: 0)

    /// The label's columns, taken from the first block's first line.
    private var labelWidth: Int {
        if case .labelled(let label) = frame { return label.width }
        return 0
    }

    /// From the end of the last open line to the start of open line `line`, erasing from there down.
    private func cursorBack(to line: Int, columns: Int, rows: Int) -> String {
        guard !drawn.isEmpty else { return "" }
        if line == drawn.count { return "" }
        var up = 0
        for index in line..<drawn.count {
            up += rowsTaken(by: index, columns: columns)
        }
        up = min(up - 1, max(0, rows - 1))
        var text = "\r"
        if up > 0 { text += "\u{1B}[\(up)A" }
        if line == 0 && regionColumn > 0 { text += "\u{1B}[\(regionColumn)C" }
        return text + "\u{1B}[J"
    }

    /// The rows open line `index` takes now: one, as drawn without autowrap; after a resize,
    /// what the terminal made of it.
    private func rowsTaken(by index: Int, columns: Int) -> Int {
        guard drawnWidth != columns, reflows else { return 1 }
        let start = index == 0 ? regionColumn : 0
        let shown = drawn[index].clipped(to: max(0, drawnWidth - start), marker: StyledRun(""))
        return DisplayWidth.rows(of: shown, startingAt: start, width: columns)
    }
}
