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

    /// The whole name Google answers with: this project by id or by number, this secret, a version.
    @Test func onlyAWholeNameOfThisSecretIsItsVersion() throws {
        let byID = try #require(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key"))
        #expect(byID.versionNumber(inName: "projects/lab/secrets/gemini-key/versions/3") == 3)
        #expect(byID.versionNumber(inName: "projects/123456/secrets/gemini-key/versions/3") == 3)
        for bad in ["projects/evil/secrets/gemini-key/versions/3", "x/projects/lab/secrets/gemini-key/versions/3", "projects/lab/secrets/other/versions/3",
                    "projects/lab/secrets/gemini-key/versions/03", "projects/lab/secrets/gemini-key/versions/0", "projects//secrets/gemini-key/versions/3",
                    "projects/lab/secrets/gemini-key/versions/3/x", "projects/١٢/secrets/gemini-key/versions/3"] {
            #expect(byID.versionNumber(inName: bad) == nil, "\(bad)")
        }
        let byNumber = try #require(SecretReference(parsing: "gsm://projects/123456/secrets/gemini-key"))
        #expect(byNumber.versionNumber(inName: "projects/654321/secrets/gemini-key/versions/3") == nil)
        #expect(byNumber.versionNumber(inName: "projects/123456/secrets/gemini-key/versions/3") == 3)
    }

    @Test func oneClientTakesAnswersOfOneProjectNumberOnly() throws {
        let byID = try #require(SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key"))
        let manager = client(FakeTransport([]))
        #expect(manager.version(inName: "projects/lab/secrets/gemini-key/versions/2", of: byID) == 2)
        #expect(manager.version(inName: "projects/123456/secrets/gemini-key/versions/3", of: byID) == 3)
        #expect(manager.version(inName: "projects/654321/secrets/gemini-key/versions/4", of: byID) == nil)
        #expect(manager.version(inName: "projects/123456/secrets/gemini-key/versions/4", of: byID) == 4)
        #expect(manager.version(inName: "projects/123456/secrets/other/versions/4", of: byID) == nil)
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

    // MARK: Rotation's calls

    private var reference: SecretReference { SecretReference(parsing: "gsm://projects/lab/secrets/gemini-key")! }

    @Test func theSecretsEtagAnnotationsAndPeriodAreRead() throws {
        let transport = FakeTransport([.json(200, try fixture("secret-get.json"))])
        let info = try client(transport).secret(reference)
        #expect(info.etag == "\"16f7a8b2c3d4e5\"" && info.annotations == ["gemvault-rotation": "7"] && info.rotationPeriod == 7_776_000)
        #expect(transport.sent.first?.url == "https://sm.test/v1/projects/lab/secrets/gemini-key")
    }

    @Test func aClaimCarriesTheEtagAndAConflictIsTyped() throws {
        let transport = FakeTransport([.json(200, try fixture("secret-get.json")), .json(400, try fixture("secret-etag-stale.json"))])
        _ = try client(transport).annotate(reference, ["gemvault-rotation": "host 42 1796400000"], etag: "\"16f7a8b2c3d4e5\"")
        let sent = try #require(transport.sent.first)
        #expect(sent.method == "PATCH" && sent.url == "https://sm.test/v1/projects/lab/secrets/gemini-key?updateMask=annotations")
        #expect(sent.body == Array(#"{"annotations":{"gemvault-rotation":"host 42 1796400000"},"etag":"\"16f7a8b2c3d4e5\""}"#.utf8))
        let error = try #require(throws: GoogleError.self) { try client(transport).annotate(reference, [:], etag: "\"old\"") }
        #expect(error.reason == SecretManagerClient.etagConflict && transport.sent.count == 2)
    }

    @Test func aNewVersionIsSentFromSecretMemoryWithItsChecksumAndNotRetriedAfterAServerError() throws {
        let key = SecretBytes(utf8: "AQ.Ab8RN6LnewVersionKey-0123456789abcdefghij")
        let transport = FakeTransport([.json(200, try fixture("secret-version-added.json"))])
        #expect(try client(transport).addVersion(reference, value: key) == 8)
        let sent = try #require(transport.sent.first)
        #expect(sent.method == "POST" && sent.url == "https://sm.test/v1/projects/lab/secrets/gemini-key:addVersion")
        let crc = key.withUnsafeBytes { CRC32C.checksum($0) }
        #expect(sent.body == Array(#"{"payload": {"data": "QVEuQWI4Uk42TG5ld1ZlcnNpb25LZXktMDEyMzQ1Njc4OWFiY2RlZmdoaWo=", "dataCrc32c": "\#(crc)"}}"#.utf8))
        // A 503 may have come after the version was added: not sent again.
        let failing = FakeTransport([.json(503, "{}"), .json(200, try fixture("secret-version-added.json"))])
        #expect(throws: GoogleError.self) { try client(failing).addVersion(reference, value: key) }
        #expect(failing.sent.count == 1)
        // An answer naming a version of another secret is not taken for this one's.
        let other = try fixture("secret-version-added.json").replacing("secrets/gemini-key/", with: "secrets/other-key/")
        #expect(throws: GoogleError.self) { try client(FakeTransport([.json(200, other)])).addVersion(reference, value: key) }
    }

    @Test func versionsAreListedAcrossPagesAndEnabledOrDisabledByNumber() throws {
        let transport = FakeTransport([.json(200, try fixture("secret-versions-page1.json")), .json(200, try fixture("secret-versions-page2.json")), .json(200, "{}")])
        let versions = try client(transport).versions(reference, enabledOnly: false)
        #expect(versions.map(\.number) == [8, 7, 6] && versions.map(\.state) == ["ENABLED", "ENABLED", "DISABLED"])
        #expect(transport.sent[1].url.hasSuffix("pageToken=page-2"))
        try client(transport).setVersion(reference, 7, enabled: false)
        #expect(transport.sent[2].method == "POST" && transport.sent[2].url == "https://sm.test/v1/projects/lab/secrets/gemini-key/versions/7:disable")
    }
}
