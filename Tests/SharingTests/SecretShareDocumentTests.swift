import AgeFormat
import Foundation
import Sharing
import Testing
import VaultCore

/// A share of a secret for another tool: signed like a key share, but never readable as one
/// (nor a key share as a secret share), and its signature covers the same fields.
@Suite struct SecretShareDocumentTests {
    static let token = "ghp_sharedToken0123456789abcdefghijklmnop"

    static func share(from identity: SharingIdentity, value: String = token, serial: UInt64 = 1,
                      for recipients: [String] = [ShareDocumentTests.bob.recipient.text]) throws -> SecretShareDocument {
        try SecretShareDocument.signed(name: "mcp.github.TOKEN", secret: SecretBytes(utf8: value), serial: serial, created: 1_764_900_000,
                                       recipients: recipients, signer: try #require(identity.signer))
    }

    @Test func aSignedSecretShareSurvivesAgeAndVerifies() throws {
        let alice = try ShareDocumentTests.alice()
        let bob = ShareDocumentTests.bob
        let pem = "-----BEGIN PRIVATE KEY-----\nMIIEvQ \"quoted\" \\ é\n-----END PRIVATE KEY-----"
        for value in [Self.token, pem] {
            let file = try AgeFile.encrypt(try Self.share(from: alice, value: value).encoded(), to: [bob.recipient])
            let read = try SecretShareDocument.parse(try AgeFile.decrypt(file, with: [bob]))
            #expect(read.isSignatureValid)
            #expect(read.name == "mcp.github.TOKEN" && text(read.secret) == value && read.serial == 1 && read.created == 1_764_900_000)
            #expect(read.sender == ShareSender(signingKey: alice.signingPublicKey, label: "alice@lab"))
            #expect(read.isWritten(forAnyOf: [bob.recipient.text]) && !read.isWritten(forAnyOf: [ShareDocumentTests.carol.recipient.text]))
        }
    }

    @Test func aSecretShareIsNeverReadAsAKeyShareNorTheReverse() throws {
        let alice = try ShareDocumentTests.alice()
        let secretShare = try Self.share(from: alice).encoded()
        #expect(throws: SharingError.malformed("it is a share of a secret for another tool, not of a Gemini key")) { try SharePlaintext.read(secretShare) }
        let keyShare = try ShareDocumentTests.share(from: alice).encoded()
        #expect(throws: SharingError.malformed("it is a share of a Gemini key, not of a secret: import it with 'gemvault key import'")) {
            try SecretShareDocument.parse(keyShare)
        }
    }

    @Test func everySignedFieldIsCovered() throws {
        let alice = try ShareDocumentTests.alice()
        let genuine = try Self.share(from: alice, serial: 7)
        #expect(genuine.isSignatureValid)
        let changes: [(String, String)] = [("\"serial\":7", "\"serial\":8"), ("mcp.github.TOKEN", "mcp.github.OTHER"),
                                           (Self.token, "ghp_sharedToken0123456789abcdefghijklmnoX"), ("alice@lab", "alice@lab2")]
        for (from, to) in changes {
            let edited = text(genuine.encoded()).replacingOccurrences(of: from, with: to)
            let read = try SecretShareDocument.parse(SecretBytes(utf8: edited))
            #expect(!read.isSignatureValid, "\(from) -> \(to)")
        }
    }

    @Test func malformedSecretSharesAreRefused() throws {
        let alice = try ShareDocumentTests.alice()
        let genuine = text(try Self.share(from: alice).encoded())
        for (from, to) in [("\"serial\":1", "\"serial\":0"), ("\"gemvault_secret_share\":1", "\"gemvault_secret_share\":2"),
                           ("\"name\":\"mcp.github.TOKEN\"", "\"name\":\"-bad\""), ("\"recipients\":[", "\"recipients\":[\"age1nope\","),
                           ("\"secret\":\"ghp", "\"secret\":\"\\u0001ghp")] {
            #expect(throws: SharingError.self, "\(from)") { try SecretShareDocument.parse(SecretBytes(utf8: genuine.replacingOccurrences(of: from, with: to))) }
        }
    }
}
