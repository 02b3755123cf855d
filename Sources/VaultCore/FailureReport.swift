/// What a failure means to the one who ran the command; the CLI's one exit map turns it into
/// the exit code (Docs/cli.md).
public enum FailureOutcome: Sendable, Equatable {
    case failure
    case wrongSecret
    case damaged
    case noKey
    case apiRefused
    case network
    case usage
    case interrupted
}

/// A failure worded for a person: the message and hint the CLI prints on stderr, and its outcome.
public struct FailureReport: Sendable, Equatable {
    public let outcome: FailureOutcome
    public let message: String
    public let hint: String?
    /// The command whose usage mistake this is (`["key", "rotate"]`), as a `UsageError` names it:
    /// without a hint, the CLI shows that command's usage line.
    public let commandPath: [String]?

    public init(_ outcome: FailureOutcome, _ message: String, hint: String? = nil, commandPath: [String]? = nil) {
        self.outcome = outcome
        self.message = message
        self.hint = hint
        self.commandPath = commandPath
    }
}

/// An error that words itself where it is defined, so the CLI only prints and maps it.
/// Text from others (file names, a program's stderr) stays as it came: the CLI neutralises
/// escapes when it prints.
public protocol ReportableError: Error {
    var report: FailureReport { get }
}
