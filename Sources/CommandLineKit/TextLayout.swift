/// Text laid out in columns and broken at spaces to a terminal's width, for help and tables.
public enum TextLayout {
    /// `  LEFT` padded to `column`, then `text` wrapped with a hanging indent under itself;
    /// when the terminal is too narrow for that, the text goes on the lines below, indented.
    public static func entry(_ left: String, _ text: String, column: Int, width: Int?) -> String {
        guard let width else { return "  " + left.padding(to: column) + text + "\n" }
        let indent = 2 + column
        if width - indent >= 24 {
            let first = "  " + left.padding(to: column)
            return first + wrapped(text, width: width, indent: indent, firstIndent: first.count).dropFirst(first.count) + "\n"
        }
        return "  " + left + "\n" + wrapped(String(repeating: " ", count: 6) + text, width: width, indent: 6) + "\n"
    }

    /// `text` broken at spaces into lines of at most `width` characters; lines after the first
    /// start with `indent` spaces. A word longer than a line stays whole.
    public static func wrapped(_ text: String, width: Int?, indent: Int = 0, firstIndent: Int = 0) -> String {
        let leading = text.prefix { $0 == " " }
        let words = text.dropFirst(leading.count).split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        return wrapped(words: words, width: width, indent: indent, firstIndent: firstIndent + leading.count)
    }

    /// `words` joined by spaces and broken between them as `wrapped` does.
    public static func wrapped(words: [String], width: Int?, indent: Int = 0, firstIndent: Int = 0) -> String {
        guard let width else { return String(repeating: " ", count: firstIndent) + words.joined(separator: " ") }
        let limit = max(width, indent + 20)
        var lines: [String] = []
        var line = String(repeating: " ", count: firstIndent)
        var lineHasWord = false
        for word in words {
            if lineHasWord, line.count + 1 + word.count > limit {
                lines.append(line)
                line = String(repeating: " ", count: indent)
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}

extension String {
    /// Padded with spaces to `width` characters, with at least one space after it.
    public func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
