/// Makes untrusted text (a model's reply) safe to write to a terminal.
///
/// ESC, the C1 controls (U+0080–U+009F, which some terminals treat as CSI or OSC), and the other
/// C0 controls except tab and newline are replaced by visible caret notation (`^[`), so a reply
/// cannot recolour the screen, move the cursor, set the title or write the clipboard (OSC 52).
/// Carriage returns are shown unless they end a line, so text cannot overwrite itself, and
/// bidirectional overrides (U+202A–U+202E, U+2066–U+2069) are shown as escapes.
public enum EscapeNeutralizer {
    public static func neutralize(_ text: String) -> String {
        var output = String.UnicodeScalarView()
        let scalars = Array(text.unicodeScalars)
        for (index, scalar) in scalars.enumerated() {
            switch scalar.value {
            case 0x09, 0x0A:
                output.append(scalar)
            case 0x0D:
                if index + 1 < scalars.count, scalars[index + 1] == "\n" { continue }
                output.append(contentsOf: "^M".unicodeScalars)
            case 0x00...0x1F:
                output.append("^")
                output.append(Unicode.Scalar(UInt8(scalar.value + 0x40)))
            case 0x7F:
                output.append(contentsOf: "^?".unicodeScalars)
            case 0x80...0x9F, 0x202A...0x202E, 0x2066...0x2069:
                // C1 controls, and bidirectional overrides that can make text read differently than it is.
                output.append(contentsOf: "\\u{\(String(scalar.value, radix: 16))}".unicodeScalars)
            default:
                output.append(scalar)
            }
        }
        return String(output)
    }
}
