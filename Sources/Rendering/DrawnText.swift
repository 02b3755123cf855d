import TerminalIO

/// A reply as the screen draws it, as text for the clipboard (`/copy`): the words the renderer
/// draws and nothing the parser consumes unseen (a link's title, a reference definition, the
/// rest of a fence's info string, cells beyond a table's header). Laid out without a width;
/// code blocks stand between fences instead of their frame, so a pasted block stays code.
extension MarkdownRenderer {
    public func drawnText(_ markdown: String) -> String {
        let blocks = parse(markdown).map(\.block)
        let lines = blocks.map { Self.plainLines($0).joined(separator: "\n") }.joined(separator: "\n\n")
        return lines.isEmpty ? "" : lines + "\n"
    }

    /// Words of `markdown` (runs of letters and digits) missing from `drawn`: text the parser
    /// took and the screen never showed, each word as often as it is missing, in the reply's
    /// order. Counted, not matched in order: a reference's URL is drawn where the link stands.
    /// Character references, digits alone and single letters (a task box's `x`, a list's
    /// renumbered items) are not counted.
    public static func undrawnWords(in markdown: String, drawn: String) -> [String] {
        let source = EscapeNeutralizer.neutralize(markdown)
        var shown: [Substring: Int] = [:]
        for word in words(of: drawn) { shown[word, default: 0] += 1 }
        var missing: [String] = []
        for word in words(of: withoutCharacterReferences(source)) where word.count > 1 && !word.allSatisfy(\.isNumber) {
            if let count = shown[word], count > 0 {
                shown[word] = count - 1
            } else {
                missing.append(String(word))
            }
        }
        return missing
    }

    private static func words(of text: String) -> [Substring] {
        text.split { !($0.isLetter || $0.isNumber) }
    }

    /// `&amp;`, `&#27;`, `&#x1b;` left out: the screen shows what they stand for.
    private static func withoutCharacterReferences(_ text: String) -> String {
        text.replacing(/&(#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});/, with: " ")
    }

    private static func plainLines(_ block: MarkdownBlock) -> [String] {
        switch block {
        case .code(let language, let lines, _):
            return ["```" + language] + lines + ["```"]
        case .list(_, let tight, let items):
            var lines: [String] = []
            for (index, item) in items.enumerated() {
                if !tight && index > 0 { lines.append("") }
                var body: [String] = []
                for (number, inner) in item.blocks.enumerated() {
                    if !tight && number > 0 { body.append("") }
                    body += plainLines(inner)
                }
                let indent = String(repeating: " ", count: DisplayWidth.of(item.marker))
                lines += (body.isEmpty ? [""] : body).enumerated().map { offset, line in
                    trimmed((offset == 0 ? item.marker : indent) + line)
                }
            }
            return lines
        case .quote(let blocks):
            let inner = blocks.map { plainLines($0).joined(separator: "\n") }.joined(separator: "\n\n")
            return inner.split(separator: "\n", omittingEmptySubsequences: false).map { trimmed("> " + $0) }
        default:
            return layout(block, width: DisplayWidth.unlimited, firstWidth: DisplayWidth.unlimited).map { trimmed($0.plainText) }
        }
    }

    private static func trimmed(_ line: String) -> String {
        var line = line
        while line.last == " " { line.removeLast() }
        return line
    }
}
