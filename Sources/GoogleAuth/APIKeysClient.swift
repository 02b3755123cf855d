import FoundationEssentials
import Glibc
import GoogleHTTP
import GoogleKeys
import SystemIO
import VaultCore

/// A key of the API Keys service as `get` and `list` answer it (never with its string).
public struct GoogleKey: Decodable, Sendable, Equatable {
    public let name: String
    public let uid: String?
    public let displayName: String?
    public let createTime: String?
    public let deleteTime: String?
    public let etag: String?
    public let restrictions: JSONValue?
    public let serviceAccountEmail: String?
    public let annotations: [String: String]?

    /// `projects/P/locations/global/keys/ID` → P (Google answers with the project number).
    public var project: String? { GoogleKeyResource(name)?.project }

    public var keyId: String { GoogleKeyResource(name)?.keyId ?? name }
    /// `createTime` (RFC 3339, `2021-03-23T17:39:46.721099Z`) as Unix seconds.
    public var created: Int64? { createTime.flatMap(GoogleKey.unixSeconds) }

    static func unixSeconds(_ text: String) -> Int64? {
        let digits = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int32? {
            guard range.upperBound <= digits.count else { return nil }
            var value: Int32 = 0
            for byte in digits[range] {
                guard byte >= 0x30 && byte <= 0x39 else { return nil }
                value = value * 10 + Int32(byte - 0x30)
            }
            return value
        }
        guard digits.count >= 20, digits[4] == 0x2D, digits[7] == 0x2D, digits[10] == 0x54, digits[13] == 0x3A, digits[16] == 0x3A,
              digits.last == 0x5A, let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19) else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        return seconds < 0 ? nil : Int64(seconds)
    }
    public var isDeleted: Bool { !(deleteTime ?? "").isEmpty }
    /// No restriction at all: any API, from anywhere.
    public var isUnrestricted: Bool { restrictions == nil || restrictions == .null || restrictions!.isEmptyObject }
}

/// A long-running operation; a finished create carries the new key's string, taken out into
/// secret memory.
public struct GoogleOperation {
    struct Wire: Decodable {
        let name: String?
        let done: Bool?
        let error: GoogleStatus?
    }

    public let name: String
    public let done: Bool
    /// The google.rpc.Status the operation ended with, if it failed.
    public let error: GoogleStatus?
    /// The key in the finished operation's response (name, and the rest as `get` answers).
    public let key: GoogleKey?
    public let keyString: SecretBytes?
}

/// Google's API Keys service (apikeys.googleapis.com v2), with an access token. Every call
/// retries connection failures, 429 and 5xx with backoff; a refusal is a `GoogleError` with
/// Google's reason and a message that says what to do.
public final class APIKeysClient {
    public let endpoint: String
    let transport: any HTTPTransport
    let token: AccessToken
    /// `x-goog-user-project`, for user credentials.
    public var quotaProject: String?
    let timeout: Double
    let maxAttempts: Int
    /// Seconds between the first retries; doubles up to `maxBackoff`.
    let backoff: Double
    let maxBackoff: Double
    /// What retries and operation waits sleep on.
    let clock: WaitClock

    public init(endpoint: String, token: AccessToken, quotaProject: String?, timeout: Double, retries: Int, backoff: Double = 1, maxBackoff: Double = 16,
                transport: any HTTPTransport = CurlTransport(), clock: WaitClock = .standard) {
        self.endpoint = endpoint
        self.transport = transport
        self.token = token
        self.quotaProject = quotaProject
        self.timeout = timeout
        self.maxAttempts = retries + 1
        self.backoff = backoff
        self.maxBackoff = maxBackoff
        self.clock = clock
    }

    // MARK: Calls

    /// The key's resource name (`keys:lookupKey`). The key string goes in a query parameter,
    /// by Google's design: this is the only request that carries one, and it is never logged.
    public func lookup(_ key: SecretBytes) throws(GoogleError) -> String {
        struct Answer: Decodable { let name: String? }
        let url = PercentEncoding.join([.literal(endpoint + "/v2/keys:lookupKey?keyString="), .encoded(key)])
        let body = try call("GET", .secret(url), what: "looking the key up")
        guard let answer = body.decode(Answer.self), let name = answer.name, GoogleKeyRecord(resource: name, serviceAccount: "").isWellFormed else {
            throw GoogleError(.refused, "the API Keys service answered the lookup with no key name")
        }
        return name
    }

    public func get(_ name: String) throws(GoogleError) -> GoogleKey {
        let body = try call("GET", .plain(url(name)), what: "reading \(name)")
        guard let key = body.decode(GoogleKey.self) else { throw GoogleError(.refused, "the API Keys service answered with no key for \(name)") }
        return key
    }

    /// Every key of a project, the soft-deleted ones too when `showDeleted`.
    public func list(project: String, showDeleted: Bool) throws(GoogleError) -> [GoogleKey] {
        struct Page: Decodable { let keys: [GoogleKey]?; let nextPageToken: String? }
        let what = "listing the keys of project \(project)"
        return try Pagination.collect(maxPages: 100, { (token: String?) throws(GoogleError) -> Pagination.Page<GoogleKey> in
            var target = url(GoogleKeyResource.collection(project: project)) + "?pageSize=300&showDeleted=\(showDeleted)"
            if let token { target += "&pageToken=" + PercentEncoding.encode(token) }
            let body = try call("GET", .plain(target), what: what)
            guard let page = body.decode(Page.self) else { throw GoogleError(.refused, "the API Keys service answered the list with something else") }
            return Pagination.Page(page.keys ?? [], next: page.nextPageToken)
        }, refuse: { _ in GoogleError(.badData, "the API Keys service gave a page token again while \(what); the list was not used") })
    }

    /// Starts a create; the answer is an operation that may end in an error later.
    public func create(project: String, keyId: String, displayName: String, restrictions: JSONValue?, serviceAccount: String?,
                       annotations: [String: String]) throws(GoogleError) -> GoogleOperation {
        struct Body: Encodable {
            let displayName: String
            let restrictions: JSONValue?
            let serviceAccountEmail: String?
            let annotations: [String: String]
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let body = try? encoder.encode(Body(displayName: displayName, restrictions: restrictions, serviceAccountEmail: serviceAccount, annotations: annotations)) else {
            throw GoogleError(.refused, "could not write the create request")
        }
        let target = url(GoogleKeyResource.collection(project: project)) + "?keyId=" + PercentEncoding.encode(keyId)
        let name = GoogleKeyResource(project: project, keyId: keyId).name
        return try retryPolicy(retryOn: [.noAnswer]).run({ (_: Int) throws(GoogleError) -> RetryPolicy.Step<GoogleOperation, GoogleError> in
            do throws(GoogleError) {
                return .done(try operation(try call("POST", .plain(target), body: Array(body), what: "creating key \(keyId)", retries: .unlessPerformed)))
            } catch where error.mayHaveBeenPerformed {
                // Google may have made the key and lost the answer: a second create of the same id
                // would fail as a duplicate and leave the first unnoticed, so the id is looked up.
                if let made = try? get(name), !made.isDeleted {
                    return .done(GoogleOperation(name: "", done: true, error: nil, key: made, keyString: nil))
                }
                return .failed(error, .noAnswer)
            }
        }, wait: { (delay: Double, _: Int, _: GoogleError) throws(GoogleError) in clock.sleep(delay) })
    }

    /// The key's string (`getKeyString`), when the finished create did not carry it.
    public func keyString(_ name: String) throws(GoogleError) -> SecretBytes {
        let body = try call("GET", .plain(url(name) + "/keyString"), what: "reading the string of \(name)")
        guard let key = body.secrets["keyString"], key.count > 0 else { throw GoogleError(.refused, "the API Keys service answered getKeyString with no key") }
        return key
    }

    public func delete(_ name: String, etag: String?) throws(GoogleError) -> GoogleOperation {
        let target = url(name) + (etag.map { "?etag=" + PercentEncoding.encode($0) } ?? "")
        return try operation(try call("DELETE", .plain(target), what: "deleting \(name)"))
    }

    public func undelete(_ name: String) throws(GoogleError) -> GoogleOperation {
        try operation(try call("POST", .plain(url(name) + ":undelete"), body: Array("{}".utf8), what: "undeleting \(name)"))
    }

    public func poll(_ operationName: String) throws(GoogleError) -> GoogleOperation {
        try operation(try call("GET", .plain(url(operationName)), what: "following \(operationName)"))
    }

    /// Polls until the operation is done, with backoff (0.5 s doubling to 8 s), for at most
    /// `limit` seconds. An operation that ended with an error is that error: a create that
    /// answered 200 may still have failed.
    public func wait(_ started: GoogleOperation, what: String, limit: Double = 120, progress: (Double) -> Void = { _ in }) throws(GoogleError) -> GoogleOperation {
        var current = started
        let polling = PollPolicy(backoff: .exponential(initial: 0.5, max: 8, jitter: false), limit: limit, clock: clock)
        let operation = try polling.run({ (number: Int, elapsed: Double) throws(GoogleError) -> GoogleOperation? in
            if number > 1 {
                progress(elapsed)
                current = try poll(current.name)
            }
            return current.done ? current : nil
        }, gaveUp: { _ in
            GoogleError(.network, "\(what): Google's operation \(current.name) was not done after \(Int(limit)) s", reason: .stillPending)
        })
        if let error = operation.error { throw Self.failure(of: error, what: what) }
        return operation
    }

    /// An operation that ended in an error: ALREADY_EXISTS for an id in use, PERMISSION_DENIED or
    /// FAILED_PRECONDITION (or the policy's name in the message) for bound keys forbidden.
    static func failure(of error: GoogleStatus, what: String) -> GoogleError {
        let code = error.code ?? 0
        let canonical = error.operationCode
        var hint: String?
        if canonical == .alreadyExists { hint = "a key with this id exists (or was deleted less than 30 days ago); nothing was created" }
        if canonical == .permissionDenied || canonical == .failedPrecondition || error.says(.boundKeysForbidden) {
            hint = GoogleRefusal.boundKeysForbiddenHint
        }
        return GoogleError(.refused, "\(what) failed at Google: code \(code), \(Redaction.redact(error.message ?? "no message"))", hint: hint,
                           reason: canonical == .alreadyExists ? .status(.alreadyExists) : .operationCode(code))
    }

    // MARK: Plumbing

    func url(_ path: String) -> String { endpoint + "/v2/" + path }

    func operation(_ body: SecretJSON) throws(GoogleError) -> GoogleOperation {
        struct KeyWire: Decodable { let response: GoogleKey? }
        guard let wire = body.decode(GoogleOperation.Wire.self), let name = wire.name else {
            throw GoogleError(.refused, "the API Keys service answered with something that is not an operation")
        }
        let key = body.decode(KeyWire.self)?.response
        let keyString = body.secrets["keyString"].flatMap { $0.count > 0 ? $0 : nil }
        if let keyString { Redaction.register(keyString) }
        return GoogleOperation(name: name, done: wire.done ?? false, error: wire.error, key: key?.name == nil ? nil : key, keyString: keyString)
    }

    enum Retries {
        /// Every failure that may pass: connection failures, 429 and 5xx.
        case always
        /// Only 429, which Google answers before doing anything; a call that must not run twice.
        case unlessPerformed
    }

    /// Backoff from `backoff` doubling to `maxBackoff`, `maxAttempts` in all.
    func retryPolicy(retryOn: RetryPolicy.RetryOn) -> RetryPolicy {
        RetryPolicy(maxAttempts: maxAttempts, retryOn: retryOn, backoff: .exponential(initial: backoff, max: maxBackoff, jitter: false))
    }

    /// One call with retries; the answer with its secret fields taken out.
    func call(_ method: String, _ target: HTTPRequest.Target, body: [UInt8]? = nil, what: String,
              retries: Retries = .always) throws(GoogleError) -> SecretJSON {
        var headers: [String] = []
        if token.source.isUserCredential, let quotaProject { headers.append("x-goog-user-project: " + quotaProject) }
        return try GoogleExchange(transport: transport, timeout: timeout).call(
            method, target, body: body.map { .plain($0) } ?? .none, headers: headers, bearer: token.token,
            policy: retryPolicy(retryOn: retries == .always ? [.noAnswer, .rateLimit, .serverErrors] : [.rateLimit]), clock: clock,
            service: "the API Keys service", setting: "apikeys_endpoint", what: what, secretFields: ["keyString"],
            refusal: { status, envelope in refusal(status, envelope, what: what) })
    }

    func refusal(_ status: Int, _ error: GoogleStatus?, what: String) -> GoogleError {
        GoogleRefusal(service: .apiKeys(userCredential: token.source.isUserCredential), status: status, envelope: error).error(what: what)
    }
}
