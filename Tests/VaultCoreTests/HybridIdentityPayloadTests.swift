import Testing
@testable import VaultCore

private func bytes(_ secret: SecretBytes?) -> [UInt8]? { secret?.withUnsafeBytes { Array($0) } }

/// Payload version 11: the sharing identity's hybrid post-quantum seed beside its X25519 key.
@Suite struct HybridIdentityPayloadTests {
    private func contents(classic: Bool) throws -> VaultContents {
        let contents = VaultContents()
        try contents.setKey("shared", secret: SecretBytes(utf8: "AIzaSyUnitTest-0123456789abcdefghijklmn"), now: 1_700_000_000)
        try VaultChange.identity(label: "alice@lab", relabel: false, classic: classic).apply(to: contents)
        return contents
    }

    /// The unpadded payload bytes.
    private func payload(_ contents: VaultContents) throws -> [UInt8] {
        let padded = try contents.encoded()
        return try padded.withUnsafeBytes { Array($0[0..<(try Sodium.unpad($0, blockSize: 512))]) }
    }

    private func padded(_ bytes: [UInt8]) -> SecretBytes {
        let buffer = SecretBytes(count: (bytes.count / 512 + 1) * 512)
        buffer.withUnsafeMutableBytes { raw in
            for index in raw.indices { raw[index] = 0 }
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0x80
        }
        return buffer
    }

    @Test func aNewIdentityIsHybridAndItsSeedSurvivesThePayload() throws {
        let original = try contents(classic: false)
        let seed = try #require(bytes(original.identity?.hybridSeed))
        #expect(seed.count == 32)
        let encoded = try payload(original)
        #expect(encoded[0] == 11)
        let decoded = try VaultContents.decode(padded(encoded), path: "test")
        #expect(bytes(decoded.identity?.hybridSeed) == seed)
        #expect(bytes(decoded.identity?.agreementSecret) == bytes(original.identity?.agreementSecret))
        #expect(bytes(decoded.identity?.signingSeed) == bytes(original.identity?.signingSeed))
        #expect(decoded.identity?.label == "alice@lab")
    }

    @Test func aClassicIdentityHasNoSeedAndIsWrittenWithMarkerOne() throws {
        let classic = try contents(classic: true)
        #expect(classic.identity?.hybridSeed == nil)
        let encoded = try payload(classic)
        let decoded = try VaultContents.decode(padded(encoded), path: "test")
        #expect(decoded.identity != nil && decoded.identity?.hybridSeed == nil)
        // The identity's marker (after the version, the conversation key, the one key, no
        // settings and no earlier conversation keys) is 1, then 2 with the 32-byte seed.
        let markerAt = 1 + 32 + 2 + (2 + 6 + 2 + 39 + 8 * 3 + 4 + 1) + 2 + 2
        let hybrid = try payload(try contents(classic: false))
        #expect(encoded[markerAt] == 1 && hybrid[markerAt] == 2)
        #expect(hybrid.count == encoded.count + 32)
    }

    /// A version 10 payload (what gemvault wrote before) reads; the same bytes with a hybrid
    /// identity's marker 2 are damage there, since version 10 has no seed.
    @Test func versionTenPayloadsReadAndRefuseTheHybridMarker() throws {
        var classic = try payload(try contents(classic: true))
        classic[0] = 10
        let old = try VaultContents.decode(padded(classic), path: "test")
        #expect(old.identity?.label == "alice@lab" && old.identity?.hybridSeed == nil)
        var hybrid = try payload(try contents(classic: false))
        hybrid[0] = 10
        #expect(throws: VaultError.self) { try VaultContents.decode(padded(hybrid), path: "test") }
        // Saved again, the old payload is version 11 and keeps its classic identity.
        #expect(try payload(old)[0] == 11)
    }

    @Test func upgradeAddsASeedAndKeepsTheRest() throws {
        let classic = try contents(classic: true)
        let before = try #require(classic.identity)
        #expect(try VaultChange.upgradeIdentity.apply(to: classic).replaced)
        let after = try #require(classic.identity)
        #expect(bytes(after.hybridSeed)?.count == 32)
        #expect(bytes(after.agreementSecret) == bytes(before.agreementSecret) && bytes(after.signingSeed) == bytes(before.signingSeed))
        #expect(after.label == before.label)
        // A second upgrade changes nothing; relabelling keeps the seed.
        #expect(try VaultChange.upgradeIdentity.apply(to: classic).replaced == false)
        #expect(bytes(classic.identity?.hybridSeed) == bytes(after.hybridSeed))
        try VaultChange.identity(label: "bob@lab", relabel: true).apply(to: classic)
        #expect(bytes(classic.identity?.hybridSeed) == bytes(after.hybridSeed) && classic.identity?.label == "bob@lab")
    }

    @Test func upgradeWithoutAnIdentityIsRefused() {
        #expect(throws: VaultError.self) { try VaultChange.upgradeIdentity.apply(to: VaultContents()) }
    }
}
