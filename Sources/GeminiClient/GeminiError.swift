import Conversations

/// A failed API call, already worded for a person. The key is never part of the text.
public struct GeminiError: Error, Sendable, Equatable {
    /// Refused (exit 6), network (exit 7) or interrupted (exit 130): the kind every provider reports.
    public typealias Category = ChatErrorKind

    public let category: Category
    public let message: String
    public let hint: String?
    /// The HTTP status, when there was one.
    public let status: Int?
    /// Google's status name (`INVALID_ARGUMENT`) or a local reason (`timeout`).
    public let reason: String
    /// The server's own message, redacted, for short notices such as retries.
    public let serverMessage: String?

    public init(category: Category, message: String, hint: String? = nil, status: Int? = nil, reason: String, serverMessage: String? = nil) {
        self.category = category
        self.message = message
        self.hint = hint
        self.status = status
        self.reason = reason
        self.serverMessage = serverMessage
    }
}
