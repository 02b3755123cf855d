import GoogleHTTP

/// A failure of Google's token, metadata or API Keys endpoints, or of finding a credential.
/// Messages never quote a token, a key or a private key.
public struct GoogleError: Error, Sendable, Equatable {
    public enum Category: Sendable, Equatable {
        /// Google answered and refused (4xx, an operation that ended in an error): exit 6.
        case refused
        /// No answer, or a server failure after the retries: exit 7.
        case network
        /// No usable credential, or a credential file that cannot be used: exit 1.
        case credentials
        /// Google answered with data that fails its checks (a secret's checksum, its shape): exit 4.
        case badData
    }

    public let category: Category
    public let message: String
    public let hint: String?
    /// The HTTP status, when there was an answer.
    public let status: Int?
    /// Why, typed: Google's reason or status (decoded by `GoogleStatus`), or gemvault's own
    /// outcome of the call (no answer, an operation still pending, an etag conflict).
    public let reason: GoogleReason?
    /// What a failing `token_command` wrote to stderr, shown after the message with its escapes
    /// neutralised, as for `key_command` ("reauthentication required" is the useful part).
    public let commandStderr: String

    public init(_ category: Category, _ message: String, hint: String? = nil, status: Int? = nil, reason: GoogleReason? = nil,
                commandStderr: String = "") {
        self.category = category
        self.message = message
        self.hint = hint
        self.status = status
        self.reason = reason
        self.commandStderr = commandStderr
    }

    /// Whether Google may have done what was asked although the call failed: no answer, or a
    /// server error after it may have acted.
    public var mayHaveBeenPerformed: Bool { reason == .answerLost || (status ?? 0) >= 500 }

    /// Whether gemvault stopped waiting for a long-running operation that may still finish.
    public var isStillPending: Bool { reason == .stillPending }

    /// Whether Google refused with the canonical status `code` (and no ErrorInfo reason).
    public func isStatus(_ code: CanonicalCode) -> Bool { reason == .status(code) }
}
