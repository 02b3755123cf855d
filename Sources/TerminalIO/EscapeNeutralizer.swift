/// Makes untrusted text (a model's reply) safe to write to a terminal, and makes what it draws
/// the whole text: nothing in it acts, and nothing in it is invisible.
///
/// ESC, the C1 controls (U+0080–U+009F, which some terminals treat as CSI or OSC), and the other
/// C0 controls except tab and newline are replaced by visible caret notation (`^[`), so a reply
/// cannot recolour the screen, move the cursor, set the title or write the clipboard (OSC 52).
/// Carriage returns are shown unless they end a line, so text cannot overwrite itself.
/// Bidirectional controls (U+202A–U+202E, U+2066–U+2069, the marks U+200E, U+200F, U+061C) and
/// characters that draw nothing (zero-width space U+200B, word joiner and invisible operators
/// U+2060–U+2064, U+FEFF, U+180E, Unicode tags U+E0000–U+E007F) are shown as `\u{…}` escapes,
/// so text cannot read differently than it is or carry words the screen never shows. The
/// joiners U+200C and U+200D stay where they join two non-ASCII characters (emoji sequences,
/// scripts that need them), and tags stay inside an emoji flag (after U+1F3F4).
public enum EscapeNeutralizer {
    public static func neutralize(_ text: String) -> String {
        // Most text holds nothing to change: a scan of its bytes spares building it again
        // scalar by scalar (a 1,000-turn `history show` spent a fifth of its time there).
        guard needsChange(text) else { return text }
        var context = Context()
        let scalars = Array(text.unicodeScalars)
        return String(neutralize(scalars, upTo: scalars.count, context: &context))
    }

    /// What a scalar's treatment depends on beyond the text at hand: the scalar before it, and
    /// whether it follows an emoji flag's tags. A stream carries it from one piece to the next.
    struct Context {
        var before: UInt32 = 0
        var inFlagTags = false
    }

    /// The first `end` scalars of `scalars` neutralised; those after `end` are only looked at
    /// (a joiner or CR at `end - 1` needs the one after it).
    static func neutralize(_ scalars: [Unicode.Scalar], upTo end: Int, context: inout Context) -> String.UnicodeScalarView {
        var output = String.UnicodeScalarView()
        for index in 0..<end {
            let scalar = scalars[index]
            let value = scalar.value
            defer { context.before = value }
            if value == 0x1F3F4 { context.inFlagTags = true } else if !(0xE0000...0xE007F).contains(value) { context.inFlagTags = false }
            switch value {
            case 0x09, 0x0A:
                output.append(scalar)
            case 0x0D:
                if index + 1 < scalars.count, scalars[index + 1] == "\n" { continue }
                output.append(contentsOf: "^M".unicodeScalars)
            case 0x00...0x1F:
                output.append("^")
                output.append(Unicode.Scalar(UInt8(value + 0x40)))
            case 0x7F:
                output.append(contentsOf: "^?".unicodeScalars)
            case 0x200C, 0x200D:
                // A joiner between two non-ASCII characters shapes them (👨‍👩‍👧); anywhere else it only hides.
                let after = index + 1 < scalars.count ? scalars[index + 1].value : 0
                if context.before > 0x7F && after > 0x7F { output.append(scalar) } else { output.append(contentsOf: escaped(value)) }
            case 0xE0000...0xE007F where context.inFlagTags:
                output.append(scalar)
            case 0x80...0x9F, 0x202A...0x202E, 0x2066...0x2069, 0x200E, 0x200F, 0x061C,
                 0x200B, 0x2060...0x2064, 0xFEFF, 0x180E, 0xE0000...0xE007F:
                // C1 controls, bidirectional controls, and characters that draw nothing.
                output.append(contentsOf: escaped(value))
            default:
                output.append(scalar)
            }
        }
        return output
    }

    /// Whether any scalar of `text` is one `neutralize` changes or must look around (a C0 or
    /// C1 control, DEL, a joiner, a bidirectional control, one that draws nothing, a tag),
    /// told from its UTF-8 bytes; everything else, ASCII or not, is kept as it is.
    static func needsChange(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            let count = bytes.count
            var index = 0
            while index < count {
                let byte = bytes[index]
                let next = index + 1 < count ? bytes[index + 1] : 0
                let third = index + 2 < count ? bytes[index + 2] : 0
                switch byte {
                case 0x09, 0x0A: break
                case 0x00...0x1F, 0x7F: return true
                case 0xC2: if next <= 0x9F { return true }  // U+0080–U+009F
                case 0xD8: if next == 0x9C { return true }  // U+061C
                case 0xE1: if next == 0xA0 && third == 0x8E { return true }  // U+180E
                case 0xE2:
                    // U+200B–U+200F, U+202A–U+202E; U+2060–U+2064, U+2066–U+2069
                    if next == 0x80 && ((0x8B...0x8F).contains(third) || (0xAA...0xAE).contains(third)) { return true }
                    if next == 0x81 && ((0xA0...0xA4).contains(third) || (0xA6...0xA9).contains(third)) { return true }
                case 0xEF: if next == 0xBB && third == 0xBF { return true }  // U+FEFF
                case 0xF3: if next == 0xA0 { return true }  // the tags, U+E0000–U+E007F
                default: break
                }
                index += 1
            }
            return false
        }
    }

    /// Whether a scalar's treatment depends on the one after it: a stream holds it back.
    public static func needsNext(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value == 0x0D || scalar.value == 0x200C || scalar.value == 0x200D
    }

    private static func escaped(_ value: UInt32) -> String.UnicodeScalarView {
        "\\u{\(String(value, radix: 16))}".unicodeScalars
    }
}

/// Untrusted text arriving in pieces (a streaming reply), neutralised as if it came whole: a
/// joiner or CR at the end of a piece waits for the next one, and the character before a
/// piece's first joiner is remembered, so a split never shows a joiner as `\u{200d}`.
public struct StreamingNeutralizer: Sendable {
    private var context = EscapeNeutralizer.Context()
    /// The end of the last piece, held back until what follows it is known.
    private var held: [Unicode.Scalar] = []

    public init() {}

    /// What of the text so far can be written now.
    public mutating func feed(_ text: String) -> String {
        let scalars = held + Array(text.unicodeScalars)
        let end = scalars.last.map(EscapeNeutralizer.needsNext) == true ? scalars.count - 1 : scalars.count
        held = Array(scalars[end...])
        return String(EscapeNeutralizer.neutralize(scalars, upTo: end, context: &context))
    }

    /// The end of the text: what was held back, with nothing after it.
    public mutating func finish() -> String {
        defer { held = [] }
        return String(EscapeNeutralizer.neutralize(held, upTo: held.count, context: &context))
    }
}

extension String {
    /// The text without a last joiner or CR, whose look depends on what follows: a view of a
    /// stream draws it once the next piece came.
    public var withoutPendingEnd: String {
        guard let last = unicodeScalars.last, EscapeNeutralizer.needsNext(last) else { return self }
        var scalars = unicodeScalars
        scalars.removeLast()
        return String(scalars)
    }
}
