import FoundationEssentials
import GoogleKeys

/// Google's error envelope, `{"error": google.rpc.Status}`, decoded once for every Google API:
/// the code, message and status name, and the details gemvault acts on (ErrorInfo's reason
/// and metadata, RetryInfo's delay, QuotaFailure's violations, Help's links).
/// It is also the one place that reads Google's strings: status names, reasons and message
/// text become `GoogleReason` and `MessageSign` here, and nowhere else.
public struct GoogleStatus: Decodable, Sendable, Equatable {
    /// The HTTP status in an error envelope; google.rpc.Code's number in an operation's error.
    public var code: Int?
    public var message: String?
    /// The canonical status name (`RESOURCE_EXHAUSTED`).
    public var status: String?
    public var details: [Detail]

    public struct Detail: Decodable, Sendable, Equatable {
        /// `type.googleapis.com/google.rpc.ErrorInfo` and the like.
        public var type: String?
        /// ErrorInfo.
        public var reason: String?
        public var metadata: [String: String]?
        /// RetryInfo (`"40s"`, `"1.5s"`, `"200ms"`).
        public var retryDelay: String?
        /// QuotaFailure.
        public var violations: [Violation]?
        /// Help: where to fix it (the API activation page for SERVICE_DISABLED).
        public var links: [Link]?

        enum CodingKeys: String, CodingKey {
            case type = "@type"
            case reason, metadata, retryDelay, violations, links
        }

        /// Each field on its own: one odd field of one detail never hides the envelope.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            type = try? container.decodeIfPresent(String.self, forKey: .type)
            reason = try? container.decodeIfPresent(String.self, forKey: .reason)
            metadata = try? container.decodeIfPresent([String: String].self, forKey: .metadata)
            retryDelay = try? container.decodeIfPresent(String.self, forKey: .retryDelay)
            violations = try? container.decodeIfPresent([Violation].self, forKey: .violations)
            links = try? container.decodeIfPresent([Link].self, forKey: .links)
        }

        public init(type: String? = nil, reason: String? = nil, metadata: [String: String]? = nil, retryDelay: String? = nil,
                    violations: [Violation]? = nil, links: [Link]? = nil) {
            self.type = type
            self.reason = reason
            self.metadata = metadata
            self.retryDelay = retryDelay
            self.violations = violations
            self.links = links
        }
    }

    public struct Link: Decodable, Sendable, Equatable {
        public var description: String?
        public var url: String?
    }

    public struct Violation: Decodable, Sendable, Equatable {
        public var quotaId: String?
        public var quotaMetric: String?
    }

    public init(code: Int? = nil, message: String? = nil, status: String? = nil, details: [Detail] = []) {
        self.code = code
        self.message = message
        self.status = status
        self.details = details
    }

    /// The ErrorInfo reasons, typed, in the order Google sent them.
    public var reasons: [GoogleErrorReason] { details.compactMap(\.reason).map(GoogleErrorReason.init) }

    /// The first reason, if any.
    public var reason: GoogleErrorReason? { reasons.first }

    /// What callers decide on: the first ErrorInfo reason, else the canonical status name.
    public var googleReason: GoogleReason? {
        if let reason { return .errorInfo(reason) }
        guard let status else { return nil }
        return CanonicalCode(name: status).map { .status($0) } ?? .otherStatus(status)
    }

    /// A long-running operation's error: its google.rpc.Code (the number in `code`).
    public var operationCode: CanonicalCode? { code.flatMap(CanonicalCode.init(rawValue:)) }

    /// What Google's message says that gemvault acts on, where Google sends no reason for it.
    public enum MessageSign: Sendable, CaseIterable {
        /// The organisation policy iam.managed.disableServiceAccountApiKeyCreation refused a bound key.
        case boundKeysForbidden
        /// SERVICE_DISABLED for the quota project of user credentials, not for the key's project.
        case quotaProject
        /// Google's 401 for a key it took for an OAuth access token (sent without ErrorInfo).
        case expectsOAuthToken

        var words: String {
            switch self {
            case .boundKeysForbidden: "disableServiceAccountApiKeyCreation"
            case .quotaProject: "quota project"
            case .expectsOAuthToken: "Expected OAuth 2 access token"
            }
        }
    }

    /// Whether Google's message says `sign`.
    public func says(_ sign: MessageSign) -> Bool { (message ?? "").contains(sign.words) }

    /// Whether Google's message, in lower case, holds any of `words` (a refused request field
    /// has no ErrorInfo reason: only the message names it).
    public func messageMentions(any words: [String]) -> Bool {
        let said = (message ?? "").lowercased()
        return words.contains(where: said.contains)
    }

    /// The delay RetryInfo asks for, in seconds.
    public var retryDelay: Double? {
        for text in details.compactMap(\.retryDelay) {
            if text.hasSuffix("ms"), let value = Double(text.dropLast(2)) { return value / 1000 }
            if text.hasSuffix("s"), let value = Double(text.dropLast()) { return value }
        }
        return nil
    }

    /// A QuotaFailure on a per-day quota: waiting minutes will not help.
    public var isDailyQuota: Bool {
        details.flatMap { $0.violations ?? [] }.contains { ($0.quotaId ?? "").contains("PerDay") }
    }

    /// The first https link of a Help detail, if it is a plain URL (it is printed).
    public var helpLink: String? {
        let urls = details.flatMap { $0.links ?? [] }.compactMap(\.url)
        return urls.first { url in
            url.hasPrefix("https://") && url.utf8.count < 512 && url.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: "\"") }
        }
    }

    /// The first value of `key` in any ErrorInfo's metadata (`consumer`: `projects/123`).
    public func metadata(_ key: String) -> String? { details.compactMap { $0.metadata?[key] }.first }

    // MARK: Decoding

    private enum CodingKeys: String, CodingKey { case code, message, status, details }

    /// A `google.rpc.Status` object: the body of an envelope, or a failed operation's `error`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        code = try container.decodeIfPresent(Int.self, forKey: .code)
        message = try container.decodeIfPresent(String.self, forKey: .message)
        status = try container.decodeIfPresent(String.self, forKey: .status)
        details = try container.decodeIfPresent([Detail].self, forKey: .details) ?? []
    }

    private struct Envelope: Decodable {
        var error: GoogleStatus
    }

    /// The status in `body`, or nil when it is no error envelope. Without alt=sse Gemini's
    /// errors can come wrapped in an array; leading white space is allowed.
    public static func decode(_ body: [UInt8]) -> GoogleStatus? {
        var trimmed = body[...]
        while let first = trimmed.first, first == 0x20 || first == 0x0A || first == 0x0D || first == 0x09 { trimmed = trimmed.dropFirst() }
        let envelope: Envelope?
        if trimmed.first == UInt8(ascii: "["), let list = try? JSONDecoder().decode([Envelope].self, from: Data(trimmed)) {
            envelope = list.first
        } else {
            envelope = try? JSONDecoder().decode(Envelope.self, from: Data(trimmed))
        }
        return envelope?.error
    }

    /// Whether `body` can hold an `"error"` member at all: a byte scan, so that the events of
    /// a healthy stream are decoded once, not first tried as an error. A `\u` escape could
    /// spell the name, so any escape counts as a maybe.
    public static func mayBeEnvelope(_ body: [UInt8]) -> Bool {
        let name = Array("\"error\"".utf8)
        guard body.count >= name.count else { return false }
        for index in 0...(body.count - name.count) {
            if body[index] == 0x5C && body[index + 1] == 0x75 { return true }  // \u
            if body[index] == 0x22 && body[index + 1] == 0x65 && Array(body[index..<index + name.count]) == name { return true }
        }
        return false
    }
}

/// ErrorInfo's reason: the ones gemvault decides on by name, and every other kept as sent.
public enum GoogleErrorReason: Sendable, Equatable, CustomStringConvertible {
    case apiKeyInvalid
    case apiKeyServiceBlocked
    case serviceDisabled
    case accessTokenTypeUnsupported
    case accessTokenScopeInsufficient
    case other(String)

    init(_ name: String) {
        switch name {
        case "API_KEY_INVALID": self = .apiKeyInvalid
        case "API_KEY_SERVICE_BLOCKED": self = .apiKeyServiceBlocked
        case "SERVICE_DISABLED": self = .serviceDisabled
        case "ACCESS_TOKEN_TYPE_UNSUPPORTED": self = .accessTokenTypeUnsupported
        case "ACCESS_TOKEN_SCOPE_INSUFFICIENT": self = .accessTokenScopeInsufficient
        default: self = .other(name)
        }
    }

    /// The name as Google spells it, which messages and `--json` show.
    public var name: String {
        switch self {
        case .apiKeyInvalid: "API_KEY_INVALID"
        case .apiKeyServiceBlocked: "API_KEY_SERVICE_BLOCKED"
        case .serviceDisabled: "SERVICE_DISABLED"
        case .accessTokenTypeUnsupported: "ACCESS_TOKEN_TYPE_UNSUPPORTED"
        case .accessTokenScopeInsufficient: "ACCESS_TOKEN_SCOPE_INSUFFICIENT"
        case .other(let name): name
        }
    }

    public var description: String { name }
}

extension GoogleStatus {
    /// Words a server put in an error (a message, a reason, a permission), made fit to show:
    /// anything shaped like a Google key cut out, one line (a hostile server's line breaks
    /// cannot add lines that look like gemvault's), at most 400 characters.
    public static func shown(_ text: String) -> String {
        let cut = GoogleKeyShape.redacting(Array(text.utf8), minimumBody: 0, replacement: Array("[redacted]".utf8))
            .map { String(decoding: $0, as: UTF8.self) } ?? text
        let joined = cut.split(whereSeparator: { $0 == "\n" || $0 == "\r" }).joined(separator: " ")
        return joined.count > 400 ? String(joined.prefix(400)) + "…" : joined
    }
}
