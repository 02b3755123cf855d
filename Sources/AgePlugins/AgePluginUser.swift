import SystemIO
public import VaultCore
import TerminalIO

/// Whoever answers a plugin's requests (age-plugin.md's `msg`, `confirm`, `request-public`,
/// `request-secret`). Each answer is nil (the client's `fail`) when it cannot be given.
public protocol AgePluginUser: Sendable {
    /// Shows a message; false when there is nowhere to show it.
    func show(_ message: String, from program: String) -> Bool
    /// True for the yes choice, false for no; nil without a terminal.
    func confirm(_ message: String, yes: String, no: String?, from program: String) -> Bool?
    func requestPublic(_ message: String, from program: String) -> String?
    func requestSecret(_ message: String, from program: String) -> SecretBytes?
}

/// The user at gemvault's terminal: messages on stderr, questions on the controlling terminal,
/// a secret through the hidden prompt. Everything the plugin wrote is neutralised first, so it
/// cannot move the cursor, retitle the window or fake gemvault's own lines.
public struct TerminalPluginUser: AgePluginUser {
    public init() {}

    public func show(_ message: String, from program: String) -> Bool {
        Console.err("\(program): \(EscapeNeutralizer.neutralize(message))\n")
        return true
    }

    public func confirm(_ message: String, yes: String, no: String?, from program: String) -> Bool? {
        let choices = "[y = \(EscapeNeutralizer.neutralize(yes))" + (no.map { ", n = \(EscapeNeutralizer.neutralize($0))" } ?? "") + "]"
        for _ in 1...3 {
            guard let answer = readVisibleLine(prompt: "\(program): \(EscapeNeutralizer.neutralize(message)) \(choices) ") else { return nil }
            switch answer.lowercased() {
            case "y", "yes": return true
            case "n" where no != nil, "no" where no != nil: return false
            default: continue
            }
        }
        return nil
    }

    public func requestPublic(_ message: String, from program: String) -> String? {
        readVisibleLine(prompt: "\(program): \(EscapeNeutralizer.neutralize(message)) ").flatMap { $0.isEmpty ? nil : $0 }
    }

    public func requestSecret(_ message: String, from program: String) -> SecretBytes? {
        try? SecretInput.read(from: .terminal, prompt: "\(program): \(EscapeNeutralizer.neutralize(message)) ")
    }

    /// One line typed on the controlling terminal (echoed), trimmed; nil without a terminal.
    /// Empty for Enter alone and at the end of input: `confirm` asks again (three times at
    /// most), `requestPublic` answers `fail`.
    private func readVisibleLine(prompt: String) -> String? {
        TerminalQuestion.ask(prompt)?.trimmedWhitespace
    }
}
