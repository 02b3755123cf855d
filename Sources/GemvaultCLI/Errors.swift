import TerminalIO
import VaultCore

/// The exit codes every command shares (Docs/cli.md).
enum ExitCode: Int32 {
    case success = 0
    case failure = 1
    case wrongSecret = 3
    case damaged = 4
    case noKey = 5
    case apiRefused = 6
    case network = 7
    /// `ask --schema`: the reply is not JSON, or does not match the schema.
    case replyMismatch = 8
    case usage = 64
    case interrupted = 130
    /// The reader of stdout went away: 128 + SIGPIPE, the status of a process SIGPIPE ended.
    case readerClosed = 141

    /// The words `--help` and the man page give each code: both are made from this list.
    var summary: String {
        switch self {
        case .success: "success"
        case .failure: "failure"
        case .wrongSecret: "wrong passphrase, recovery code or PIN"
        case .damaged: "vault damaged or unsupported"
        case .noKey: "no API key"
        case .apiRefused: "API refused"
        case .network: "network or server failure"
        case .replyMismatch: "reply does not match --schema"
        case .usage: "usage"
        case .interrupted: "interrupted"
        case .readerClosed: "stdout's reader went away"
        }
    }

    static var summaries: String {
        [ExitCode.success, .failure, .wrongSecret, .damaged, .noKey, .apiRefused, .network, .replyMismatch, .usage, .interrupted, .readerClosed]
            .map { "\($0.rawValue) \($0.summary)" }.joined(separator: ", ") + "."
    }

    /// A failure's outcome: the one place it becomes an exit code.
    init(_ outcome: FailureOutcome) {
        switch outcome {
        case .failure: self = .failure
        case .wrongSecret: self = .wrongSecret
        case .damaged: self = .damaged
        case .noKey: self = .noKey
        case .apiRefused: self = .apiRefused
        case .network: self = .network
        case .usage: self = .usage
        case .interrupted: self = .interrupted
        }
    }

    /// `ask --json`'s `reason` for a failure that names none of its own.
    var reason: String {
        switch self {
        case .noKey: "no-key"
        case .wrongSecret: "wrong-secret"
        case .damaged: "vault-damaged"
        case .usage: "usage"
        case .interrupted: "interrupted"
        case .network: "network"
        case .apiRefused: "refused"
        case .replyMismatch: "schema-mismatch"
        default: "failure"
        }
    }
}

/// A failure with a message that needs no further mapping.
struct CommandFailure: Error {
    let code: ExitCode
    let message: String
    let hint: String?
    init(_ code: ExitCode, _ message: String, hint: String? = nil) {
        self.code = code
        self.message = message
        self.hint = hint
    }
}

/// The one place where errors become messages, hints and exit codes.
enum ErrorReport {
    static func report(_ error: Error) -> ExitCode {
        let (code, message, hint) = describe(error)
        // Messages quote server text, file names and settings: Console neutralises them.
        if !message.isEmpty { Console.error(message) }
        if let hint { Console.hint(hint) }
        return code
    }

    static func describe(_ error: Error) -> (ExitCode, String, String?) {
        switch error {
        case let failure as CommandFailure:
            return (failure.code, failure.message, failure.hint)
        case let usage as UsageError:
            let hint = usage.fix ?? usage.usage.map { "usage: \($0)" } ?? "run 'gemvault --help' for the list of commands"
            return (.usage, usage.message, hint)
        case let output as StandardOutputFailure:
            // Like `cat` in `cat | head -1`: a reader that stopped reading is no failure worth a word.
            if output.readerClosed { return (.readerClosed, "", nil) }
            return (.failure, "cannot write to standard output: \(output.reason)", nil)
        case let reportable as any ReportableError:
            let report = reportable.report
            // A workflow's usage mistake that names no fix gets the usage line of the command that made it.
            let usage = report.commandPath.flatMap { path in commandTable.first { $0.path == path } }.map { "usage: \($0.usage)" }
            return (ExitCode(report.outcome), report.message, report.hint ?? usage)
        default:
            return (.failure, "\(error)", nil)
        }
    }
}
