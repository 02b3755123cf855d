import SystemIO
import VaultCore

/// One HTTP exchange with a Google API whose answer is collected in secret memory (a token
/// answer or a finished create operation carries a secret), and the one JSON call built on it
/// that every unary call to Google goes through: the API Keys service, Secret Manager, token
/// endpoints and Gemini's unary methods. A credential travels only in a header built in secret
/// memory, and a secret body is sent from secret memory.
public struct GoogleExchange {
    public struct Response {
        public let status: Int
        public let body: SecretBytes
        /// The Retry-After header, in seconds.
        public let retryAfter: Double?
        /// The Date header, in Unix seconds: the server's clock.
        public var date: Int64?
        /// The value of the header the request asked for (`x-gemini-service-tier`).
        public var captured: String?
    }

    /// A JSON answer (its secret fields taken out), when the server gave it (its Date header,
    /// Unix seconds), and the header the request asked for.
    public struct Dated {
        public let json: SecretJSON
        public let date: Int64?
        public var captured: String?
    }

    /// A failure before any HTTP answer: refused, reset, DNS, TLS, the time limit, no libcurl,
    /// cancelled; or an answer past `maxAnswer`.
    public struct TransportFailure: Error, Sendable {
        public let message: String
        public let timedOut: Bool
        /// The answer passed `maxAnswer`: the server answered, with something no Google API sends.
        public var tooLarge = false
        /// How the transfer ended, for callers that tell the failures apart.
        public var outcome: HTTPOutcome = .cancelled
    }

    /// What one JSON call sends, and how its answer is read.
    public struct JSONRequest {
        public var method: String
        public var target: HTTPRequest.Target
        public var headers: [String]
        /// The credential's header (`Authorization: Bearer …`, `x-goog-api-key: …`).
        public var credential: HTTPRequest.SecretHeader?
        public var body: HTTPRequest.Body
        /// The body's `Content-Type` (an OAuth token request is a form).
        public var bodyType = "application/json; charset=utf-8"
        /// Fields of the answer whose values are secrets (`keyString`, `data`).
        public var secretFields: Set<String>
        /// A response header to hand back with the answer.
        public var capturing: String?
        /// Called about every 100 ms while waiting; true cancels.
        public var onTick: (() -> Bool)?

        public init(_ method: String, _ target: HTTPRequest.Target, headers: [String] = [], credential: HTTPRequest.SecretHeader? = nil,
                    body: HTTPRequest.Body = .none, secretFields: Set<String> = [], capturing: String? = nil, onTick: (() -> Bool)? = nil) {
            self.method = method
            self.target = target
            self.headers = headers
            self.credential = credential
            self.body = body
            self.secretFields = secretFields
            self.capturing = capturing
            self.onTick = onTick
        }
    }

    public static let maxAnswer = 1 << 20

    public let transport: any HTTPTransport
    /// Seconds allowed for connecting and getting the headers, and again for the whole body.
    public let timeout: Double
    /// The largest answer taken; more is a `TransportFailure` with `tooLarge`.
    public let maxAnswer: Int

    public init(transport: any HTTPTransport, timeout: Double, maxAnswer: Int = GoogleExchange.maxAnswer) {
        self.transport = transport
        self.timeout = timeout
        self.maxAnswer = maxAnswer
    }

    /// The header of an OAuth access token.
    public static func bearer(_ token: SecretBytes) -> HTTPRequest.SecretHeader { .init(prefix: bearerPrefix, value: token) }
    static let bearerPrefix = "Authorization: Bearer "

    public func perform(_ method: String, _ target: HTTPRequest.Target, headers: [String], bearer: SecretBytes? = nil,
                        body: HTTPRequest.Body = .none) throws(TransportFailure) -> Response {
        try perform(JSONRequest(method, target, headers: headers, credential: bearer.map(Self.bearer), body: body))
    }

    public func perform(_ call: JSONRequest) throws(TransportFailure) -> Response {
        // Checked where the header is built, whatever the token's source checked before.
        if let credential = call.credential, credential.prefix == Self.bearerPrefix, !credential.value.isHeaderSafe {
            throw TransportFailure(message: "the access token holds a line break or a character outside printable ASCII; nothing was sent", timedOut: false, outcome: .refusedHeader)
        }
        let answer = AnswerBuffer(limit: maxAnswer)
        var request = HTTPRequest(method: call.method, target: call.target, headers: call.headers, secretHeader: call.credential, body: call.body, idleTimeout: timeout)
        request.capturedHeader = call.capturing
        // Bytes never restart the idle clock (a one-byte-at-a-time answer would hold gemvault
        // forever): the limit runs from the end of the headers to the end of the body.
        let (outcome, captured) = transport.performCapturing(request, onData: { _, data in answer.append(data) ? .more : .abort }, onTick: call.onTick)
        switch outcome {
        case .complete(let status, let retryAfter, let date):
            return Response(status: status, body: answer.finished(), retryAfter: retryAfter, date: date, captured: captured)
        case .aborted: throw TransportFailure(message: "the answer was larger than \(maxAnswer >> 10) KiB", timedOut: false, tooLarge: true, outcome: outcome)
        case .idleTimeout: throw TransportFailure(message: "no answer within \(Int(timeout)) s", timedOut: true, outcome: outcome)
        case .libraryMissing: throw TransportFailure(message: "libcurl.so.4 could not be loaded (install libcurl4)", timedOut: false, outcome: outcome)
        case .refusedHeader: throw TransportFailure(message: "a request header holds a line break or a character outside printable ASCII; nothing was sent", timedOut: false, outcome: outcome)
        case .cancelled: throw TransportFailure(message: "cancelled", timedOut: false, outcome: outcome)
        case .transportError(let text), .connectionRefused(let text): throw TransportFailure(message: Redaction.redact(text), timedOut: false, outcome: outcome)
        }
    }
}

extension GoogleExchange {
    /// The one JSON call (a JSON answer, to a JSON or form body): `policy`'s attempts of
    /// `perform`, `Accept` and `Content-Type` set.
    /// A 200 whose body is JSON is the answer, its `secretFields` taken out; any other answer
    /// is decoded by `GoogleStatus` and weighed by `refused`; a body that is no JSON is
    /// `malformed`'s to throw (or, given nil, `refused`'s with no envelope); no answer is
    /// `unanswered`'s to weigh or throw. `wait` sleeps between attempts.
    public func call<Failure: Error>(_ call: JSONRequest, policy: RetryPolicy,
                                     unanswered: (TransportFailure) throws(Failure) -> (Failure, RetryPolicy.Failure),
                                     malformed: (Response) -> Failure?,
                                     refused: (Response, GoogleStatus?) -> (Failure, RetryPolicy.Failure),
                                     wait: (Double, Int, Failure) throws(Failure) -> Void) throws(Failure) -> Dated {
        var call = call
        call.headers = ["Accept: application/json"] + call.headers
        if case .none = call.body {} else { call.headers.append("Content-Type: " + call.bodyType) }
        return try policy.run({ (_: Int) throws(Failure) -> RetryPolicy.Step<Dated, Failure> in
            let response: Response
            do throws(TransportFailure) {
                response = try perform(call)
            } catch {
                let (failure, weight) = try unanswered(error)
                return .failed(failure, weight)
            }
            let split = SecretJSON.split(response.body, secretFields: call.secretFields)
            if split == nil, let failure = malformed(response) { throw failure }
            if response.status == 200, let split { return .done(Dated(json: split, date: response.date, captured: response.captured)) }
            let (failure, weight) = refused(response, split.flatMap { GoogleStatus.decode($0.plain) })
            return .failed(failure, weight)
        }, wait: wait)
    }
}

/// The answer, grown in secret memory up to `limit` bytes.
private final class AnswerBuffer {
    private var buffer = SecretBytes(count: 4096)
    private var length = 0
    private let limit: Int

    init(limit: Int) { self.limit = limit }

    func append(_ data: UnsafeRawBufferPointer) -> Bool {
        guard length + data.count <= limit else { return false }
        if length + data.count > buffer.count {
            let bigger = SecretBytes(count: min(limit, max(buffer.count * 2, length + data.count)))
            bigger.withUnsafeMutableBytes { target in
                buffer.withUnsafeBytes { source in
                    if length > 0 { target.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: length) }
                }
            }
            buffer = bigger
        }
        buffer.withUnsafeMutableBytes { target in
            if data.count > 0 { (target.baseAddress! + length).copyMemory(from: data.baseAddress!, byteCount: data.count) }
        }
        length += data.count
        return true
    }

    func finished() -> SecretBytes {
        buffer.truncate(to: length)
        return buffer
    }
}
