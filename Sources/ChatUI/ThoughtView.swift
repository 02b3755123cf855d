import CSystemShims
import Rendering
import SystemIO
import TerminalIO

/// Thought summaries as a reader should see them: markdown rendered (no literal `**`) and
/// dimmed under a `thinking:` label. On a terminal they are drawn live and wrapped to the
/// window between words; in a pipe or a log each block is written once it is whole, unwrapped.
public final class ThoughtView {
    private let style: Style
    private let live: LiveReply?
    private var splitter: MarkdownBlockSplitter
    private var blocksWritten = 0
    private var last: Character?
    private var boldOpen = false

    static let labelText = "thinking: "

    /// `fd` is where the thoughts go: its window's width wraps them when it is a terminal.
    init(style: Style, fd: Int32) {
        self.style = style
        let renderer = MarkdownRenderer(styled: style.enabled)
        splitter = MarkdownBlockSplitter(renderer: renderer)
        if Terminal.isTerminal(fd) && Terminal.canRedraw {
            let label = StyledLine("thinking:", style: TextStyle(dim: true)) + StyledLine(" ")
            live = LiveReply(markdown: renderer, frame: .labelled(label), size: { Self.size(of: fd) }, reflows: Terminal.reflowsOnResize, dimmed: true)
        } else {
            live = nil
        }
    }

    /// What to write for a piece of the summaries just arrived.
    func feed(_ text: String) -> String {
        let piece = Self.separated(text, after: last, open: &boldOpen)
        last = text.last ?? last
        if let live { return live.feed(piece) }
        return written(splitter.append(piece))
    }

    /// A redraw put off (live only).
    func tick() -> String { live?.tick() ?? "" }

    /// The rest, ending on a line of its own.
    func finish() -> String {
        if let live { return live.finish() }
        return written(splitter.finish())
    }

    private func written(_ blocks: [MarkdownBlock]) -> String {
        var text = ""
        for block in blocks {
            let lines = MarkdownRenderer.lines(of: [block], width: DisplayWidth.unlimited, firstWidth: DisplayWidth.unlimited)
            text += (blocksWritten == 0 ? style.dim(Self.labelText) : "\n") + Self.encoded(lines, style: style) + "\n"
            blocksWritten += 1
        }
        return text
    }

    /// Summaries shown whole (`/thoughts`, `ask --no-stream`): wrapped to `columns` when given.
    public static func whole(_ text: String, style: Style, columns: Int?) -> String {
        let width = max(20, columns ?? DisplayWidth.unlimited)
        var open = false
        let lines = MarkdownRenderer(styled: style.enabled).lines(separated(text, after: nil, open: &open), width: width,
                                                                    firstWidth: width - labelText.count)
        return style.dim(labelText) + encoded(lines, style: style) + "\n"
    }

    private static func encoded(_ lines: [StyledLine], style: Style) -> String {
        lines.map { $0.dimmed.encoded(styled: style.enabled) }.joined(separator: "\n")
    }

    /// Each summary starts with its `**heading**`; one glued to the end of the last sentence
    /// (`…done.**Next step**`, as the parts come) starts a paragraph of its own. `open` says
    /// whether a `**` before `text` is still open, so only opening marks are looked at.
    static func separated(_ text: String, after previous: Character?, open: inout Bool) -> String {
        var result = ""
        var before = previous
        var rest = Substring(text)
        while let mark = rest.firstRange(of: "**") {
            let head = rest[..<mark.lowerBound]
            result += head
            if !open, let end = head.last ?? before, ".!?:".contains(end) { result += "\n\n" }
            result += "**"
            open.toggle()
            before = "*"
            rest = rest[mark.upperBound...]
        }
        return result + rest
    }

    private static func size(of fd: Int32) -> TerminalSize {
        let columns = Int(gv_terminal_columns(fd)), rows = Int(gv_terminal_rows(fd))
        return columns > 0 ? TerminalSize(columns: columns, rows: rows > 0 ? rows : 24) : TerminalSize.fallback
    }
}
