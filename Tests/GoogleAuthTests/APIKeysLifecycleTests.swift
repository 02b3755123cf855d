import GemvaultTesting
import GoogleHTTP
import Testing
import VaultCore
@testable import GoogleAuth

/// The API Keys client's whole round of calls over the scripted transport: create, the
/// operation and its wait, getKeyString, delete and undelete, typed refusals, and which
/// failures are retried by what the server asked.
@Suite struct APIKeysLifecycleTests {
    static let keyName = "projects/764086051850/locations/global/keys/gemvault-default-20261202050000"
    static let oldKey = "projects/764086051850/locations/global/keys/old-key"
    static let operation = "operations/akmf.p7-764086051850-a778a84e-6829-4426-b26c-7bd71525cc8c"
    let fixtures = Fixtures()

    private func client(_ transport: FakeTransport, retries: Int = 3) -> APIKeysClient {
        let token = AccessToken(token: SecretBytes(utf8: "ya29.lifecycle-token"), source: .metadataServer(host: "m"), quotaProject: nil)
        return APIKeysClient(endpoint: "https://apikeys.test", token: token, quotaProject: nil, timeout: 5, retries: retries, backoff: 0, maxBackoff: 0,
                             transport: transport)
    }

    private func create(_ keys: APIKeysClient) throws(GoogleError) -> GoogleOperation {
        try keys.create(project: "764086051850", keyId: "gemvault-default-20261202050000", displayName: "gemvault default",
                        restrictions: .object(["apiTargets": .array([.object(["service": .string("generativelanguage.googleapis.com")])])]),
                        serviceAccount: "bot@demo.iam.gserviceaccount.com", annotations: ["gemvault-key": "default"])
    }

    /// create → an operation not yet done → one poll → done, with the new key and its string.
    @Test func aCreateIsFollowedUntilItsOperationIsDone() throws {
        let transport = FakeTransport([.json(200, try fixtures.text("operation-started.json")), .json(200, try fixtures.text("operation-done.json"))])
        let keys = client(transport)
        let started = try create(keys)
        #expect(!started.done && started.keyString == nil)
        var progress: [Double] = []
        let done = try keys.wait(started, what: "creating the key", limit: 30, progress: { progress.append($0) })
        #expect(done.done && done.error == nil && done.key?.name == Self.keyName && progress.count == 1)
        expectSecret(done.keyString, equals: "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp")
        #expect(transport.sent.map(\.method) == ["POST", "GET"])
        #expect(transport.sent.last?.url == "https://apikeys.test/v2/" + Self.operation)
        let body = String(decoding: try #require(transport.sent.first?.body), as: UTF8.self)
        #expect(body == #"{"annotations":{"gemvault-key":"default"},"displayName":"gemvault default","restrictions":{"apiTargets":[{"service":"generativelanguage.googleapis.com"}]},"serviceAccountEmail":"bot@demo.iam.gserviceaccount.com"}"#)
    }

    @Test func aFinishedOperationWithoutTheStringIsAskedForIt() throws {
        let transport = FakeTransport([.json(200, try fixtures.text("operation-done-without-key-string.json")), .json(200, try fixtures.text("key-string.json"))])
        let keys = client(transport)
        let made = try create(keys)
        #expect(made.done && made.keyString == nil && made.key?.name == Self.keyName)
        expectSecret(try keys.keyString(Self.keyName), equals: "AQ.Cd9TP7Mr1e4yU2nXw8zAl3QbJ6tKf0hGvF5cRjSuZoYpDaNiLq")
        #expect(transport.sent.last?.url == "https://apikeys.test/v2/" + Self.keyName + "/keyString")
    }

    @Test func aKeyStringAnswerWithoutAKeyIsRefused() throws {
        let transport = FakeTransport([.json(200, #"{"keyString": ""}"#)])
        expectError(GoogleError.self, { try client(transport).keyString(Self.keyName) }, where: { $0.category == .refused })
    }

    /// An operation that ended in an error is that error, with what to do about it.
    @Test func anOperationRefusedByAnOrganisationPolicySaysSo() throws {
        let transport = FakeTransport([.json(200, try fixtures.text("operation-failed-org-policy.json"))])
        let keys = client(transport)
        let finished = try create(keys)
        expectError(GoogleError.self, { try keys.wait(finished, what: "creating the key") }, where: {
            $0.category == .refused && $0.reason == .operationCode(9) && $0.hint == GoogleRefusal.boundKeysForbiddenHint
                && $0.message.hasPrefix("creating the key failed at Google: code 9")
        })
        #expect(transport.sent.count == 1)
    }

    @Test func deleteSendsTheEtagAndUndeleteAnEmptyBody() throws {
        let transport = FakeTransport([.json(200, try fixtures.text("operation-delete-done.json")), .json(200, try fixtures.text("operation-undelete-done.json"))])
        let keys = client(transport)
        let deleted = try keys.wait(try keys.delete(Self.oldKey, etag: #"W/"a+b==""#), what: "deleting")
        #expect(deleted.done && deleted.key?.isDeleted == true)
        let undeleted = try keys.wait(try keys.undelete(Self.oldKey), what: "undeleting")
        #expect(undeleted.done && undeleted.key?.isDeleted == false && undeleted.keyString == nil)
        #expect(transport.sent.map(\.method) == ["DELETE", "POST"])
        #expect(transport.sent.map(\.url) == ["https://apikeys.test/v2/\(Self.oldKey)?etag=W%2F%22a%2Bb%3D%3D%22", "https://apikeys.test/v2/\(Self.oldKey):undelete"])
        #expect(transport.sent.last?.body == Array("{}".utf8))
    }

    /// Google's error envelope decides the refusal: its reason, the status, and the hint.
    @Test(arguments: [
        ("scope-insufficient.json", 403, GoogleReason.errorInfo(.accessTokenScopeInsufficient), "the token lacks the cloud-platform scope"),
        ("permission-denied.json", 403, .status(.permissionDenied), "the credential needs the API Keys Admin role"),
        ("unauthenticated.json", 401, .status(.unauthenticated), "the access token was refused"),
        ("etag-mismatch.json", 400, .status(.failedPrecondition), "the key changed at Google meanwhile"),
        ("not-found.json", 404, .status(.notFound), "the key or project does not exist"),
    ])
    func aRefusalIsTypedByItsReason(fixture: String, status: Int, reason: GoogleReason, hint: String) throws {
        let transport = FakeTransport(answering: { [fixtures] _ in .json(status, (try? fixtures.text(fixture)) ?? "") })
        expectError(GoogleError.self, { try client(transport).get(Self.oldKey) }, where: {
            $0.category == .refused && $0.status == status && $0.reason == reason && $0.hint?.hasPrefix(hint) == true
                && $0.message.hasPrefix("the API Keys service refused reading \(Self.oldKey): HTTP \(status) \(reason)")
        })
        #expect(transport.sent.count == 1)
    }

    /// The server's delay is honoured: a short one is waited for and the call tried again; one
    /// longer than any wait gemvault makes (RetryInfo or Retry-After), or a daily quota, ends
    /// the call at once instead of hammering.
    @Test func retriesFollowWhatTheServerAsked() throws {
        let short = FakeTransport([.json(503, try fixtures.text("unavailable-retry-info.json")), .json(429, "{}", retryAfter: 0),
                                   .json(200, try fixtures.text("key-get.json"))])
        #expect(try client(short).get(Self.keyName).name == Self.keyName && short.sent.count == 3)

        for reply in [FakeTransport.Reply.json(429, try fixtures.text("rate-limited-retry-info-long.json")), .json(429, "{}", retryAfter: 600),
                      .json(429, try fixtures.text("quota-per-day.json"))] {
            let transport = FakeTransport([reply, .json(200, try fixtures.text("key-get.json"))])
            expectError(GoogleError.self, { try client(transport).get(Self.keyName) }, where: { $0.status == 429 && $0.category == .network })
            #expect(transport.sent.count == 1)
        }
    }

    /// A create is tried again only on 429, which Google answers before acting; a 503 may have
    /// made the key, so the id is looked up instead of creating twice.
    @Test func aCreateIsNotRepeatedAfterAServerError() throws {
        let transport = FakeTransport([.json(503, try fixtures.text("unavailable.json")), .json(200, try fixtures.text("key-get.json"))])
        let made = try create(client(transport))
        #expect(made.done && made.key?.name == Self.keyName && made.keyString == nil)
        #expect(transport.sent.map(\.method) == ["POST", "GET"])

        let limited = FakeTransport([.json(429, try fixtures.text("rate-limited-retryinfo.json")), .json(200, try fixtures.text("operation-done.json"))])
        #expect(try create(client(limited)).done && limited.sent.map(\.method) == ["POST", "POST"])
    }
}
