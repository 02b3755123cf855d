/// google.rpc.Code: the canonical status of every Google API, by name in an error envelope's
/// `status` and by number in a long-running operation's `error.code`.
public enum CanonicalCode: Int, Sendable, CaseIterable, CustomStringConvertible {
    case ok = 0, cancelled, unknown, invalidArgument, deadlineExceeded, notFound, alreadyExists, permissionDenied,
         resourceExhausted, failedPrecondition, aborted, outOfRange, unimplemented, internalError, unavailable, dataLoss, unauthenticated

    /// The name as Google spells it (`FAILED_PRECONDITION`).
    public var name: String {
        switch self {
        case .ok: "OK"
        case .cancelled: "CANCELLED"
        case .unknown: "UNKNOWN"
        case .invalidArgument: "INVALID_ARGUMENT"
        case .deadlineExceeded: "DEADLINE_EXCEEDED"
        case .notFound: "NOT_FOUND"
        case .alreadyExists: "ALREADY_EXISTS"
        case .permissionDenied: "PERMISSION_DENIED"
        case .resourceExhausted: "RESOURCE_EXHAUSTED"
        case .failedPrecondition: "FAILED_PRECONDITION"
        case .aborted: "ABORTED"
        case .outOfRange: "OUT_OF_RANGE"
        case .unimplemented: "UNIMPLEMENTED"
        case .internalError: "INTERNAL"
        case .unavailable: "UNAVAILABLE"
        case .dataLoss: "DATA_LOSS"
        case .unauthenticated: "UNAUTHENTICATED"
        }
    }

    /// The code a status name stands for; read only by the decoder (`GoogleStatus`).
    init?(name: String) {
        guard let code = Self.allCases.first(where: { $0.name == name }) else { return nil }
        self = code
    }

    public var description: String { name }
}

/// Why a call to Google failed, typed: what every caller decides on. Google's strings become
/// this in one place, the decoder of `google.rpc.Status` (`GoogleStatus`); the rest are
/// gemvault's own outcomes of a call.
public enum GoogleReason: Sendable, Equatable, CustomStringConvertible {
    /// ErrorInfo's reason, the first Google sent.
    case errorInfo(GoogleErrorReason)
    /// The canonical status, when Google sent no ErrorInfo (or an operation ended with it).
    case status(CanonicalCode)
    /// A status name outside google.rpc.Code, kept as sent for messages.
    case otherStatus(String)
    /// A long-running operation that ended in an error gemvault names by its number (`code 9`).
    case operationCode(Int)
    /// An OAuth token endpoint's `error` (`invalid_grant`), kept as sent for messages.
    case oauth(String)
    /// The request went out and no answer came back: Google may have carried it out.
    case answerLost
    /// A long-running operation was still not done when gemvault stopped waiting.
    case stillPending
    /// A conditional write whose etag no longer matched: another writer came first.
    case etagConflict

    /// The name messages and `--json` show (Google's spelling for Google's reasons).
    public var name: String {
        switch self {
        case .errorInfo(let reason): reason.name
        case .status(let code): code.name
        case .otherStatus(let name): name
        case .operationCode(let code): "code \(code)"
        case .oauth(let name): name
        case .answerLost: "answer-lost"
        case .stillPending: "operation-pending"
        case .etagConflict: "etag-conflict"
        }
    }

    public var description: String { name }

    /// Whether this is the canonical status `code`.
    public func isStatus(_ code: CanonicalCode) -> Bool { self == .status(code) }
}
