import CSystemShims

/// Display width in terminal columns, by wcwidth: a Chinese character or an emoji takes two.
public enum DisplayWidth {
    public static func of(_ text: Substring) -> Int { text.unicodeScalars.reduce(0) { $0 + Int(gv_display_width($1.value)) } }
    public static func of(_ text: String) -> Int { of(text[...]) }

    /// Breaks `text` into lines of at most `width` columns: at spaces when it can, inside a
    /// word only when the word alone is wider (as Chinese text, which has no spaces, always is).
    public static func wrap(_ text: String, width: Int) -> [String] {
        var lines: [String] = []
        for paragraph in text.split(separator: "\n", omittingEmptySubsequences: false) {
            var line = ""
            var lineWidth = 0
            for word in paragraph.split(separator: " ", omittingEmptySubsequences: true) {
                let wordWidth = of(word)
                if lineWidth > 0 && lineWidth + 1 + wordWidth <= width {
                    line += " " + word
                    lineWidth += 1 + wordWidth
                    continue
                }
                if lineWidth > 0 {
                    lines.append(line)
                    line = ""
                    lineWidth = 0
                }
                if wordWidth <= width {
                    line = String(word)
                    lineWidth = wordWidth
                    continue
                }
                for character in word {
                    let characterWidth = of(String(character))
                    if lineWidth + characterWidth > width && lineWidth > 0 {
                        lines.append(line)
                        line = ""
                        lineWidth = 0
                    }
                    line.append(character)
                    lineWidth += characterWidth
                }
            }
            lines.append(line)
        }
        return lines
    }
}

/// The seed's chat screen drawn in a terminal: the user's messages in right-aligned blue
/// bubbles with their avatar on the right, the model's in left-aligned dark gray bubbles with
/// its avatar on the left, each at most about 70 % of the width.
public struct BubbleLayout {
    public let width: Int
    public let color: Bool
    static let userAvatar = "🧑"
    static let modelAvatar = "🤖"

    public init(width: Int, color: Bool) {
        self.width = max(20, width)
        self.color = color
    }

    public enum Speaker { case user, model }

    /// The lines of one bubble, each exactly `width` columns or less (never more).
    public func bubble(_ text: String, from speaker: Speaker) -> [String] {
        let avatarColumns = DisplayWidth.of(Self.userAvatar) + 1
        let inner = max(4, min(Int(Double(width) * 0.7), width - avatarColumns) - 4)
        let wrapped = DisplayWidth.wrap(text.isEmpty ? " " : text, width: inner)
        let boxWidth = (wrapped.map(DisplayWidth.of).max() ?? 0)
        var box = ["╭" + String(repeating: "─", count: boxWidth + 2) + "╮"]
        box += wrapped.map { "│ " + $0 + String(repeating: " ", count: boxWidth - DisplayWidth.of($0)) + " │" }
        box.append("╰" + String(repeating: "─", count: boxWidth + 2) + "╯")
        let code = speaker == .user ? "34" : "90"
        return box.enumerated().map { index, line in
            let painted = color ? "\u{1B}[\(code)m" + line + "\u{1B}[0m" : line
            switch speaker {
            case .model:
                return (index == 0 ? Self.modelAvatar + " " : String(repeating: " ", count: avatarColumns)) + painted
            case .user:
                let used = DisplayWidth.of(line) + avatarColumns
                return String(repeating: " ", count: max(0, width - used)) + painted + (index == 0 ? " " + Self.userAvatar : String(repeating: " ", count: avatarColumns))
            }
        }
    }

    /// A whole conversation, a blank line between bubbles.
    public func render(_ turns: [(user: String, model: String)]) -> String {
        var lines: [String] = []
        for turn in turns {
            lines += bubble(turn.user, from: .user) + [""] + bubble(turn.model, from: .model) + [""]
        }
        return lines.joined(separator: "\n") + (lines.isEmpty ? "" : "\n")
    }
}
