import VaultCore

/// Why a rotation stopped, when it is not Google's answer (that is a `GoogleError`) nor the
/// vault's (a `VaultError`). Each case says its outcome; a usage mistake without a fix gets
/// `key rotate`'s usage line from the CLI.
public enum RotationError: Error, Equatable, Sendable {
    /// Options that do not go together, or a value out of range (exit 64). `fix` replaces the usage line.
    case usage(String, fix: String? = nil)
    /// The rotation was refused or stopped before it could do harm (exit 1).
    case failed(String, hint: String? = nil)
    /// Something the run must clean up could not be reached; what it made is kept (exit 7).
    case unreachable(String, hint: String? = nil)

    public var message: String {
        switch self {
        case .usage(let message, _), .failed(let message, _), .unreachable(let message, _): message
        }
    }
}

extension RotationError: ReportableError {
    public var report: FailureReport {
        switch self {
        case .usage(let message, let fix): FailureReport(.usage, message, hint: fix, commandPath: ["key", "rotate"])
        case .failed(let message, let hint): FailureReport(.failure, message, hint: hint)
        case .unreachable(let message, let hint): FailureReport(.network, message, hint: hint)
        }
    }
}
