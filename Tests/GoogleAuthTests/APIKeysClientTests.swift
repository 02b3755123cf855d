import Foundation
import GoogleHTTP
import GemvaultTesting
import Testing
import VaultCore
@testable import GoogleAuth

private func fixture(_ name: String) throws -> String {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    return try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
}

/// The API Keys client over a scripted transport: requests, retries and refusals.
@Suite struct APIKeysClientTests {
    private func client(_ transport: FakeTransport, retries: Int = 3, user: Bool = false) -> APIKeysClient {
        let token = AccessToken(token: SecretBytes(utf8: "ya29.test-token"), source: user ? .authorizedUserFile(path: "/adc.json") : .metadataServer(host: "m"),
                                quotaProject: nil)
        return APIKeysClient(endpoint: "https://apikeys.test", token: token, quotaProject: user ? "billing-project" : nil, timeout: 5, retries: retries,
                             backoff: 0, maxBackoff: 0, transport: transport)
    }

    @Test func lookupSendsTheKeyOnlyInTheQueryAndTheTokenOnlyInItsHeader() throws {
        let transport = FakeTransport([.json(200, try fixture("lookup.json"))])
        let name = try client(transport).lookup(SecretBytes(utf8: "AQ.a/b+c"))
        #expect(name == "projects/764086051850/locations/global/keys/old-key")
        let sent = try #require(transport.sent.first)
        #expect(sent.method == "GET" && sent.url == "https://apikeys.test/v2/keys:lookupKey?keyString=AQ.a%2Fb%2Bc")
        #expect(sent.secretHeader == "Authorization: Bearer ya29.test-token" && !sent.headers.joined().contains("ya29"))
    }

    @Test func aLookupAnswerThatIsNoKeyNameIsRefused() throws {
        let transport = FakeTransport([.json(200, try fixture("lookup-malformed.json"))])
        #expect(throws: GoogleError.self) { try client(transport).lookup(SecretBytes(utf8: "AQ.x")) }
    }

    @Test func aKeyIsReadWithItsProjectAndId() throws {
        let transport = FakeTransport([.json(200, try fixture("key-get.json"))])
        let key = try client(transport).get("projects/764086051850/locations/global/keys/gemvault-default-20261202050000")
        #expect(key.project == "764086051850" && key.keyId == "gemvault-default-20261202050000" && !key.isDeleted && !key.isUnrestricted)
        #expect(key.created == 1_796_187_601)
    }

    @Test func listFollowsThePageToken() throws {
        let transport = FakeTransport([.json(200, try fixture("list-page1.json")), .json(200, try fixture("list-page2.json"))])
        let keys = try client(transport).list(project: "demo-project", showDeleted: true)
        #expect(keys.map(\.keyId) == ["a", "b"] && keys[1].isDeleted)
        #expect(transport.sent.map(\.url) == ["https://apikeys.test/v2/projects/demo-project/locations/global/keys?pageSize=300&showDeleted=true",
                                              "https://apikeys.test/v2/projects/demo-project/locations/global/keys?pageSize=300&showDeleted=true&pageToken=Cg9t%2F%2B%3D"])
    }

    @Test func userCredentialsBillTheQuotaProject() throws {
        let transport = FakeTransport([.json(200, try fixture("key-get.json"))])
        _ = try client(transport, user: true).get("projects/1/locations/global/keys/k")
        #expect(transport.sent.first?.headers.contains("x-goog-user-project: billing-project") == true)
    }

    @Test func serverErrorsAndRateLimitsAreRetriedThenAnswered() throws {
        let transport = FakeTransport([.json(503, try fixture("unavailable.json")), .json(429, try fixture("rate-limited-retryinfo.json")),
                                       .outcome(.transportError("Connection reset by peer")), .json(200, try fixture("key-get.json"))])
        _ = try client(transport).get("projects/1/locations/global/keys/k")
        #expect(transport.sent.count == 4)
    }

    @Test func retriesAreBounded() throws {
        let transport = FakeTransport(answering: { _ in .json(503, #"{"error": {"code": 503, "status": "UNAVAILABLE"}}"#) })
        #expect {
            try client(transport, retries: 2).get("projects/1/locations/global/keys/k")
        } throws: { error in
            (error as? GoogleError)?.status == 503 && (error as? GoogleError)?.category == .network
        }
        #expect(transport.sent.count == 3)
    }

    @Test func aRefusalIsNotRetriedAndSaysWhatToDo() throws {
        let transport = FakeTransport(answering: { _ in .json(403, (try? fixture("service-disabled.json")) ?? "") })
        #expect {
            try client(transport).get("projects/764086051850/locations/global/keys/k")
        } throws: { error in
            guard let error = error as? GoogleError else { return false }
            return error.category == .refused && error.reason == .errorInfo(.serviceDisabled) && error.status == 403
                && error.hint == "enable the API Keys API in project 764086051850: gcloud services enable apikeys.googleapis.com --project 764086051850"
                && error.message.hasPrefix("the API Keys service refused reading projects/764086051850/locations/global/keys/k: HTTP 403 SERVICE_DISABLED: API Keys API has not been used")
        }
        #expect(transport.sent.count == 1)
        let missing = FakeTransport([.json(404, try fixture("not-found.json"))])
        #expect(throws: GoogleError.self) { try client(missing).get("projects/1/locations/global/keys/gone") }
        #expect(missing.sent.count == 1)
    }

    @Test func noAnswerIsAnAnswerLost() throws {
        let transport = FakeTransport(answering: { _ in .outcome(.connectionRefused("Connection refused")) })
        #expect {
            try client(transport, retries: 1).get("projects/1/locations/global/keys/k")
        } throws: { error in
            (error as? GoogleError)?.reason == .answerLost && (error as? GoogleError)?.mayHaveBeenPerformed == true
        }
        #expect(transport.sent.count == 2)
    }

    @Test func aFinishedCreateCarriesTheKeyStringOutsideTheDecodedKey() throws {
        let transport = FakeTransport([.json(200, try fixture("operation-done.json"))])
        let operation = try client(transport).create(project: "764086051850", keyId: "gemvault-default-20261202050000", displayName: "d",
                                                     restrictions: nil, serviceAccount: "bot@p.iam.gserviceaccount.com", annotations: [:])
        #expect(operation.done && operation.key?.keyId == "gemvault-default-20261202050000")
        #expect(operation.keyString.map { $0.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } } == "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp")
        #expect(transport.sent.first?.url == "https://apikeys.test/v2/projects/764086051850/locations/global/keys?keyId=gemvault-default-20261202050000")
    }

    @Test func aCreateWhoseAnswerWasLostLooksTheKeyUpInsteadOfCreatingTwice() throws {
        let transport = FakeTransport([.outcome(.transportError("Connection reset by peer")), .json(200, try fixture("key-get.json"))])
        let operation = try client(transport).create(project: "764086051850", keyId: "gemvault-default-20261202050000", displayName: "d",
                                                     restrictions: nil, serviceAccount: nil, annotations: [:])
        #expect(operation.done && operation.key?.name == "projects/764086051850/locations/global/keys/gemvault-default-20261202050000")
        #expect(transport.sent.map(\.method) == ["POST", "GET"])
    }

    @Test func anOperationThatEndedInAnErrorIsThatError() throws {
        // The create answers 200 with an operation not yet done; the poll finds it failed.
        let transport = FakeTransport([.json(200, try fixture("operation-started.json")), .json(200, try fixture("operation-already-exists.json"))])
        let keys = client(transport)
        let started = try keys.create(project: "764086051850", keyId: "gemvault-default-20261202050000", displayName: "d",
                                      restrictions: nil, serviceAccount: nil, annotations: [:])
        #expect(!started.done && started.name == "operations/akmf.p7-764086051850-a778a84e-6829-4426-b26c-7bd71525cc8c")
        #expect {
            try keys.wait(started, what: "creating the key", limit: 30)
        } throws: { error in
            (error as? GoogleError)?.reason == .status(.alreadyExists) && (error as? GoogleError)?.hint?.contains("a key with this id exists") == true
        }
        #expect(transport.sent.last?.url == "https://apikeys.test/v2/operations/akmf.p7-764086051850-a778a84e-6829-4426-b26c-7bd71525cc8c")
    }
}
