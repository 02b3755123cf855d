import GoogleHTTP
import SystemIO
import VaultCore

/// One HTTP exchange with Google's token, metadata or API Keys endpoints whose answer is
/// collected in secret memory: a token answer or a finished create operation carries a
/// secret. The bearer token travels only in a header built in secret memory, and a secret
/// body is sent from secret memory.
struct GoogleExchange {
    struct Response {
        let status: Int
        let body: SecretBytes
        /// The Retry-After header, in seconds.
        let retryAfter: Double?
        /// The Date header, in Unix seconds: the server's clock.
        var date: Int64?
    }

    /// A JSON answer and when the server gave it (its Date header, Unix seconds).
    struct Dated {
        let json: SecretJSON
        let date: Int64?
    }

    /// A failure before any HTTP answer: refused, reset, DNS, TLS, the time limit, no libcurl.
    struct TransportFailure: Error, Sendable {
        let message: String
        let timedOut: Bool
        /// The answer passed `maxAnswer`: the server answered, with something no Google API sends.
        var tooLarge = false
    }

    static let maxAnswer = 1 << 20

    let transport: any HTTPTransport
    /// Seconds allowed for connecting and getting the headers, and again for the whole body.
    let timeout: Double

    func perform(_ method: String, _ target: HTTPRequest.Target, headers: [String], bearer: SecretBytes? = nil,
                 body: HTTPRequest.Body = .none) throws(TransportFailure) -> Response {
        // Checked where the header is built, whatever the token's source checked before.
        if let bearer, !bearer.isHeaderSafe {
            throw TransportFailure(message: "the access token holds a line break or a character outside printable ASCII; nothing was sent", timedOut: false)
        }
        let answer = AnswerBuffer()
        let request = HTTPRequest(method: method, target: target, headers: headers,
                                  secretHeader: bearer.map { .init(prefix: "Authorization: Bearer ", value: $0) }, body: body, idleTimeout: timeout)
        // Bytes never restart the idle clock (a one-byte-at-a-time answer would hold gemvault
        // forever): the limit runs from the end of the headers to the end of the body.
        let outcome = transport.perform(request, onData: { _, data in answer.append(data) ? .more : .abort }, onTick: nil)
        switch outcome {
        case .complete(let status, let retryAfter, let date): return Response(status: status, body: answer.finished(), retryAfter: retryAfter, date: date)
        case .aborted: throw TransportFailure(message: "the answer was larger than \(Self.maxAnswer >> 10) KiB", timedOut: false, tooLarge: true)
        case .idleTimeout: throw TransportFailure(message: "no answer within \(Int(timeout)) s", timedOut: true)
        case .libraryMissing: throw TransportFailure(message: "libcurl.so.4 could not be loaded (install libcurl4)", timedOut: false)
        case .refusedHeader: throw TransportFailure(message: "a request header holds a line break or a character outside printable ASCII; nothing was sent", timedOut: false)
        case .cancelled: throw TransportFailure(message: "cancelled", timedOut: false)
        case .transportError(let text), .connectionRefused(let text): throw TransportFailure(message: Redaction.redact(text), timedOut: false)
        }
    }
}

extension GoogleExchange {
    /// One JSON call to a Google REST service with `policy`'s retries; the answer with the
    /// values of `secretFields` taken out into secret memory. `service` names the service in
    /// messages ("the API Keys service"), `setting` the setting that points at it.
    func call(_ method: String, _ target: HTTPRequest.Target, body: HTTPRequest.Body, headers: [String], bearer: SecretBytes, policy: RetryPolicy,
              clock: WaitClock, service: String, setting: String, what: String, secretFields: Set<String>,
              refusal: (Int, GoogleStatus?) -> GoogleError) throws(GoogleError) -> SecretJSON {
        try dated(method, target, body: body, headers: headers, bearer: bearer, policy: policy, clock: clock, service: service, setting: setting, what: what,
                  secretFields: secretFields, refusal: refusal).json
    }

    /// `call`, with the Date header of the answer.
    func dated(_ method: String, _ target: HTTPRequest.Target, body: HTTPRequest.Body, headers: [String], bearer: SecretBytes, policy: RetryPolicy,
               clock: WaitClock, service: String, setting: String, what: String, secretFields: Set<String>,
               refusal: (Int, GoogleStatus?) -> GoogleError) throws(GoogleError) -> Dated {
        var headers = ["Accept: application/json"] + headers
        if case .none = body {} else { headers.append("Content-Type: application/json; charset=utf-8") }
        return try policy.run({ (_: Int) throws(GoogleError) -> RetryPolicy.Step<Dated, GoogleError> in
            let response: Response
            do throws(TransportFailure) {
                response = try perform(method, target, headers: headers, bearer: bearer, body: body)
            } catch {
                if error.tooLarge { throw GoogleError(.badData, "\(service) answered \(what) with more than \(Self.maxAnswer >> 10) KiB, which no Google API sends") }
                return .failed(GoogleError(.network, "\(service) did not answer while \(what): \(error.message)",
                                           hint: "check the network, or the \(setting) setting", reason: .answerLost), .noAnswer)
            }
            guard let split = SecretJSON.split(response.body, secretFields: secretFields) else {
                throw GoogleError(response.status >= 500 ? .network : .refused, "\(service) answered \(what) with a malformed body (HTTP \(response.status))",
                                  status: response.status)
            }
            if response.status == 200 { return .done(Dated(json: split, date: response.date)) }
            let envelope = GoogleStatus.decode(split.plain)
            return .failed(refusal(response.status, envelope), .answer(response.status, envelope, retryAfter: response.retryAfter))
        }, wait: { (delay: Double, _: Int, _: GoogleError) throws(GoogleError) in clock.sleep(delay) })
    }
}

/// The answer, grown in secret memory.
private final class AnswerBuffer {
    private var buffer = SecretBytes(count: 4096)
    private var length = 0

    func append(_ data: UnsafeRawBufferPointer) -> Bool {
        guard length + data.count <= GoogleExchange.maxAnswer else { return false }
        if length + data.count > buffer.count {
            let bigger = SecretBytes(count: min(GoogleExchange.maxAnswer, max(buffer.count * 2, length + data.count)))
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
