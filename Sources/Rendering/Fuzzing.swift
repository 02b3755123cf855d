import TerminalIO

/// What the fuzzers (Fuzz/) and the corpus replay tests drive through the markdown renderer.
public enum MarkdownFuzzing {
    /// A reply rendered whole, and drawn live as a stream cut where the input says, at a width
    /// and window height the input picks, plain and in a bubble, while the window is resized.
    /// No output may carry an escape sequence other than the renderer's own colours (and, when
    /// drawn live, its few cursor moves and modes); replayed on a screen, a live reply may never
    /// touch what was on the screen before it.
    public static func check(_ bytes: [UInt8]) -> String? {
        guard let cut = bytes.first else { return nil }
        let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
        let whole = MarkdownRenderer(styled: true).render(text)
        if let problem = foreignEscape(in: whole) { return "rendered: " + problem }
        let narrow = MarkdownRenderer(styled: true).render(text, width: 8 + Int(cut % 64))
        if let problem = foreignEscape(in: narrow) { return "rendered narrow: " + problem }
        if MarkdownRenderer(styled: false).render(text).utf8.contains(0x1B) { return "unstyled output holds an escape" }
        for bubble in [false, true] {
            for resizing in [false, true] {
                let (output, size) = liveOutput(text, cut: cut, bubble: bubble, resizing: resizing)
                if let problem = foreignEscape(in: output, redraw: true) { return "drawn live: " + problem }
                // Replayed where the window kept its size, the reply must leave the line above it alone.
                guard !resizing else { continue }
                var screen = ScreenReplay(size: size)
                screen.feed("above the reply\n")
                screen.feed(output)
                if screen.lines.first != "above the reply" { return "drawn live: the line above the reply was changed" }
            }
        }
        return nil
    }

    /// The whole of a live reply's output for `text`, fed in pieces of 1 to 16 characters;
    /// the window shrinks and grows as the pieces go when `resizing`.
    static func liveOutput(_ text: String, cut: UInt8, bubble: Bool, resizing: Bool) -> (String, TerminalSize) {
        let start = TerminalSize(columns: 20 + Int(cut % 100), rows: 3 + Int(cut % 29))
        var size = start
        var now = 0.0
        let live = LiveReply(markdown: MarkdownRenderer(styled: true), frame: bubble ? .bubble(color: true) : .labelled(StyledLine("gemini › ")),
                             size: { size }, reflows: cut % 2 == 0, clock: { now })
        var output = ""
        var piece = ""
        for (offset, character) in text.enumerated() {
            piece.append(character)
            if offset % (Int(cut % 16) + 1) == 0 {
                output += live.feed(piece)
                piece = ""
                now += 0.02
                if resizing && offset % 7 == 0 {
                    size = TerminalSize(columns: 10 + (size.columns * 7 + offset) % 110, rows: 2 + (size.rows + offset) % 40)
                    output += live.tick()
                }
            }
        }
        output += live.feed(piece) + live.finish()
        return (output, start)
    }

    /// What in `output` is not text, a newline, a tab or one of the renderer's colours; with
    /// `redraw`, a carriage return and the live renderer's cursor moves and modes are allowed too.
    public static func foreignEscape(in output: String, redraw: Bool = false) -> String? {
        let bytes = Array(output.utf8)
        var index = 0
        while let escape = bytes[index...].firstIndex(of: 0x1B) {
            var end = escape + 1
            guard end < bytes.count, bytes[end] == UInt8(ascii: "[") else { return "a bare escape at byte \(escape)" }
            end += 1
            let privateMode = redraw && end < bytes.count && bytes[end] == UInt8(ascii: "?")
            if privateMode { end += 1 }
            let parameters = end
            while end < bytes.count, bytes[end] == UInt8(ascii: ";") || (0x30...0x39).contains(bytes[end]) { end += 1 }
            guard end < bytes.count else { return "an unfinished control sequence at byte \(escape)" }
            let final = bytes[end]
            let digits = String(decoding: bytes[parameters..<end], as: UTF8.self)
            let allowed: Bool
            if privateMode {
                allowed = (digits == "7" || digits == "2026") && (final == UInt8(ascii: "h") || final == UInt8(ascii: "l"))
            } else if final == UInt8(ascii: "m") {
                allowed = true
            } else {
                allowed = redraw && !digits.contains(";") && (final == UInt8(ascii: "A") || final == UInt8(ascii: "C") || (final == UInt8(ascii: "J") && digits.isEmpty))
            }
            guard allowed else { return "a control sequence that is not the renderer's own at byte \(escape)" }
            index = end + 1
        }
        for scalar in output.unicodeScalars {
            switch scalar.value {
            case 0x09, 0x0A, 0x1B: continue
            case 0x0D where redraw: continue
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069:
                return "control character U+\(String(scalar.value, radix: 16, uppercase: true))"
            default: continue
            }
        }
        return nil
    }
}

/// A small terminal for checking what the live renderer leaves on a screen: printable text by
/// display width, newline (as a terminal with ONLCR shows it), carriage return, cursor up and
/// right, erase below, autowrap on and off; colours and other modes are ignored. Rows that
/// scroll off the window stay in `lines`, out of the cursor's reach, as in a scrollback.
struct ScreenReplay {
    private(set) var rows: [[Character?]] = [[]]
    private var row = 0
    private var column = 0
    private var pendingWrap = false
    private var autowrap = true
    private(set) var size: TerminalSize
    /// Characters written past the right edge: wrapped (autowrap on) or dropped (off).
    private(set) var overflows = 0

    init(size: TerminalSize) { self.size = size }

    /// Every row, screen and scrollback, as text without trailing spaces.
    var lines: [String] {
        rows.map { cells in
            var text = String(cells.compactMap { $0 })
            while text.last == " " { text.removeLast() }
            return text
        }
    }

    private var windowTop: Int { max(0, rows.count - size.rows) }

    /// A new window size. With `reflow` every row is wrapped again to the new width, as tmux
    /// and most terminals do (the cursor stays with its character); without, rows are cut.
    mutating func resize(to newSize: TerminalSize, reflow: Bool) {
        var newRows: [[Character?]] = []
        var cursor = (row: 0, column: 0)
        for (index, cells) in rows.enumerated() {
            var chunks: [[Character?]] = [[]]
            var cursorChunk = (row: 0, column: column)
            for (offset, cell) in cells.enumerated() {
                let width = cell == nil ? 0 : DisplayWidth.of(cell!)
                if reflow && chunks[chunks.count - 1].count + max(1, width) > newSize.columns && cell != nil {
                    chunks.append([])
                }
                if index == row && offset == column { cursorChunk = (chunks.count - 1, chunks[chunks.count - 1].count) }
                chunks[chunks.count - 1].append(cell)
            }
            if !reflow { chunks = [Array(chunks[0].prefix(newSize.columns))] }
            if index == row {
                if column >= cells.count { cursorChunk = (chunks.count - 1, chunks[chunks.count - 1].count + column - cells.count) }
                cursor = (newRows.count + cursorChunk.row, min(cursorChunk.column, newSize.columns - 1))
            }
            newRows += chunks
        }
        rows = newRows
        row = cursor.row
        column = cursor.column
        pendingWrap = false
        size = newSize
    }

    mutating func feed(_ output: String) {
        var scalars = output.unicodeScalars.makeIterator()
        var pendingCharacter = ""
        func flush() {
            for character in pendingCharacter { put(character) }
            pendingCharacter = ""
        }
        while let scalar = scalars.next() {
            switch scalar {
            case "\u{1B}":
                flush()
                guard scalars.next() == "[" else { continue }
                var parameters = ""
                while let next = scalars.next() {
                    if (0x30...0x3F).contains(next.value) { parameters.unicodeScalars.append(next); continue }
                    control(parameters, next)
                    break
                }
            case "\n":
                flush()
                lineFeed()
                column = 0
            case "\r":
                flush()
                column = 0
                pendingWrap = false
            default:
                pendingCharacter.unicodeScalars.append(scalar)
            }
        }
        flush()
    }

    private mutating func control(_ parameters: String, _ final: Unicode.Scalar) {
        let count = max(1, Int(parameters) ?? 1)
        switch (parameters, final) {
        case ("?7", "h"): autowrap = true
        case ("?7", "l"): autowrap = false
        case (_, "A"): row = max(windowTop, row - count); pendingWrap = false
        case (_, "C"): column = min(size.columns - 1, column + count); pendingWrap = false
        case ("", "J"):
            rows[row].removeSubrange(min(column, rows[row].count)...)
            rows.removeSubrange((row + 1)...)
        default: break
        }
    }

    private mutating func lineFeed() {
        pendingWrap = false
        row += 1
        if row == rows.count { rows.append([]) }
    }

    private mutating func put(_ character: Character) {
        let width = DisplayWidth.of(character)
        if width == 0 { return }
        if pendingWrap || column + width > size.columns {
            overflows += 1
            if autowrap {
                lineFeed()
                column = 0
            } else {
                return
            }
        }
        while rows[row].count < column + width { rows[row].append(" ") }
        rows[row][column] = character
        if width == 2 { rows[row][column + 1] = nil }
        column += width
        if column >= size.columns {
            column = size.columns - 1
            pendingWrap = autowrap
            if !autowrap { column = size.columns }
        }
    }
}
