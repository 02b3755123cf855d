import Conversations
import GoogleHTTP

/// A failed API call, already worded for a person. The key is never part of the text.
public struct GeminiError: Error, Sendable, Equatable {
    /// Refused (exit 6), network (exit 7) or interrupted (exit 130): the kind every provider reports.
    public typealias Category = ChatErrorKind

    public let category: Category
    public let message: String
    public let hint: String?
    /// The HTTP status, when there was one.
    public let status: Int?
    /// Why, typed: what callers decide on.
    public let cause: Cause
    /// The server's own message, redacted, for short notices such as retries.
    public let serverMessage: String?

    /// Google's reason or status name (`INVALID_ARGUMENT`), a finish or block reason, or a
    /// local reason (`timeout`), as messages and `ask --json` spell it.
    public var reason: String { cause.name }

    public init(category: Category, message: String, hint: String? = nil, status: Int? = nil, cause: Cause, serverMessage: String? = nil) {
        self.category = category
        self.message = message
        self.hint = hint
        self.status = status
        self.cause = cause
        self.serverMessage = serverMessage
    }

    /// Why a call failed.
    public enum Cause: Sendable, Equatable {
        /// Google's `ErrorInfo` reason.
        case google(GoogleErrorReason)
        /// Google's status name (`RESOURCE_EXHAUSTED`, or `HTTP 502` without a body), when it gave no reason.
        case status(String)
        /// A reply that ended early, or a prompt that was blocked.
        case finish(FinishReason)
        /// No answer within the time allowed.
        case timeout
        case connection, connectionRefused, malformedKey, libraryMissing, interrupted, invalidModel
        case badJSON, badEvent, badStream, cutStream, emptyStream, oversizedReply, oversizedEvent

        /// The word `ask --json` prints as `reason`.
        public var name: String {
            switch self {
            case .google(let reason): reason.name
            case .status(let name): name
            case .finish(let finish): finish.reasonName
            case .timeout: "timeout"
            case .connection: "connection"
            case .connectionRefused: "connection-refused"
            case .malformedKey: "malformed-key"
            case .libraryMissing: "libcurl"
            case .interrupted: "interrupted"
            case .invalidModel: "invalid-model"
            case .badJSON: "bad-json"
            case .badEvent: "bad-event"
            case .badStream: "bad-stream"
            case .cutStream: "cut-stream"
            case .emptyStream: "empty-stream"
            case .oversizedReply: "oversized-reply"
            case .oversizedEvent: "oversized-event"
            }
        }
    }
}
