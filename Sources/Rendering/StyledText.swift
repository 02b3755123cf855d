import CSystemShims

/// How a piece of text is drawn: the few SGR attributes and colours the renderers use.
public struct TextStyle: Hashable, Sendable {
    public var bold = false
    public var dim = false
    public var italic = false
    public var underline = false
    public var strike = false
    /// An SGR foreground colour (36 cyan for code, 34 blue, 90 gray), or the terminal's own.
    public var color: Int?

    public init(bold: Bool = false, dim: Bool = false, italic: Bool = false, underline: Bool = false, strike: Bool = false, color: Int? = nil) {
        self.bold = bold
        self.dim = dim
        self.italic = italic
        self.underline = underline
        self.strike = strike
        self.color = color
    }

    public static let plain = TextStyle()
    public static let code = TextStyle(color: 36)

    /// This style inside `outer`: attributes add up, the inner colour wins.
    func within(_ outer: TextStyle) -> TextStyle {
        TextStyle(bold: bold || outer.bold, dim: dim || outer.dim, italic: italic || outer.italic,
                  underline: underline || outer.underline, strike: strike || outer.strike, color: color ?? outer.color)
    }

    var isPlain: Bool { self == .plain }

    /// `ESC [ … m` selecting this style from the default, digits and semicolons only.
    var sequence: String {
        var codes: [String] = []
        if bold { codes.append("1") }
        if dim { codes.append("2") }
        if italic { codes.append("3") }
        if underline { codes.append("4") }
        if strike { codes.append("9") }
        if let color { codes.append(String(color)) }
        return "\u{1B}[" + codes.joined(separator: ";") + "m"
    }
}

/// A stretch of text in one style. `kind` tells the line breaker what it must not cut.
public struct StyledRun: Equatable, Sendable {
    public enum Kind: Sendable {
        /// Prose: broken at spaces, and between wide characters.
        case text
        /// Inline code: kept on one line when it fits, else broken only at its spaces.
        case code
        /// A URL: never broken; one wider than the line overflows it (or is clipped in a bubble).
        case url
    }

    public var text: String
    public var style: TextStyle
    public var kind: Kind

    public init(_ text: String, style: TextStyle = .plain, kind: Kind = .text) {
        self.text = text
        self.style = style
        self.kind = kind
    }
}

/// Where a line begins in its block: the unit it comes from (a wrapped paragraph or a line that
/// is never wrapped, numbered in layout order) and the character of that unit it starts with.
/// A place in a block has the same position at every width, so a layout can resume at a line
/// printed at another width, and lay out only what follows it.
struct LinePosition: Comparable, Sendable {
    var unit = 0
    var offset = 0

    static func < (left: LinePosition, right: LinePosition) -> Bool {
        (left.unit, left.offset) < (right.unit, right.offset)
    }
}

/// One line on the terminal: styled runs and the columns they take. Lines never hold a
/// newline, a tab or an escape of their own; `encoded` adds the styles' SGR sequences.
public struct StyledLine: Equatable, Sendable {
    public private(set) var runs: [StyledRun] = []
    public private(set) var width = 0
    /// Where the line begins in its block's layout (not part of what it looks like).
    var position = LinePosition()

    public static func == (left: StyledLine, right: StyledLine) -> Bool {
        left.width == right.width && left.runs == right.runs
    }

    public init() {}

    public init(_ text: String, style: TextStyle = .plain) {
        append(text, style: style)
    }

    public static let empty = StyledLine()

    public mutating func append(_ text: String, style: TextStyle = .plain, kind: StyledRun.Kind = .text) {
        append(text, style: style, kind: kind, width: DisplayWidth.of(text))
    }

    /// Appends text whose width the caller measured already.
    mutating func append(_ text: String, style: TextStyle, kind: StyledRun.Kind, width textWidth: Int) {
        guard !text.isEmpty else { return }
        width += textWidth
        if let last = runs.indices.last, runs[last].style == style, runs[last].kind == kind {
            runs[last].text += text
        } else {
            runs.append(StyledRun(text, style: style, kind: kind))
        }
    }

    public mutating func append(_ line: StyledLine) {
        for run in line.runs { append(run.text, style: run.style, kind: run.kind) }
    }

    public static func + (left: StyledLine, right: StyledLine) -> StyledLine {
        var joined = left
        joined.append(right)
        return joined
    }

    /// `margin` (an indent, a bullet, a quote bar) before this line, which keeps its position.
    func after(_ margin: StyledLine) -> StyledLine {
        var joined = margin + self
        joined.position = position
        return joined
    }

    public var plainText: String { runs.map(\.text).joined() }

    /// The line with every run dimmed as well (thought summaries), in the same place.
    public var dimmed: StyledLine {
        var line = StyledLine()
        for run in runs { line.append(run.text, style: TextStyle(dim: true).within(run.style), kind: run.kind) }
        line.position = position
        return line
    }

    /// The line for a terminal: each styled run in its SGR sequence and a reset, so no style
    /// leaks past the run (nor into the erase of a redraw). Without `styled`, the bare text.
    public func encoded(styled: Bool) -> String {
        guard styled else { return plainText }
        var text = ""
        for run in runs {
            if run.style.isPlain { text += run.text } else { text += run.style.sequence + run.text + "\u{1B}[0m" }
        }
        return text
    }

    /// The line cut to `columns`, ending in `marker` when anything was cut (never wider).
    public func clipped(to columns: Int, marker: StyledRun) -> StyledLine {
        guard width > columns else { return self }
        let markerWidth = DisplayWidth.of(marker.text)
        let room = max(0, columns - markerWidth)
        var clipped = StyledLine()
        outer: for run in runs {
            var piece = ""
            var pieceWidth = 0
            for character in run.text {
                let characterWidth = DisplayWidth.of(character)
                if clipped.width + pieceWidth + characterWidth > room {
                    clipped.append(piece, style: run.style, kind: run.kind)
                    break outer
                }
                piece.append(character)
                pieceWidth += characterWidth
            }
            clipped.append(piece, style: run.style, kind: run.kind)
        }
        // A wide character that did not fit leaves a column: filled, so the marker sits at the edge.
        clipped.append(String(repeating: " ", count: max(0, room - clipped.width)))
        if markerWidth <= columns { clipped.append(marker.text, style: marker.style, kind: marker.kind) }
        return clipped
    }

    /// The line with spaces added up to `columns`.
    public func padded(to columns: Int, style: TextStyle = .plain) -> StyledLine {
        var line = self
        line.append(String(repeating: " ", count: max(0, columns - width)), style: style)
        return line
    }

    /// Every run restyled as if inside `outer`.
    func within(_ outer: TextStyle) -> StyledLine {
        var line = StyledLine()
        for run in runs { line.append(run.text, style: run.style.within(outer), kind: run.kind) }
        return line
    }
}

/// Display width in terminal columns, by wcwidth: a Chinese character or an emoji takes two.
public enum DisplayWidth {
    /// A width for "no limit": text laid out for a pipe, which the reader's terminal wraps.
    public static let unlimited = 1 << 30

    public static func of(_ text: Substring) -> Int { text.unicodeScalars.reduce(0) { $0 + Int(gv_display_width($1.value)) } }
    public static func of(_ text: String) -> Int { of(text[...]) }
    public static func of(_ character: Character) -> Int {
        // Most text is ASCII: no call into the C library for it.
        if let ascii = character.asciiValue { return ascii >= 0x20 && ascii < 0x7F ? 1 : 0 }
        return character.unicodeScalars.reduce(0) { $0 + Int(gv_display_width($1.value)) }
    }

    /// Breaks plain `text` into lines of at most `width` columns, keeping its line breaks:
    /// at spaces when it can, between wide characters, inside a word only when the word alone
    /// is wider (URLs excepted: they are never cut).
    public static func wrap(_ text: String, width: Int) -> [String] {
        LineBreaker.wrap([StyledRun(text)], firstWidth: width, width: width).map(\.plainText)
    }

    /// `text` wrapped to `width` columns as `wrap` does, each line after a line's first indented
    /// by `indent` spaces (a hanging indent under a label or a list marker); nil leaves it as it is.
    public static func wrapped(_ text: String, width: Int?, indent: Int = 0) -> String {
        guard let width, width > indent + 10 else { return text }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let wrapped = LineBreaker.wrap([StyledRun(String(line))], firstWidth: width, width: width - indent).map(\.plainText)
            return wrapped.enumerated().map { $0.offset == 0 ? $0.element : String(repeating: " ", count: indent) + $0.element }.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// The rows a line of `columns` cells starting at column `start` takes on a terminal
    /// `width` columns wide that wraps it: a wide character that does not fit at the end of a
    /// row goes to the next one.
    static func rows(of line: StyledLine, startingAt start: Int, width: Int) -> Int {
        guard width > 0 else { return 1 }
        if line.width + start <= width { return 1 }
        var rows = 1
        var column = start
        for run in line.runs {
            for character in run.text {
                let cells = of(character)
                if column + cells > width {
                    rows += 1
                    column = 0
                }
                column += cells
            }
        }
        return rows
    }
}
