/// The fenced code blocks of a reply's markdown (``` or ~~~), for `/copy code N`.
public enum CodeBlocks {
    /// Each block's text without its fences, in order; a fence left open runs to the end.
    /// A block's last newline is left off, so a pasted command does not run by itself.
    public static func fenced(in markdown: String) -> [String] {
        var blocks: [String] = []
        var open: (marker: Character, length: Int, indent: Int)?
        var lines: [Substring] = []
        for line in markdown.split(separator: "\n", omittingEmptySubsequences: false) {
            let indent = line.prefix { $0 == " " }.count
            let rest = line.dropFirst(indent)
            if let fence = open {
                let run = rest.prefix { $0 == fence.marker }.count
                if indent < 4, run >= fence.length, rest.dropFirst(run).allSatisfy({ $0 == " " || $0 == "\t" }) {
                    blocks.append(lines.joined(separator: "\n"))
                    open = nil
                } else {
                    // CommonMark: the fence's indentation is taken off each line, as far as it goes.
                    lines.append(line.dropFirst(min(fence.indent, indent)))
                }
                continue
            }
            guard indent < 4, let marker = rest.first, marker == "`" || marker == "~" else { continue }
            let run = rest.prefix { $0 == marker }.count
            // A backtick fence's info string may not hold a backtick.
            guard run >= 3, marker == "~" || !rest.dropFirst(run).contains("`") else { continue }
            open = (marker, run, indent)
            lines = []
        }
        if open != nil {
            while lines.last?.isEmpty == true { lines.removeLast() }
            blocks.append(lines.joined(separator: "\n"))
        }
        return blocks
    }
}
