import Foundation
import GemvaultTesting
import GoogleHTTP
import SystemIO
import Testing
import VaultCore
@testable import GoogleAuth

/// The one refusal table of the API Keys service and Secret Manager, row by row, on the
/// envelopes Google sends (this target's fixtures).
@Suite struct GoogleRefusalTests {
    static let reference = SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key")!

    func envelope(_ file: String) throws -> GoogleStatus? {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
        return GoogleStatus.decode(Array(try Data(contentsOf: folder.appendingPathComponent(file))))
    }

    func apiKeys(_ status: Int, _ file: String?, user: Bool = false) throws -> GoogleError {
        GoogleRefusal(service: .apiKeys(userCredential: user), status: status, envelope: try file.flatMap(envelope)).error(what: "reading K")
    }

    func secretManager(_ status: Int, _ file: String?) throws -> GoogleError {
        GoogleRefusal(service: .secretManager(Self.reference, principal: "bot@lab"), status: status, envelope: try file.flatMap(envelope))
            .error(what: "reading S")
    }

    @Test func theAPIKeysRows() throws {
        #expect(try apiKeys(401, "unauthenticated.json").hint?.hasPrefix("the access token was refused: fetch a new one (for gcloud: 'gcloud auth login' or") == true)
        let disabled = try apiKeys(403, "service-disabled.json", user: true)
        #expect(disabled.hint == "enable the API Keys API in project 764086051850: gcloud services enable apikeys.googleapis.com --project 764086051850; or set quota_project to a project that has it enabled")
        #expect(try apiKeys(403, "service-disabled.json").hint == "enable the API Keys API in project 764086051850: gcloud services enable apikeys.googleapis.com --project 764086051850")
        #expect(try apiKeys(403, "scope-insufficient.json").hint == GoogleRefusal.scopeHint)
        #expect(try apiKeys(403, "permission-denied.json").hint?.contains("roles/serviceusage.apiKeysAdmin") == true)
        #expect(try apiKeys(404, "not-found.json").hint == "the key or project does not exist, or the credential cannot see it")
        for status in [409, 412] { #expect(try apiKeys(status, nil).hint == GoogleRefusal.changedHint) }
        #expect(try apiKeys(400, "etag-mismatch.json").hint == GoogleRefusal.changedHint)
        #expect(try apiKeys(400, nil).hint == nil && apiKeys(500, nil).category == .network && apiKeys(429, nil).category == .network)
        let quota = GoogleStatus(code: 403, message: "The apikeys.googleapis.com API requires a quota project, which is not set by default.", status: "PERMISSION_DENIED",
                                 details: [.init(type: "type.googleapis.com/google.rpc.ErrorInfo", reason: "SERVICE_DISABLED")])
        #expect(GoogleRefusal(service: .apiKeys(userCredential: true), status: 403, envelope: quota).error(what: "x").hint?.hasPrefix("set the quota_project setting") == true)
        let policy = GoogleStatus(code: 400, message: "Constraint constraints/iam.managed.disableServiceAccountApiKeyCreation violated", status: "FAILED_PRECONDITION")
        #expect(GoogleRefusal(service: .apiKeys(userCredential: false), status: 400, envelope: policy).error(what: "x").hint == GoogleRefusal.boundKeysForbiddenHint)
    }

    @Test func theSecretManagerRows() throws {
        #expect(try secretManager(401, "unauthenticated.json").hint == "the access token was refused: fetch a new one (for gcloud: 'gcloud auth application-default login')")
        #expect(try secretManager(403, "scope-insufficient.json").hint == GoogleRefusal.scopeHint)
        let denied = try secretManager(403, "secret-denied.json")
        #expect(denied.message == "Secret Manager refused reading S: permission secretmanager.versions.access denied to bot@lab")
        #expect(denied.hint?.contains("gcloud secrets add-iam-policy-binding gemini-key --project lab") == true && denied.reason == .errorInfo(.other("IAM_PERMISSION_DENIED")))
        #expect(try secretManager(404, "not-found.json").hint?.hasPrefix("check the gsm:// reference") == true)
        #expect(try secretManager(400, "secret-etag-stale.json").hint == "the version is disabled or destroyed: enable it, or name another version (or none, for the latest)")
        #expect(try secretManager(409, nil).hint == nil)
    }

    @Test func theMessageNamesTheServiceTheStatusAndTheReason() throws {
        #expect(try apiKeys(404, "not-found.json").message == "the API Keys service refused reading K: HTTP 404 NOT_FOUND: Requested entity was not found.")
        #expect(try secretManager(503, nil).message == "Secret Manager refused reading S: HTTP 503: no message")
        #expect(try secretManager(503, nil).category == .network && secretManager(400, "secret-etag-stale.json").reason == .status(.failedPrecondition))
    }
}

/// The OAuth token endpoints go through the same JSON call, with a form body.
@Suite struct TokenEndpointTests {
    func exchange(_ transport: FakeTransport) throws(GoogleError) -> TokenEndpoint.Minted {
        try TokenEndpoint.mint(what: "the token endpoint T", method: "POST", url: "https://oauth.test/token", headers: [],
                               body: .plain(Array("grant_type=x".utf8)), exchange: GoogleExchange(transport: transport, timeout: 5))
    }

    @Test func aTokenIsTakenOutOfTheAnswerAndTheRequestIsAForm() throws {
        let transport = FakeTransport([.json(200, #"{"access_token": "ya29.fresh", "expires_in": 3599}"#)])
        let before = Clock.now()
        let minted = try exchange(transport)
        #expect(minted.token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "ya29.fresh")
        // The session keeps a token until five minutes before this.
        #expect(minted.expiresAt.map { $0 >= before + 3599 && $0 <= Clock.now() + 3599 } == true)
        #expect(transport.sent.first?.headers == ["Accept: application/json", "Content-Type: application/x-www-form-urlencoded"])
    }

    @Test func anOAuthRefusalKeepsItsErrorAsTheReason() {
        let transport = FakeTransport([.json(400, #"{"error": "invalid_grant", "error_description": "Token has been expired or revoked."}"#)])
        #expect(throws: GoogleError(.refused, "the token endpoint T refused the credential (HTTP 400, invalid_grant: Token has been expired or revoked.)",
                                    hint: "the credential may be revoked or expired; for gcloud's, run 'gcloud auth application-default login' again",
                                    status: 400, reason: .oauth("invalid_grant"))) { try exchange(transport) }
        #expect(transport.sent.count == 1)
        #expect(throws: GoogleError.self) { try exchange(FakeTransport([.json(200, #"{"token_type": "Bearer"}"#)])) }
    }
}
