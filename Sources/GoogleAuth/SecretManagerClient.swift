import FoundationEssentials
import GoogleHTTP
import GoogleKeys
import Synchronization
import SystemIO
import VaultCore

/// A secret in Secret Manager named as `gsm://projects/P/secrets/S[/versions/N]` (the latest
/// version when none is named).
public struct SecretReference: Sendable, Equatable, CustomStringConvertible {
    public let project: String
    public let secret: String
    /// A version number, or nil for `latest`.
    public let version: UInt64?

    public static let scheme = "gsm://"

    public init?(parsing text: String) {
        guard text.hasPrefix(Self.scheme) else { return nil }
        let parts = text.dropFirst(Self.scheme.count).split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 4 || parts.count == 6, parts[0] == "projects", parts[2] == "secrets",
              Self.isName(parts[1], extra: "-:."), Self.isName(parts[3], extra: "-_") else { return nil }
        if parts.count == 6 {
            guard parts[4] == "versions", let number = UInt64(parts[5]), number > 0, String(number) == parts[5] else { return nil }
            version = number
        } else {
            version = nil
        }
        project = parts[1]
        secret = parts[3]
    }

    /// Letters, digits and `extra`, 1 to 255 of them, beginning with a letter or digit: nothing
    /// a URL path would need to escape, and never `.` or `..`.
    private static func isName(_ text: String, extra: String) -> Bool {
        func plain(_ scalar: Unicode.Scalar) -> Bool { scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar)) }
        guard let first = text.unicodeScalars.first, plain(first), text.count <= 255 else { return false }
        return text.unicodeScalars.allSatisfy { plain($0) || extra.unicodeScalars.contains($0) }
    }

    /// The same secret, version `number`.
    public func version(_ number: UInt64) -> SecretReference {
        SecretReference(project: project, secret: secret, version: number)
    }

    private init(project: String, secret: String, version: UInt64?) {
        self.project = project
        self.secret = secret
        self.version = version
    }

    /// The version a name Google gave is, when the whole name is a version of this secret:
    /// `projects/P/secrets/S/versions/N`, P being this project's id or (Google answers with it)
    /// a project number; nil for anything else, another project's secret included.
    public func versionNumber(inName name: String) -> UInt64? {
        guard let parsed = SecretVersionName(name), parsed.secret == secret else { return nil }
        let projectIsNumber = project.allSatisfy(\.isASCII) && project.allSatisfy(\.isNumber)
        guard parsed.project == project || (parsed.namesProjectNumber && !projectIsNumber) else { return nil }
        return parsed.version
    }

    /// `projects/P/secrets/S`.
    public var resource: String { "projects/\(project)/secrets/\(secret)" }
    public var versionPath: String { resource + "/versions/" + (version.map(String.init) ?? "latest") }
    public var description: String { Self.scheme + resource + (version.map { "/versions/\($0)" } ?? "") }
}

/// What a fetched value must be: a Google API key (a linked key), or printable text of at most
/// 65,536 bytes, one line unless `multiline` (a linked secret for another tool).
public enum FetchedValueCheck: Sendable, Equatable {
    case googleKey
    case text(multiline: Bool)
}

/// A secret's value as Secret Manager gave it, checked.
public struct FetchedSecret {
    public let value: SecretBytes
    /// The version the value is, also when `latest` was asked for.
    public let version: UInt64
}

/// Secret Manager's REST API (v1) for reading a secret's version: the same credentials,
/// retries and error envelope as the API Keys service.
public final class SecretManagerClient {
    /// Secret Manager's own limit on a payload.
    public static let payloadLimit = 65_536

    let endpoint: String
    let transport: any HTTPTransport
    let token: AccessToken
    let timeout: Double
    let policy: RetryPolicy
    let clock: WaitClock
    /// The project number Google first answered with, by the project id a reference names.
    private let projectNumbers = Mutex<[String: String]>([:])

    public init(endpoint: String, token: AccessToken, timeout: Double, retries: Int, transport: any HTTPTransport = CurlTransport(), clock: WaitClock = .standard) {
        self.endpoint = endpoint
        self.transport = transport
        self.token = token
        self.timeout = timeout
        self.policy = RetryPolicy(maxAttempts: retries + 1, retryOn: [.noAnswer, .rateLimit, .serverErrors], backoff: .exponential(initial: 1, max: 16, jitter: false))
        self.clock = clock
    }

    /// The version's value (`versions.access`), checked: its CRC-32C, its size, one line that
    /// looks like a key. Google's answer never reaches an ordinary string.
    public func accessKey(_ reference: SecretReference) throws(GoogleError) -> FetchedSecret {
        try access(reference, check: .googleKey)
    }

    /// The version's value, checked: its CRC-32C, its size, and what `check` asks of it.
    public func access(_ reference: SecretReference, check: FetchedValueCheck) throws(GoogleError) -> FetchedSecret {
        struct Answer: Decodable {
            struct Payload: Decodable { let dataCrc32c: String? }
            let name: String?
            let payload: Payload?
        }
        let what = "reading \(reference.versionPath)"
        let body = try GoogleExchange(transport: transport, timeout: timeout).call(
            "GET", .plain(endpoint + "/v1/" + reference.versionPath + ":access"), body: .none, headers: [], bearer: token.token, policy: policy, clock: clock,
            service: "Secret Manager", setting: "secretmanager_endpoint", what: what, secretFields: ["data"],
            refusal: { status, envelope in refusal(status, envelope, reference: reference, what: what) })
        guard let answer = body.decode(Answer.self), let name = answer.name, let encoded = body.secrets["data"],
              let crcText = answer.payload?.dataCrc32c, let crc = UInt32(crcText) else {
            throw GoogleError(.badData, "Secret Manager answered \(what) without a payload, a version or its checksum")
        }
        guard let version = version(inName: name, of: reference) else {
            throw GoogleError(.badData, "Secret Manager answered \(what) with the version '\(GoogleStatus.shown(String(name.prefix(200))))', which is not a version of \(reference.resource); the key was not used")
        }
        let named = "\(reference.resource), version \(version)"
        if let pinned = reference.version, pinned != version {
            throw GoogleError(.badData, "Secret Manager answered version \(version) when version \(pinned) of \(reference.resource) was asked for; the key was not used")
        }
        guard encoded.count <= (Self.payloadLimit + 2) / 3 * 4 + 4, let value = Sodium.secret(base64: encoded) else {
            throw GoogleError(.badData, "the value of \(named) is not base64 of at most 64 KiB; the key was not used")
        }
        guard value.withUnsafeBytes({ CRC32C.checksum($0) }) == crc else {
            throw GoogleError(.badData, "the value of \(named) does not match its checksum (dataCrc32c): damaged on the way; the key was not used")
        }
        Redaction.register(value)
        let key = value.trimmingWhitespace()
        if case .text(let multiline) = check {
            if let problem = ToolSecret.problem(with: key, multiline: multiline) {
                throw GoogleError(.badData, "the value of \(named) cannot be a secret: \(problem); the secret was not stored",
                                  hint: multiline ? nil : "a multi-line value (a PEM block) needs --multiline")
            }
            return FetchedSecret(value: key, version: version)
        }
        guard key.count > 0, key.isHeaderSafe else {
            throw GoogleError(.badData, "the value of \(named) is not one line of key (empty, more than one line, or a space or control character inside); the key was not used",
                              hint: "store the key alone: printf %s \"$KEY\" | gcloud secrets versions add \(reference.secret) --data-file=-")
        }
        guard key.googleKeyKind != .other else {
            throw GoogleError(.badData, "the value of \(named) does not look like a Google API key (AQ.… or AIza…); the key was not used")
        }
        return FetchedSecret(value: key, version: version)
    }

    func refusal(_ status: Int, _ error: GoogleStatus?, reference: SecretReference, what: String) -> GoogleError {
        GoogleRefusal(service: .secretManager(reference, principal: token.source.label), status: status, envelope: error).error(what: what)
    }
}

/// A secret's metadata that rotation reads: its etag (for a conditional patch), its
/// annotations (the rotator's claim) and its rotation period when Google returns it.
public struct SecretInfo: Sendable, Equatable {
    public let etag: String
    public let annotations: [String: String]
    /// `rotation.rotationPeriod` in seconds; documented as input only, so often absent.
    public let rotationPeriod: Double?
    /// Google's clock when it answered (the Date header, Unix seconds), if the answer had one.
    public var googleTime: Int64?
}

/// One version of a secret, as `versions.list` gives it.
public struct SecretVersionInfo: Sendable, Equatable {
    public let number: UInt64
    /// `ENABLED`, `DISABLED` or `DESTROYED`.
    public let state: String
    /// Unix seconds.
    public let created: Int64?
}

extension SecretManagerClient {
    /// A patch whose etag no longer matches: another writer (another rotator) came first.
    public static let etagConflict = GoogleReason.etagConflict

    private struct VersionWire: Decodable { let name: String?; let state: String?; let createTime: String? }

    private struct SecretWire: Decodable {
        struct Rotation: Decodable { let rotationPeriod: String? }
        let etag: String?
        let annotations: [String: String]?
        let rotation: Rotation?

        func info(at date: Int64?) -> SecretInfo? {
            guard let etag else { return nil }
            let period = rotation?.rotationPeriod.flatMap { $0.hasSuffix("s") ? Double($0.dropLast()) : nil }
            return SecretInfo(etag: etag, annotations: annotations ?? [:], rotationPeriod: period, googleTime: date)
        }
    }

    /// `secrets.get`.
    public func secret(_ reference: SecretReference) throws(GoogleError) -> SecretInfo {
        let answer = try call("GET", "/v1/" + reference.resource, what: "reading \(reference.resource)", reference: reference)
        guard let info = answer.json.decode(SecretWire.self)?.info(at: answer.date) else { throw GoogleError(.badData, "Secret Manager answered reading \(reference.resource) without an etag") }
        return info
    }

    /// `secrets.patch` of the annotations, only if the secret still has `etag`: of several
    /// writers with the same etag exactly one succeeds; the others get `etagConflict`.
    public func annotate(_ reference: SecretReference, _ annotations: [String: String], etag: String) throws(GoogleError) -> SecretInfo {
        struct Patch: Encodable { let annotations: [String: String]; let etag: String }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let json = try? encoder.encode(Patch(annotations: annotations, etag: etag)) else { throw GoogleError(.badData, "the annotations could not be encoded") }
        let answer: GoogleExchange.Dated
        do {
            answer = try call("PATCH", "/v1/" + reference.resource + "?updateMask=annotations", body: .plain(Array(json)), what: "claiming \(reference.resource)",
                            reference: reference, retryOn: [.rateLimit])
        } catch where error.status == 409 || (error.status == 400 && (error.isStatus(.failedPrecondition) || error.isStatus(.aborted))) {
            throw GoogleError(.refused, "\(reference.resource) changed meanwhile (its etag is no longer \(etag))", status: error.status, reason: Self.etagConflict)
        }
        guard let info = answer.json.decode(SecretWire.self)?.info(at: answer.date) else { throw GoogleError(.badData, "Secret Manager answered the patch of \(reference.resource) without an etag") }
        return info
    }

    /// `secrets.addVersion` with `value` (sent from secret memory, with its CRC-32C); the new
    /// version's number. Retried only after 429, which Google answers before doing anything.
    public func addVersion(_ reference: SecretReference, value: SecretBytes) throws(GoogleError) -> UInt64 {
        struct Answer: Decodable { let name: String? }
        let crc = value.withUnsafeBytes { CRC32C.checksum($0) }
        let encoded = Sodium.base64(secret: value)
        let prefix = Array("{\"payload\": {\"data\": \"".utf8), suffix = Array("\", \"dataCrc32c\": \"\(crc)\"}}".utf8)
        let request = SecretBytes(count: prefix.count + encoded.count + suffix.count)
        request.withUnsafeMutableBytes { out in
            out.copyBytes(from: prefix)
            encoded.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[prefix.count...]).copyMemory(from: $0) }
            UnsafeMutableRawBufferPointer(rebasing: out[(prefix.count + encoded.count)...]).copyBytes(from: suffix)
        }
        let body = try call("POST", "/v1/" + reference.resource + ":addVersion", body: .secret(request), what: "adding a version to \(reference.resource)",
                            reference: reference, retryOn: [.rateLimit]).json
        // The answer must name a version of this secret (by project id or number).
        guard let name = body.decode(Answer.self)?.name, let number = version(inName: name, of: reference) else {
            throw GoogleError(.badData, "Secret Manager answered the new version of \(reference.resource) without its number")
        }
        return number
    }

    /// A `latest` answer newer than the version `known` is taken only when the secret has it:
    /// `versions.list` must show it (or, without that permission, the version asked for by
    /// number must hold the same value). One hostile or replayed answer with a huge version
    /// would otherwise be stored, and every genuine answer after it refused as a rollback.
    public func confirmNewer(_ fetched: FetchedSecret, than known: UInt64, _ reference: SecretReference) throws(GoogleError) {
        guard fetched.version > known else { return }
        let listed = Result { () throws(GoogleError) in try versions(reference, enabledOnly: false) }
        let found: Bool
        switch listed {
        case .success(let versions): found = versions.contains { $0.number == fetched.version && $0.state == "ENABLED" }
        case .failure(let error) where error.status == 403:
            let again = Result { () throws(GoogleError) in try accessKey(reference.version(fetched.version)) }
            switch again {
            case .success(let copy): found = copy.version == fetched.version && copy.value.isEqual(to: fetched.value)
            case .failure(let error) where error.category == .refused: found = false
            case .failure(let error): throw error
            }
        case .failure(let error): throw error
        }
        guard found else {
            throw GoogleError(.badData, "Secret Manager answered version \(fetched.version) of \(reference.resource), which the secret does not have (not among its enabled versions); the answer was not used",
                              hint: "a replayed or forged answer, or a proxy in the way: check secretmanager_endpoint and the network")
        }
    }

    /// `versions.enable` or `versions.disable`.
    public func setVersion(_ reference: SecretReference, _ number: UInt64, enabled: Bool) throws(GoogleError) {
        let verb = enabled ? "enable" : "disable"
        _ = try call("POST", "/v1/\(reference.resource)/versions/\(number):\(verb)", body: .plain(Array("{}".utf8)),
                     what: "\(enabled ? "enabling" : "disabling") version \(number) of \(reference.resource)", reference: reference)
    }

    /// `versions.list`, newest first, every page; only the enabled ones when `enabledOnly`.
    public func versions(_ reference: SecretReference, enabledOnly: Bool) throws(GoogleError) -> [SecretVersionInfo] {
        struct Page: Decodable {
            let versions: [VersionWire]?
            let nextPageToken: String?
        }
        let what = "listing the versions of \(reference.resource)"
        return try Pagination.collect(maxPages: 1_001, maxItems: 100_000, { (token: String?) throws(GoogleError) -> Pagination.Page<SecretVersionInfo> in
            var query = "?pageSize=100" + (enabledOnly ? "&filter=" + PercentEncoding.encode("state:ENABLED") : "")
            if let token { query += "&pageToken=" + PercentEncoding.encode(token) }
            let body = try call("GET", "/v1/\(reference.resource)/versions" + query, what: what, reference: reference).json
            guard let page = body.decode(Page.self) else { throw GoogleError(.badData, "Secret Manager answered the list of versions with a malformed body") }
            return Pagination.Page(try (page.versions ?? []).map { (version: VersionWire) throws(GoogleError) in try listed(version, reference) }, next: page.nextPageToken)
        }, refuse: { refusal in
            refusal == .tooManyItems ? GoogleError(.badData, "Secret Manager listed more than 100,000 versions")
                : GoogleError(.badData, "Secret Manager gave a page token again while \(what); the list was not used")
        })
    }

    /// One entry of `versions.list`, checked: the whole name, for an entry of another secret or
    /// project is not one of this secret's versions.
    private func listed(_ version: VersionWire, _ reference: SecretReference) throws(GoogleError) -> SecretVersionInfo {
        guard let name = version.name, let state = version.state else {
            throw GoogleError(.badData, "Secret Manager listed a version without its name or state")
        }
        guard let number = self.version(inName: name, of: reference) else {
            throw GoogleError(.badData, "Secret Manager listed '\(GoogleStatus.shown(String(name.prefix(200))))' among the versions of \(reference.resource), which is not one of them; the list was not used",
                              hint: "a replayed or forged answer, or a proxy in the way: check secretmanager_endpoint and the network")
        }
        return SecretVersionInfo(number: number, state: GoogleStatus.shown(state), created: version.createTime.flatMap(GoogleKey.unixSeconds))
    }

    /// The version a name Google gave is (`SecretReference.versionNumber(inName:)`), naming
    /// the same project number as every earlier answer of this client: a reference by project
    /// id is answered by number, and an answer naming another number is another project's.
    func version(inName name: String, of reference: SecretReference) -> UInt64? {
        guard let number = reference.versionNumber(inName: name), let project = SecretVersionName(name)?.project else { return nil }
        guard project != reference.project else { return number }
        let agrees = projectNumbers.withLock { numbers -> Bool in
            if let known = numbers[reference.project] { return known == project }
            numbers[reference.project] = project
            return true
        }
        return agrees ? number : nil
    }

    private func call(_ method: String, _ path: String, body: HTTPRequest.Body = .none, what: String, reference: SecretReference,
                      retryOn: RetryPolicy.RetryOn = [.noAnswer, .rateLimit, .serverErrors]) throws(GoogleError) -> GoogleExchange.Dated {
        var policy = self.policy
        policy.retryOn = retryOn
        return try GoogleExchange(transport: transport, timeout: timeout).dated(
            method, .plain(endpoint + path), body: body, headers: [], bearer: token.token, policy: policy, clock: clock,
            service: "Secret Manager", setting: "secretmanager_endpoint", what: what, secretFields: [],
            refusal: { status, envelope in refusal(status, envelope, reference: reference, what: what) })
    }
}
