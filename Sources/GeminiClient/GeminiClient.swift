import Conversations
import FoundationEssentials
import GoogleHTTP
import SystemIO
import VaultCore

/// Where and how to reach the API.
public struct ClientConfiguration: Sendable {
    public var endpoint: String
    public var apiVersion: String
    /// Seconds allowed for connecting, for the first byte, and for any silence between events.
    public var timeout: Double
    /// The `retries` setting plus the first attempt.
    public var maxAttempts: Int
    /// The first backoff delay in seconds; it doubles per attempt up to `maxBackoff`.
    public var initialBackoff: Double
    public var maxBackoff: Double
    /// RetryInfo delays longer than this are not waited for.
    public var maxRetryInfoDelay: Double

    /// The Developer API takes `store`; Vertex AI / Agent Platform endpoints refuse the field
    /// (their project's logging setting decides), so it is left out there.
    public var honoursStore: Bool {
        let host = EndpointURL(endpoint)?.host.lowercased() ?? ""
        return !(host == "aiplatform.googleapis.com" || host.hasSuffix("-aiplatform.googleapis.com") || host.hasSuffix(".aiplatform.googleapis.com"))
    }

    public init(endpoint: String, apiVersion: String, timeout: Double, maxAttempts: Int,
                initialBackoff: Double = 1, maxBackoff: Double = 30, maxRetryInfoDelay: Double = RetryPolicy.longestServerDelay) {
        self.endpoint = endpoint
        self.apiVersion = apiVersion
        self.timeout = timeout
        self.maxAttempts = maxAttempts
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.maxRetryInfoDelay = maxRetryInfoDelay
    }
}

/// How a request proves who sends it: an API key, or a Google identity's access token
/// (Docs/keyless.md). Never both in one request: Google refuses the mix.
public enum GeminiCredential {
    case apiKey(SecretBytes)
    case accessToken(any AccessTokenSource)
}

/// A Gemini REST client. It holds the key only as `SecretBytes` and sends it only in the
/// `x-goog-api-key` header (a token only in `Authorization: Bearer`); it never writes to a terminal.
public final class GeminiClient {
    public let configuration: ClientConfiguration
    public var errors: ErrorMapper
    private let credential: GeminiCredential
    private let transport: any HTTPTransport

    public convenience init(configuration: ClientConfiguration, apiKey: SecretBytes, errors: ErrorMapper, transport: any HTTPTransport = CurlTransport()) {
        self.init(configuration: configuration, credential: .apiKey(apiKey), errors: errors, transport: transport)
    }

    public init(configuration: ClientConfiguration, credential: GeminiCredential, errors: ErrorMapper, transport: any HTTPTransport = CurlTransport()) {
        self.configuration = configuration
        self.credential = credential
        self.errors = errors
        self.transport = transport
    }

    /// The credential's header for the next request, and `x-goog-user-project` for a user's token.
    func authentication() throws -> (header: HTTPRequest.SecretHeader, headers: [String]) {
        switch credential {
        case .apiKey(let key): return (.init(prefix: "x-goog-api-key: ", value: key), [])
        case .accessToken(let source):
            let bearer: BearerCredential
            do { bearer = try source.current() } catch {
                throw GeminiError(category: error.network ? .network : .refused, message: error.message, hint: error.hint, cause: .status("NO_ACCESS_TOKEN"))
            }
            return (GoogleExchange.bearer(bearer.token), bearer.userProject.map { ["x-goog-user-project: " + $0] } ?? [])
        }
    }

    /// Starts loading the network library while the caller resolves the key and settings.
    public static func prepareNetwork() { CurlTransport.preload() }

    /// Before the process exits: a load that `prepareNetwork` began must not be cut off by
    /// exit() (a chat whose input ends at once crashed about one time in twenty).
    public static func settleNetwork() { CurlTransport.settlePreload() }

    /// `models/NAME` for a bare name; names that could alter the URL are refused.
    public static func modelResource(_ name: String) throws -> String {
        let bad = name.isEmpty || name.contains("..") || name.contains { "?&#% \t\n".contains($0) }
        guard !bad else { throw GeminiError(category: .refused, message: "'\(name)' is not a valid model name", cause: .invalidModel) }
        return name.contains("/") ? name : "models/" + name
    }

    func url(_ path: String) -> String { "\(configuration.endpoint)/\(configuration.apiVersion)/\(path)" }

    /// The response header that names the service tier that served a request (Standard, Flex,
    /// Priority, Batch): a Priority request over its limit is served, and billed, at Standard.
    public static let serviceTierHeader = "x-gemini-service-tier"

    /// A request with the key in its header (never in the URL).
    func httpRequest(_ method: String, _ url: String, body: [UInt8]?) throws -> HTTPRequest {
        let (credential, extra) = try authentication()
        var request = HTTPRequest(method: method, target: .plain(url), headers: ["Content-Type: application/json", "Accept: */*"] + extra,
                                  secretHeader: credential, body: body.map { .plain($0) } ?? .none,
                                  idleTimeout: configuration.timeout)
        request.capturedHeader = Self.serviceTierHeader
        return request
    }

    /// An HTTP error answer: the error to show, and what the retry policy weighs.
    func failure<T>(_ status: Int, _ body: [UInt8], retryAfter: Double?, errors: ErrorMapper) -> Attempt<T> {
        let envelope = GoogleStatus.decode(body)
        let error = errors.apiError(status: status, envelope: envelope)
        return .failed(error, .answer(error.status ?? status, envelope, retryAfter: retryAfter))
    }

    // MARK: Streaming

    /// No reply is larger: Gemini's longest output is well under 1 MiB of events, and a
    /// server that sends more (a gigabyte, an endless flood) is cut off with memory bounded.
    static let maxStreamBytes = 16 << 20

    /// Streams a reply with `:streamGenerateContent?alt=sse`, retrying failures that happen
    /// before any text arrived. Thought parts are skipped. A reply that ended with a problem is
    /// thrown as `CutReply`.
    public func streamGenerateContent(model: String, request: GenerateContentRequest, handlers: StreamHandlers) throws -> ChatReply {
        let errors = self.errors.about(model)
        let body = try encode(request)
        let target = url(try Self.modelResource(model) + ":streamGenerateContent?alt=sse")
        return try withRetries(handlers: handlers) { () throws -> Attempt<ChatReply> in
            let attempt = StreamAttempt(errors: errors, handlers: handlers)
            let (outcome, tier) = transport.performCapturing(
                try httpRequest("POST", target, body: body),
                onData: { status, bytes in attempt.take(status, bytes) },
                onTick: {
                    handlers.onTick()
                    return handlers.isCancelled()
                })

            attempt.assembly.reply.serviceTier = tier
            var result = attempt.assembly.finish()
            switch outcome {
            case .cancelled:
                result.interrupted = true
                result.finish = FinishReason(gemini: result.finishName, blockReason: nil)
                return .done(result)
            case .libraryMissing, .transportError, .connectionRefused, .idleTimeout, .refusedHeader:
                return try transportFailure(outcome, anyText: !result.text.isEmpty)
            case .complete(let status, let retryAfter, _), .aborted(let status, let retryAfter):
                if status != 200 { return failure(status, attempt.errorBody, retryAfter: retryAfter, errors: errors) }
                attempt.handle(attempt.parser.finish(), unterminated: true)
                result = attempt.assembly.finish()
                if attempt.streamError == nil, !attempt.parser.extra.isEmpty {
                    // A bare JSON error after the events is Google's mid-stream failure; anything else is not Gemini.
                    attempt.streamError = GoogleStatus.decode(attempt.parser.extra).map { attempt.googleFailure($0, status: 500) }
                        ?? GeminiError(category: .network, message: "the server's answer is not a Gemini event stream", cause: .badStream)
                }
                if attempt.streamError == nil, attempt.eventCount == 0 {
                    attempt.streamError = GeminiError(category: .network, message: "the server ended the stream without a reply", cause: .emptyStream)
                }
                if let streamError = attempt.streamError { return .failed(streamError, result.text.isEmpty ? attempt.streamFailure : .final) }
                result.finish = FinishReason(gemini: result.finishName, blockReason: attempt.blockReason)
                if let problem = errors.finishProblem(result.finish, finishMessage: attempt.finishMessage,
                                                      thoughtTokens: result.usage?.thinkingTokens, anyText: !result.text.isEmpty) {
                    throw CutReply(failure: problem, reply: result)
                }
                return .done(result)
            }
        }
    }

    // MARK: Unary calls

    /// One whole reply with `:generateContent`; one that ended with a problem is thrown as `CutReply`.
    public func generateContent(model: String, request: GenerateContentRequest, handlers: StreamHandlers) throws -> ChatReply {
        let body = try encode(request)
        let target = url(try Self.modelResource(model) + ":generateContent")
        let errors = self.errors.about(model)
        let (response, tier): (GenerateContentResponse, String?) = try callCapturing(method: "POST", url: target, body: body, handlers: handlers, errors: errors)
        let finishName = response.candidates?.first?.finishReason
        let blockReason = response.promptFeedback?.blockReason
        var assembly = ReplyAssembly()
        _ = assembly.add(response.candidates?.first?.content)
        assembly.note(response.candidates?.first)
        var result = assembly.finish()
        result.finish = FinishReason(gemini: finishName, blockReason: blockReason)
        result.finishName = finishName
        result.usage = response.usage
        result.modelVersion = response.modelVersion
        result.serviceTier = tier
        if let problem = errors.finishProblem(result.finish, finishMessage: response.candidates?.first?.finishMessage,
                                              thoughtTokens: result.usage?.thinkingTokens, anyText: !result.text.isEmpty) {
            throw CutReply(failure: problem, reply: result)
        }
        return result
    }

    /// Every model, following `nextPageToken` (at most 50 pages).
    public func listModels(handlers: StreamHandlers = StreamHandlers()) throws -> [ModelInfo] {
        try Pagination.collect(maxPages: 50, { (token: String?) throws(any Error) -> Pagination.Page<ModelInfo> in
            var target = url("models?pageSize=1000")
            if let token { target += "&pageToken=" + PercentEncoding.encode(token) }
            let page: ListModelsResponse = try call(method: "GET", url: target, body: nil, handlers: handlers)
            return Pagination.Page(page.models ?? [], next: page.nextPageToken)
        }, refuse: { _ in GeminiError(category: .network, message: "the server gave a page token again while listing the models; the list was not used", cause: .badJSON) })
    }

    /// Tokens in `request` for `model`, with `:countTokens`: the whole request (its system
    /// instruction, tools and generation config count too) as `generateContentRequest`, which
    /// names the model and carries `store` inside; Google refuses a `store` beside it.
    public func countTokens(model: String, request: GenerateContentRequest, handlers: StreamHandlers = StreamHandlers()) throws -> Int {
        let resource = try Self.modelResource(model)
        var whole = request
        whole.model = resource
        let target = url(resource + ":countTokens")
        let response: CountTokensResponse = try call(method: "POST", url: target, body: try encode(CountTokensRequest(generateContentRequest: whole)),
                                                     handlers: handlers, errors: errors.about(model))
        return response.totalTokens ?? 0
    }

    /// One model's facts (its token limits), with `models.get`.
    public func getModel(_ model: String, handlers: StreamHandlers = StreamHandlers()) throws -> ModelInfo {
        try call(method: "GET", url: url(try Self.modelResource(model)), body: nil, handlers: handlers, errors: errors.about(model))
    }

    private func call<Response: Decodable>(method: String, url: String, body: [UInt8]?, handlers: StreamHandlers, errors: ErrorMapper? = nil) throws -> Response {
        try callCapturing(method: method, url: url, body: body, handlers: handlers, errors: errors).0
    }

    /// No unary answer is larger (a models list is about 100 KiB).
    static let maxUnaryAnswer = 64 << 20

    /// The answer and the service tier header that came with it, by Google's one JSON call.
    private func callCapturing<Response: Decodable>(method: String, url: String, body: [UInt8]?, handlers: StreamHandlers,
                                                    errors: ErrorMapper? = nil) throws -> (Response, String?) {
        let errors = errors ?? self.errors
        let notJSON = GeminiError(category: .network, message: "the server's answer is not valid JSON", cause: .badJSON)
        let (credential, extra) = try authentication()
        let request = GoogleExchange.JSONRequest(method, .plain(url), headers: extra, credential: credential,
                                                 body: body.map { .plain($0) } ?? .none, capturing: Self.serviceTierHeader, onTick: {
                                                     handlers.onTick()
                                                     return handlers.isCancelled()
                                                 })
        let exchange = GoogleExchange(transport: transport, timeout: configuration.timeout, maxAnswer: Self.maxUnaryAnswer)
        let answer = try exchange.call(request, policy: retryPolicy, unanswered: { (failure: GoogleExchange.TransportFailure) throws -> (any Error, RetryPolicy.Failure) in
            if failure.tooLarge { throw notJSON }
            if failure.outcome == .cancelled { throw GeminiError(category: .interrupted, message: "interrupted", cause: .interrupted) }
            let attempt: Attempt<Void> = try transportFailure(failure.outcome, anyText: false)
            guard case .failed(let error, let weight) = attempt else { throw notJSON }
            return (error, weight)
        }, malformed: { response in response.status == 200 ? notJSON : nil }, refused: { response, envelope in
            let error = errors.apiError(status: response.status, envelope: envelope)
            return (error, .answer(error.status ?? response.status, envelope, retryAfter: response.retryAfter))
        }, wait: retryWait(handlers))
        guard let decoded = answer.json.decode(Response.self) else { throw notJSON }
        return (decoded, answer.captured)
    }

    /// A transfer that produced no HTTP answer: a retryable connection failure, or a final one.
    private func transportFailure<T>(_ outcome: HTTPOutcome, anyText: Bool) throws -> Attempt<T> {
        switch outcome {
        case .transportError(let message):
            return .failed(GeminiError(category: .network, message: "the connection to \(configuration.endpoint) failed: \(message)", cause: .connection),
                           anyText ? .final : .noAnswer)
        case .connectionRefused(let message):
            let failure = GeminiError(category: .network, message: "the connection to \(configuration.endpoint) failed: \(message)", cause: .connection)
            // On loopback a refusal means nothing listens there, and waiting will not start it.
            guard EndpointURL(configuration.endpoint)?.isLoopback == true else { return .failed(failure, anyText ? .final : .noAnswer) }
            throw GeminiError(category: .network, message: "the connection to \(configuration.endpoint) was refused: nothing listens there (\(message))",
                              hint: "start the server at that address, or check the 'endpoint' setting", cause: .connectionRefused)
        case .refusedHeader:
            throw GeminiError(category: .refused, message: "the API key holds a line break or a character outside printable ASCII, which would reach the server as extra headers; nothing was sent",
                              hint: "store the key again as one line", cause: .malformedKey)
        case .idleTimeout:
            throw GeminiError(category: .network, message: "no data from the server for \(Int(configuration.timeout)) s (timeout)",
                              hint: "raise the limit with --timeout SECONDS or the 'timeout' setting", cause: .timeout)
        default:
            throw GeminiError(category: .network, message: "libcurl (libcurl.so.4) cannot be loaded", hint: "install it: apt-get install libcurl4", cause: .libraryMissing)
        }
    }

    // MARK: Retry

    enum Attempt<T> {
        case done(T)
        /// A failure, and what the retry policy weighs (`.final` once text reached the caller).
        case failed(GeminiError, RetryPolicy.Failure)
    }

    /// Connection failures (but a refusal on loopback), 429 (never a daily quota) and 500,
    /// 502, 503, 504 are tried again, with exponential backoff and ±25 % jitter.
    var retryPolicy: RetryPolicy {
        RetryPolicy(maxAttempts: configuration.maxAttempts, retryOn: [.noAnswer, .rateLimit, .transientServerErrors],
                    backoff: .exponential(initial: configuration.initialBackoff, max: configuration.maxBackoff, jitter: true),
                    maxServerDelay: configuration.maxRetryInfoDelay)
    }

    func withRetries<T>(handlers: StreamHandlers, _ body: () throws -> Attempt<T>) throws -> T {
        try retryPolicy.run({ (_: Int) throws(any Error) -> RetryPolicy.Step<T, any Error> in
            switch try body() {
            case .done(let value): return .done(value)
            case .failed(let error, let failure): return .failed(error, failure)
            }
        }, wait: retryWait(handlers))
    }

    /// The wait between attempts: a notice, then a sleep a cancel cuts short.
    func retryWait(_ handlers: StreamHandlers) -> (Double, Int, any Error) throws -> Void {
        { (delay: Double, attempt: Int, error: any Error) throws in
            handlers.onRetry(RetryNotice(delay: delay, attempt: attempt, reason: Self.shortReason(error as? GeminiError)))
            if Self.sleep(delay, onTick: handlers.onTick, isCancelled: handlers.isCancelled) {
                throw GeminiError(category: .interrupted, message: "interrupted while waiting to retry", cause: .interrupted)
            }
        }
    }

    /// "503 UNAVAILABLE: The model is overloaded" for a retry notice.
    static func shortReason(_ error: GeminiError?) -> String {
        guard let error else { return "" }
        guard let status = error.status else { return error.reason }
        var text = "\(status) \(error.reason)"
        if let first = error.serverMessage?.split(separator: ".").first, !first.isEmpty { text += ": " + first.prefix(80) }
        return text
    }

    /// Sleeps in short slices, ticking every 100 ms so a countdown can be drawn; returns
    /// true when cancelled.
    static func sleep(_ seconds: Double, onTick: () -> Void = {}, isCancelled: () -> Bool) -> Bool {
        var remaining = seconds
        var slices = 0
        while remaining > 0 {
            if isCancelled() { return true }
            let slice = min(remaining, 0.05)
            Clock.sleep(slice)
            remaining -= slice
            slices += 1
            if slices % 2 == 0 { onTick() }
        }
        return isCancelled()
    }

    private func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        Array(try JSONEncoder().encode(value))
    }
}
