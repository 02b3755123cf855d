import SystemIO
import VaultCore

/// Copying to the clipboard through the terminal: OSC 52 (`ESC ] 52 ; c ; BASE64 BEL`). It works
/// over SSH and inside tmux with `set-clipboard on`. Only gemvault's own text is ever sent, as
/// base64, so nothing in it can act as an escape sequence on the way.
///
/// Inside tmux the plain sequence is sent, never tmux's passthrough (`ESC P tmux; … ESC \`):
/// with `set-clipboard on` tmux takes it itself, keeps a buffer and sets the outer terminal's
/// clipboard; passthrough needs `allow-passthrough on` (off by default since tmux 3.3) and
/// goes around tmux. tmux's default, `external`, drops a program's sequence, so tmux is asked
/// for its setting and a copy that would be dropped is not called one.
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

    /// What tmux does with a program's clipboard escape here.
    public enum Multiplexer: Equatable, Sendable {
        /// Not inside tmux ($TMUX unset).
        case none
        /// tmux with `set-clipboard on`: it takes the escape and passes it on.
        case tmuxPassesOn
        /// tmux with `set-clipboard` at this value (`external`, its default, or `off`): dropped.
        case tmuxDrops(String)
        /// Inside tmux, but its setting could not be read.
        case tmuxUnknown
    }

    /// Asks tmux (the server $TMUX names) for its `set-clipboard` option. The environment is
    /// the one helpers get, without the API key.
    public var multiplexer: Multiplexer {
        guard let socket = environment["TMUX"], !socket.isEmpty else { return .none }
        guard let value = Self.tmuxOption("set-clipboard", environment: environment) else { return .tmuxUnknown }
        return value == "on" ? .tmuxPassesOn : .tmuxDrops(value)
    }

    /// `tmux show-options -sv NAME`, or nil when tmux cannot be run or does not answer within 2 s.
    static func tmuxOption(_ name: String, environment: [String: String]) -> String? {
        var answer = [UInt8](repeating: 0, count: 255)
        let run = answer.withUnsafeMutableBytes { output in
            try? ProcessRunner.run(["tmux", "show-options", "-sv", name], environment: environment, output: output, keepErrors: false, deadline: Deadline(after: 2))
        }
        guard let run, run.ending == .finished(.exited(0)) else { return nil }
        answer.removeSubrange(run.outputCount...)
        let value = String(decoding: answer, as: UTF8.self).trimmedWhitespace
        return value.isEmpty ? nil : value
    }

    /// The escape sequence that puts `text` on the clipboard.
    public static func sequence(for text: String) -> String {
        "\u{1B}]52;c;" + Sodium.base64(Array(text.utf8)) + "\u{07}"
    }
}
