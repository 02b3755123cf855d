import GemvaultTesting
import Glibc
import GoogleHTTP
import Testing
import VaultCore
@testable import GoogleAuth

/// Workload Identity Federation and impersonation, on the wire: what STS and IAM Credentials are
/// sent, in which order, and what a refusal says.
@Suite struct ExternalAccountTests {
    let folder = TemporaryFolder("wif")

    func write(_ name: String, _ text: String, mode: mode_t = 0o600) -> String {
        let path = folder.appending(name)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)
        _ = text.withCString { Glibc.write(fd, $0, strlen($0)) }
        close(fd)
        chmod(path, mode)
        return path
    }

    func credentials(_ file: String, _ transport: FakeTransport, environment: [String: String] = [:]) -> GoogleCredentials {
        var settings = CredentialSettings(tokenCommand: nil, commandTimeout: 5, environment: environment.merging(["GOOGLE_APPLICATION_CREDENTIALS": file]) { $1 },
                                          home: folder.path, timeout: 5, allowInsecure: false, warn: { _ in })
        settings.scopes = geminiScopes
        return GoogleCredentials(settings, transport: transport)
    }

    func externalAccount(source: String, impersonate: Bool = true) -> String {
        let impersonation = impersonate ? #", "service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/ci@p.iam.gserviceaccount.com:generateAccessToken""# : ""
        return write("wif.json", #"{"type": "external_account", "audience": "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/r", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": "https://sts.googleapis.com/v1/token", "credential_source": \#(source)\#(impersonation)}"#)
    }

    @Test func aFileSubjectTokenGoesToSTSThenToGenerateAccessToken() throws {
        let subject = write("subject.jwt", "eyJ.subject.token\n")
        let transport = FakeTransport([.json(200, #"{"access_token": "fed.token", "expires_in": 3600, "token_type": "Bearer"}"#),
                                       .json(200, #"{"accessToken": "ya29.minted", "expireTime": "2030-01-01T00:00:00Z"}"#)])
        let token = try credentials(externalAccount(source: #"{"file": "\#(subject)"}"#), transport).token()
        #expect(token.token.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "ya29.minted")
        #expect(token.expiresAt == 1_893_456_000)
        #expect(token.source.label.contains("file \(subject) → sts → ci@p.iam.gserviceaccount.com"))
        let sts = transport.sent[0]
        #expect(sts.url == "https://sts.googleapis.com/v1/token" && sts.secretHeader == nil)
        let form = String(decoding: sts.body ?? [], as: UTF8.self)
        #expect(form.contains("grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"))
        #expect(form.contains("requested_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token"))
        #expect(form.contains("scope=https%3A%2F%2Fwww.googleapis.com%2Fauth%2Fcloud-platform&") && form.hasSuffix("subject_token=eyJ.subject.token"))
        let iam = transport.sent[1]
        #expect(iam.url.hasSuffix("/serviceAccounts/ci@p.iam.gserviceaccount.com:generateAccessToken"))
        #expect(iam.secretHeader == "Authorization: Bearer fed.token")
        #expect(String(decoding: iam.body ?? [], as: UTF8.self)
                == #"{"lifetime":"3600s","scope":["https://www.googleapis.com/auth/cloud-platform","https://www.googleapis.com/auth/generative-language.retriever"]}"#)
    }

    @Test func withoutImpersonationSTSIsAskedForGeminisScopes() throws {
        let subject = write("subject.jwt", "eyJ.subject.token")
        let transport = FakeTransport([.json(200, #"{"access_token": "fed.token", "expires_in": "3600"}"#)])
        let token = try credentials(externalAccount(source: #"{"file": "\#(subject)"}"#, impersonate: false), transport).token()
        #expect(token.expiresAt != nil)
        #expect(String(decoding: transport.sent[0].body ?? [], as: UTF8.self).contains("generative-language.retriever"))
    }

    @Test func anExecutableSourceNeedsTheOptIn() {
        let file = externalAccount(source: #"{"executable": {"command": "/bin/echo hi"}}"#)
        let transport = FakeTransport([])
        #expect(throws: GoogleError.self) { try credentials(file, transport).token() }
        #expect(transport.sent.isEmpty)
    }

    @Test func anExecutablesResponseIsReadAsGoogleWritesIt() throws {
        let response = #"{"version": 1, "success": true, "token_type": "urn:ietf:params:oauth:token-type:jwt", "id_token": "eyJ.from.program", "expiration_time": 4102444800}"#
        let script = write("program", "#!/bin/sh\nprintf '%s' '\(response)'\n", mode: 0o700)
        let file = externalAccount(source: #"{"executable": {"command": "\#(script)", "timeout_millis": 5000}}"#, impersonate: false)
        let transport = FakeTransport([.json(200, #"{"access_token": "fed.token", "expires_in": 3600}"#)])
        _ = try credentials(file, transport, environment: ["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1"]).token()
        #expect(String(decoding: transport.sent[0].body ?? [], as: UTF8.self).hasSuffix("subject_token=eyJ.from.program"))
    }

    @Test func aFailedExecutableResponseIsItsMessage() {
        let script = write("program", "#!/bin/sh\necho '{\"version\": 1, \"success\": false, \"code\": \"401\", \"message\": \"not logged in\"}'\n", mode: 0o700)
        let file = externalAccount(source: #"{"executable": {"command": "\#(script)"}}"#)
        #expect {
            try credentials(file, FakeTransport([]), environment: ["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1"]).token()
        } throws: { ($0 as? GoogleError)?.message.contains("401: not logged in") == true }
    }

    @Test func aRelativeExecutableIsRefused() {
        let relative = externalAccount(source: #"{"executable": {"command": "issue-token"}}"#)
        #expect { try credentials(relative, FakeTransport([])).token() } throws: { ($0 as? GoogleError)?.message.contains("not an absolute path") == true }
    }

    @Test func aGenerateAccessTokenRefusalNamesTheRoleAndTheAccount() {
        let subject = write("subject.jwt", "eyJ.subject.token")
        let denied = #"{"error": {"code": 403, "message": "Permission 'iam.serviceAccounts.getAccessToken' denied on resource (or it may not exist).", "status": "PERMISSION_DENIED"}}"#
        let transport = FakeTransport([.json(200, #"{"access_token": "fed.token", "expires_in": 3600}"#), .json(403, denied)])
        #expect {
            try credentials(externalAccount(source: #"{"file": "\#(subject)"}"#), transport).token()
        } throws: { error in
            guard let error = error as? GoogleError else { return false }
            return error.message.contains("ci@p.iam.gserviceaccount.com") && error.hint?.contains("roles/iam.workloadIdentityUser") == true
                && error.message.contains("iam.serviceAccounts.getAccessToken")
        }
    }

    @Test func aTokenURLThatIsNeitherGooglesNorLoopbackIsRefused() {
        let subject = write("subject.jwt", "eyJ.subject.token")
        let file = write("wif.json", #"{"type": "external_account", "audience": "//iam.googleapis.com/x", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": "https://sts.example.com/v1/token", "credential_source": {"file": "\#(subject)"}}"#)
        let transport = FakeTransport([])
        #expect { try credentials(file, transport).token() } throws: { ($0 as? GoogleError)?.message.contains("not Google's and not loopback") == true }
        #expect(transport.sent.isEmpty)
    }

    @Test func aGitHubJobAsksTheRunnerWithTheProvidersAudience() throws {
        var settings = CredentialSettings(tokenCommand: nil, commandTimeout: 5, environment: ["ACTIONS_ID_TOKEN_REQUEST_URL": "https://runner.test/token?api-version=2.0",
                                                                                             "ACTIONS_ID_TOKEN_REQUEST_TOKEN": "request-token"],
                                          home: folder.path, timeout: 5, allowInsecure: false, warn: { _ in })
        settings.scopes = geminiScopes
        settings.federation = CIFederation(provider: "projects/1/locations/global/workloadIdentityPools/p/providers/r", serviceAccount: "ci@p.iam.gserviceaccount.com",
                                           oidcTokenEnv: nil)
        let transport = FakeTransport([.json(200, #"{"value": "eyJ.github.jwt"}"#), .json(200, #"{"access_token": "fed.token", "expires_in": 3600}"#),
                                       .json(200, #"{"accessToken": "ya29.minted", "expireTime": "2030-01-01T00:00:00Z"}"#)])
        let credentials = GoogleCredentials(settings, transport: transport)
        #expect(try credentials.source().label.contains("GitHub OIDC → sts → ci@p.iam.gserviceaccount.com"))
        _ = try credentials.token()
        #expect(transport.sent[0].url == "https://runner.test/token?api-version=2.0&audience=https%3A%2F%2Fiam.googleapis.com%2Fprojects%2F1%2Flocations%2Fglobal%2FworkloadIdentityPools%2Fp%2Fproviders%2Fr")
        #expect(transport.sent[0].secretHeader == "Authorization: Bearer request-token")
        #expect(transport.sent[1].url == "https://sts.googleapis.com/v1/token")
        #expect(String(decoding: transport.sent[1].body ?? [], as: UTF8.self).contains("audience=%2F%2Fiam.googleapis.com%2Fprojects%2F1%2F"))
    }

    @Test func aValidResponseInTheOutputFileIsTakenWithoutRunningTheProgram() throws {
        let response = #"{"version": 1, "success": true, "token_type": "urn:ietf:params:oauth:token-type:jwt", "id_token": "eyJ.from.cache", "expiration_time": 4102444800}"#
        let cache = write("cache.json", response)
        let script = write("program", "#!/bin/sh\nexit 1\n", mode: 0o700)
        let file = externalAccount(source: #"{"executable": {"command": "\#(script)", "output_file": "\#(cache)"}}"#, impersonate: false)
        let transport = FakeTransport([.json(200, #"{"access_token": "fed.token", "expires_in": 3600}"#)])
        _ = try credentials(file, transport, environment: ["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1"]).token()
        #expect(String(decoding: transport.sent[0].body ?? [], as: UTF8.self).hasSuffix("subject_token=eyJ.from.cache"))
    }

    @Test func anExpiredCachedResponseRunsTheProgramAgain() {
        let expired = #"{"version": 1, "success": true, "token_type": "urn:ietf:params:oauth:token-type:jwt", "id_token": "eyJ.old", "expiration_time": 1000}"#
        let cache = write("cache.json", expired)
        let script = write("program", "#!/bin/sh\necho failed >&2\nexit 3\n", mode: 0o700)
        let file = externalAccount(source: #"{"executable": {"command": "\#(script)", "output_file": "\#(cache)"}}"#, impersonate: false)
        #expect {
            try credentials(file, FakeTransport([]), environment: ["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1"]).token()
        } throws: { ($0 as? GoogleError)?.message.contains("failed (status 3)") == true }
    }
}
