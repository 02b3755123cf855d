import VaultCore

/// Copying to the clipboard through the terminal: OSC 52 (`ESC ] 52 ; c ; BASE64 BEL`). It works
/// over SSH and inside tmux with `set-clipboard on`. Only gemvault's own text is ever sent, as
/// base64, so nothing in it can act as an escape sequence on the way.
public struct TerminalClipboard: Sendable {
    /// Terminals cap what they take (xterm and tmux at about 1 MB of base64).
    public static let maxBytes = 512 << 10

    public let environment: [String: String]
    public let outputIsTerminal: Bool

    public init(environment: [String: String], outputIsTerminal: Bool) {
        self.environment = environment
        self.outputIsTerminal = outputIsTerminal
    }

    /// Why a copy cannot reach a clipboard here, or nil when it can be tried.
    public var refusal: String? {
        if !outputIsTerminal { return "the output is not a terminal, so there is no terminal clipboard to copy to" }
        if environment["TERM"] == "dumb" { return "TERM is dumb, and such a terminal has no clipboard escape (OSC 52)" }
        if environment["TERM_PROGRAM"] == "Apple_Terminal" { return "Terminal.app ignores clipboard escapes (OSC 52); iTerm2, kitty, WezTerm and others take them" }
        return nil
    }

    /// The escape sequence that puts `text` on the clipboard.
    public static func sequence(for text: String) -> String {
        "\u{1B}]52;c;" + Sodium.base64(Array(text.utf8)) + "\u{07}"
    }
}
