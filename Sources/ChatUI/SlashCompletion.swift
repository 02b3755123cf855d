@preconcurrency import CEditLine
import Glibc

/// Tab completion of the chat's slash commands through libedit; after `/attach ` and
/// `/save ` libedit completes file names, and elsewhere in a message Tab completes nothing.
enum SlashCompletion {
    /// The command words, read from the help text, so the two cannot disagree.
    static let commands: [String] = {
        var words: [String] = []
        for line in ChatREPL.help.split(separator: "\n") {
            guard let word = line.split(separator: " ").first, word.hasPrefix("/"), !words.contains(String(word)) else { continue }
            words.append(String(word))
        }
        return words
    }()

    /// Commands whose argument is a file.
    static let takesFile = ["/attach", "/save"]

    /// The words that complete `prefix`, in the help's order.
    static func candidates(_ prefix: String) -> [String] { commands.filter { $0.hasPrefix(prefix) } }

    static func install() {
        rl_attempted_completion_function = attempt
    }

    /// libedit asks with the word under the cursor and where it starts in the line.
    private static let attempt: @convention(c) (UnsafePointer<CChar>?, Int32, Int32) -> UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = { text, start, _ in
        let word = text.map { String(cString: $0) } ?? ""
        let line = rl_line_buffer.map { String(cString: $0) } ?? ""
        if start == 0, word.hasPrefix("/") {
            rl_attempted_completion_over = 1
            return rl_completion_matches(word, next)
        }
        if takesFile.contains(where: { line.hasPrefix($0 + " ") }) { return nil }
        rl_attempted_completion_over = 1
        return nil
    }

    /// The generator libedit calls with state 0 for the first match, then 1, 2 …
    nonisolated(unsafe) private static var pending: [String] = []
    private static let next: @convention(c) (UnsafePointer<CChar>?, Int32) -> UnsafeMutablePointer<CChar>? = { text, state in
        if state == 0 { pending = candidates(text.map { String(cString: $0) } ?? "") }
        guard !pending.isEmpty else { return nil }
        return strdup(pending.removeFirst())
    }
}
