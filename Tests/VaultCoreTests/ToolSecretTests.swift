import Testing
@testable import VaultCore

private func text(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

/// Payload version 9: the secrets for other tools, with their history, through changes and saves.
@Suite struct ToolSecretTests {
    let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----"

    @Test func setReplaceRollBackRenameAndRemove() throws {
        let contents = VaultContents()
        try VaultChange.secret(.set(name: "github", value: SecretBytes(utf8: "ghp_first-000000000000"), now: 10, usedBy: nil)).apply(to: contents)
        let replaced = try VaultChange.secret(.set(name: "github", value: SecretBytes(utf8: "ghp_second-00000000000"), now: 20, usedBy: "mcp github"))
            .apply(to: contents)
        #expect(replaced.replaced && replaced.masked == "ghp_…0000")
        var secret = try #require(contents.toolSecret(named: "github"))
        #expect(text(secret.value) == "ghp_second-00000000000" && secret.created == 10 && secret.updated == 20 && secret.usedBy == "mcp github")
        #expect(secret.previous.count == 1 && secret.previous[0].set == 10 && secret.previous[0].retired == 20)
        try VaultChange.secret(.rollBack(name: "github", now: 30)).apply(to: contents)
        secret = try #require(contents.toolSecret(named: "github"))
        #expect(text(secret.value) == "ghp_first-000000000000" && secret.updated == 10 && text(secret.previous[0].secret) == "ghp_second-00000000000")
        try VaultChange.secret(.rename(from: "github", to: "mcp.github.TOKEN")).apply(to: contents)
        #expect(contents.toolSecret(named: "github") == nil && contents.toolSecret(named: "mcp.github.TOKEN")?.previous.count == 1)
        try VaultChange.secret(.remove(name: "mcp.github.TOKEN")).apply(to: contents)
        #expect(contents.toolSecrets.isEmpty)
    }

    @Test func refusalsNameTheSecretAndChangeNothing() throws {
        let contents = VaultContents()
        try VaultChange.secret(.set(name: "a", value: SecretBytes(utf8: "one"), now: 1, usedBy: nil)).apply(to: contents)
        try VaultChange.secret(.set(name: "b", value: SecretBytes(utf8: "two"), now: 1, usedBy: nil)).apply(to: contents)
        #expect(throws: VaultError.secretNotFound(name: "c")) { try VaultChange.secret(.remove(name: "c")).apply(to: contents) }
        #expect(throws: VaultError.secretExists(name: "b")) { try VaultChange.secret(.rename(from: "a", to: "b")).apply(to: contents) }
        #expect(throws: VaultError.noEarlierSecretValue(name: "a")) { try VaultChange.secret(.rollBack(name: "a", now: 2)).apply(to: contents) }
        #expect(throws: VaultError.self) { try VaultChange.secret(.set(name: "c", value: SecretBytes(utf8: "x\u{1b}y"), now: 1, usedBy: nil)).apply(to: contents) }
        #expect(contents.toolSecrets.map(\.name) == ["a", "b"])
    }

    @Test func valuesArePrintableTextUpTo64KiB() {
        #expect(ToolSecret.problem(with: SecretBytes(utf8: String(repeating: "a", count: 65536)), multiline: false) == nil)
        #expect(ToolSecret.problem(with: SecretBytes(utf8: String(repeating: "a", count: 65537)), multiline: false) != nil)
        #expect(ToolSecret.problem(with: SecretBytes(utf8: pem), multiline: false) != nil)
        #expect(ToolSecret.problem(with: SecretBytes(utf8: pem), multiline: true) == nil)
        #expect(ToolSecret.problem(with: SecretBytes(utf8: "pässwörd"), multiline: false) == nil)
        #expect(ToolSecret.problem(with: SecretBytes(copying: [0x61, 0xff, 0x62]), multiline: false) != nil)
    }

    @Test func theSecretsSurviveASaveAndAnOpenInByteOrder() throws {
        let contents = VaultContents()
        try contents.setKey("default", secret: SecretBytes(utf8: "AQ.key-0000000000000000000000000000000000000"), now: 1)
        for (name, value) in [("zeta", "z-value"), ("Alpha", pem), ("beta", String(repeating: "b", count: 65536))] {
            try VaultChange.secret(.set(name: name, value: SecretBytes(utf8: value), now: 2, usedBy: name == "zeta" ? "tool" : nil)).apply(to: contents)
        }
        try VaultChange.secret(.set(name: "zeta", value: SecretBytes(utf8: "z-value-2"), now: 3, usedBy: nil)).apply(to: contents)
        let reread = try VaultContents.decode(try contents.encoded(), path: "t")
        #expect(reread.toolSecrets.map(\.name) == ["Alpha", "beta", "zeta"])
        #expect(text(try #require(reread.toolSecret(named: "Alpha")).value) == pem)
        let zeta = try #require(reread.toolSecret(named: "zeta"))
        #expect(text(zeta.value) == "z-value-2" && text(zeta.previous[0].secret) == "z-value" && zeta.usedBy == "tool")
        #expect(reread.key(named: "default") != nil)
        try reread.encoded().withUnsafeBytes { #expect($0.first == VaultContents.payloadVersion) }
    }

    /// A version 8 payload (no secrets section) still reads, with no secrets.
    @Test func aVersionEightPayloadStillReads() throws {
        let contents = VaultContents()
        try contents.setKey("default", secret: SecretBytes(utf8: "AQ.key-0000000000000000000000000000000000000"), now: 1)
        let encoded = try contents.encoded()
        let length = try encoded.withUnsafeBytes { try Sodium.unpad($0, blockSize: VaultContents.paddingBlock) }
        var bytes = encoded.withUnsafeBytes { Array($0.prefix(length)) }
        #expect(bytes[0] == 11 && bytes.suffix(2) == [0, 0])
        bytes[0] = 8
        bytes.removeLast(2)
        let buffer = SecretBytes(count: bytes.count + VaultContents.paddingBlock)
        let total = try buffer.withUnsafeMutableBytes { raw in
            raw.copyBytes(from: bytes)
            return try Sodium.pad(raw, unpaddedLength: bytes.count, blockSize: VaultContents.paddingBlock)
        }
        let old = try VaultContents.decode(SecretBytes(copying: buffer.withUnsafeBytes { Array($0.prefix(total)) }), path: "test")
        #expect(old.toolSecrets.isEmpty && old.key(named: "default") != nil)
    }

    /// Payload version 10: a linked secret keeps its link through a save, a rollback and a
    /// rename; a refresh is taken only from the link it started from; a plain set unlinks.
    @Test func aLinkedSecretKeepsItsLinkAndARefreshNeedsTheSameStart() throws {
        let contents = VaultContents()
        let link = SecretLink(reference: "gsm://projects/p/secrets/token", version: 1, fetched: 10)
        try VaultChange.secret(.link(name: "gh", value: SecretBytes(utf8: "ghp_one"), now: 10, link: link)).apply(to: contents)
        var reread = try VaultContents.decode(try contents.encoded(), path: "t")
        #expect(reread.toolSecret(named: "gh")?.link == link)
        let newer = SecretLink(reference: link.reference, version: 2, fetched: 20)
        let stale = try VaultChange.secret(.refreshLink(name: "gh", value: SecretBytes(utf8: "ghp_two"), now: 20, link: newer, since: 9)).apply(to: reread)
        let kept = try #require(reread.toolSecret(named: "gh"))
        #expect(!stale.replaced && text(kept.value) == "ghp_one")
        let taken = try VaultChange.secret(.refreshLink(name: "gh", value: SecretBytes(utf8: "ghp_two"), now: 20, link: newer, since: 10)).apply(to: reread)
        let refreshed = try #require(reread.toolSecret(named: "gh"))
        #expect(taken.replaced && text(refreshed.value) == "ghp_two")
        try VaultChange.secret(.rename(from: "gh", to: "github")).apply(to: reread)
        reread = try VaultContents.decode(try reread.encoded(), path: "t")
        let renamed = try #require(reread.toolSecret(named: "github"))
        #expect(renamed.link == newer && text(renamed.previous[0].secret) == "ghp_one")
        try VaultChange.secret(.set(name: "github", value: SecretBytes(utf8: "typed"), now: 30, usedBy: nil)).apply(to: reread)
        #expect(reread.toolSecret(named: "github")?.link == nil)
    }

    /// A version 9 payload (a secret without a link marker) still reads, unlinked.
    @Test func aVersionNinePayloadWithASecretStillReads() throws {
        let contents = VaultContents()
        try VaultChange.secret(.set(name: "gh", value: SecretBytes(utf8: "ghp_one"), now: 1, usedBy: nil)).apply(to: contents)
        let encoded = try contents.encoded()
        let length = try encoded.withUnsafeBytes { try Sodium.unpad($0, blockSize: VaultContents.paddingBlock) }
        var bytes = encoded.withUnsafeBytes { Array($0.prefix(length)) }
        // Version 10 adds a 0 link marker, a 0 sent serial (8 bytes) and a 0 sender marker; 11 lays
        // out a vault without a hybrid identity as 10 does.
        #expect(bytes[0] == 11 && bytes.suffix(10).allSatisfy { $0 == 0 })
        bytes[0] = 9
        bytes.removeLast(10)
        let buffer = SecretBytes(count: bytes.count + VaultContents.paddingBlock)
        let total = try buffer.withUnsafeMutableBytes { raw in
            raw.copyBytes(from: bytes)
            return try Sodium.pad(raw, unpaddedLength: bytes.count, blockSize: VaultContents.paddingBlock)
        }
        let old = try VaultContents.decode(SecretBytes(copying: buffer.withUnsafeBytes { Array($0.prefix(total)) }), path: "test")
        let secret = try #require(old.toolSecret(named: "gh"))
        #expect(secret.link == nil && text(secret.value) == "ghp_one")
    }
}
