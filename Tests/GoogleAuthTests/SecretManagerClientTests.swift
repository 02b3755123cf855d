import Foundation
import GoogleHTTP
import GemvaultTesting
import SystemIO
import Testing
import VaultCore
@testable import GoogleAuth

private func fixture(_ name: String) throws -> String {
    let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    return try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
}

/// Secret Manager's versions.access over a scripted transport.
@Suite struct SecretManagerClientTests {
    private func client(_ transport: FakeTransport) -> SecretManagerClient {
        let token = AccessToken(token: SecretBytes(utf8: "ya29.test-token"), source: .serviceAccountFile(path: "/sa.json", email: "bot@lab.iam.gserviceaccount.com"),
                                quotaProject: nil)
        return SecretManagerClient(endpoint: "https://sm.test", token: token, timeout: 5, retries: 2, transport: transport, clock: WaitClock(now: { 0 }, sleep: { _ in }))
    }

    @Test func referencesParseStrictly() {
        #expect(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key")?.versionPath == "projects/lab/secrets/gemini-key/versions/latest")
        #expect(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key/versions/12")?.version == 12)
        for bad in ["gsm://projects/lab/secrets/", "gsm://projects/lab/secrets/a/versions/0", "gsm://projects/lab/secrets/a/versions/07",
                    "gsm://projects/lab/secrets/a b", "gsm://projects/../secrets/a", "https://projects/lab/secrets/a", "gsm://projects/lab/secrets/a/versions/latest"] {
            #expect(SecretReference(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func crc32cMatchesItsCheckValue() {
        #expect(Array("123456789".utf8).withUnsafeBytes { CRC32C.checksum($0) } == 0xE306_9283)
    }

    @Test func aVersionIsReadCheckedAndNamed() throws {
        let transport = FakeTransport([.json(503, "{}"), .json(200, try fixture("secret-access.json"))])
        let fetched = try client(transport).accessKey(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key")!)
        #expect(fetched.version == 7)
        #expect(fetched.value.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "AQ.Ab8RN6LsecretManagerUnitFixtureKey-0123456789")
        #expect(transport.sent.count == 2 && transport.sent[1].url == "https://sm.test/v1/projects/lab/secrets/gemini-key/versions/latest:access")
        #expect(transport.sent[1].secretHeader == "Authorization: Bearer ya29.test-token")
    }

    @Test func aChangedChecksumIsBadData() throws {
        let damaged = try fixture("secret-access.json").replacingOccurrences(of: "\"dataCrc32c\": \"", with: "\"dataCrc32c\": \"1")
        let error = try #require(throws: GoogleError.self) {
            try client(FakeTransport([.json(200, damaged)])).accessKey(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key")!)
        }
        #expect(error.category == .badData)
    }

    @Test func aPinnedVersionMustBeTheOneAnswered() throws {
        let error = try #require(throws: GoogleError.self) {
            try client(FakeTransport([.json(200, try fixture("secret-access.json"))])).accessKey(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key/versions/3")!)
        }
        #expect(error.category == .badData && error.message.contains("version 7 when version 3"))
    }

    @Test func aServersWordsStayOnOneLine() throws {
        let hostile = try fixture("secret-denied.json").replacingOccurrences(of: "\"permission\": \"secretmanager.versions.access\"",
                                                                              with: "\"permission\": \"x\\ngemvault: note: all good\"")
        let error = try #require(throws: GoogleError.self) {
            try client(FakeTransport([.json(403, hostile)])).accessKey(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key")!)
        }
        #expect(error.message.contains("x gemvault: note: all good") && !error.message.contains("\n"))
    }

    /// An answer no Google API sends is bad data (exit 4), not a network failure: for a linked
    /// key it must not pass for Secret Manager being out of reach.
    @Test func anOversizedAnswerIsBadDataNotANetworkFailure() throws {
        let huge = "{\"name\": \"" + String(repeating: "x", count: 2 << 20) + "\"}"
        let transport = FakeTransport([.json(200, huge)])
        let error = try #require(throws: GoogleError.self) {
            try client(transport).accessKey(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key")!)
        }
        #expect(error.category == .badData && transport.sent.count == 1)
    }

    @Test func aDenialNamesThePermissionAndThePrincipal() throws {
        let error = try #require(throws: GoogleError.self) {
            try client(FakeTransport([.json(403, try fixture("secret-denied.json"))])).accessKey(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key")!)
        }
        #expect(error.category == .refused && error.message.contains("secretmanager.versions.access") && error.message.contains("bot@lab.iam.gserviceaccount.com"))
    }
}
