import AgeFormat
import GemvaultTesting
import Sharing
import Testing
import VaultCore
@testable import Agent
@testable import VaultAccess

private struct Passphrase: UnlockUI {
    let text: String?
    var canAsk: Bool { text != nil }
    func ask(_ request: SecretRequest) throws -> SecretBytes? {
        guard let text else { throw VaultError.wrongPassphrase }
        return request.attempt == 1 && request.source != .terminalOnly ? SecretBytes(utf8: text) : nil
    }
}

/// The sharing identity through a session (its secrets stay in the agent) and with the passphrase.
@Suite(.serialized) struct SharingAccessTests {
    @Test func theSessionSignsAndAgreesButTheIdentityIsTheVaults() throws {
        let folder = TemporaryFolder("sharing")
        let vault = try TestVault(in: folder, keys: ["lab": "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"])
        let store = vault.store, generations = vault.generations
        let agent = try InProcessAgent(store: store, generations: generations, runtimeFolder: folder.appending("run"))
        defer { agent.stop() }
        try agent.unlock(vault.document)
        let client = agent.client
        func access(agent: AgentClient?, passphrase: String?) -> VaultAccess {
            VaultAccess(file: VaultFileAccess(store: store, rollback: RollbackGuard(record: generations, vaultPath: store.path, acceptsRollback: false),
                                              warn: { _ in }),
                        agent: agent, ui: Passphrase(text: passphrase), observe: { _ in }, warn: { _ in })
        }

        // Made on first use, inside the agent; asked again, the same identity.
        let session = try access(agent: client, passphrase: nil).sharingIdentity(defaultLabel: "alice@lab")
        let again = try access(agent: client, passphrase: nil).sharingIdentity(defaultLabel: "ignored")
        #expect(session.recipient == again.recipient && session.signingPublicKey == again.signingPublicKey && again.label == "alice@lab")

        // The vault file holds it: opened with the passphrase, it is the same identity.
        let local = try access(agent: nil, passphrase: TestVault.passphrase).sharingIdentity(defaultLabel: "ignored")
        #expect(local.recipient == session.recipient && local.fingerprint == session.fingerprint)

        // A share signed through the session is the agent's own: built from the key the vault
        // holds, with the next serial, naming its recipients; it verifies against the vault's key.
        let bob = X25519Identity.generate().recipient.text
        let signed = try access(agent: client, passphrase: nil).signNextShare(of: "lab", for: [[bob]])
        guard case .share(let share) = try SharePlaintext.read(signed.documents[0]) else { throw VaultError.cryptoFailure("not a share") }
        #expect(share.isSignatureValid && share.sender.signingKey == local.signingPublicKey && share.serial == 1 && signed.serial == 1)
        #expect(share.recipients == [bob] && share.key.isEqual(to: SecretBytes(utf8: "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp")))
        let file = try AgeFile.encrypt(SecretBytes(utf8: "a key"), to: [session.recipientKey])
        #expect(try AgeFile.decrypt(file, with: [session.age]).isEqual(to: SecretBytes(utf8: "a key")))

        // No change sets the serial: a record claiming a huge one leaves the next share at 2.
        _ = try client.apply(.recordSharing(name: "lab", record: KeySharing(sentSerial: ShareDocument.maxSerial - 1)))
        #expect(try access(agent: client, passphrase: nil).signNextShare(of: "lab", for: [[bob]]).serial == 2)
        // A key the vault does not hold is not signed, nor are malformed recipients.
        #expect(throws: AgentError.self) { try client.signNextShare("other", for: [[bob]]) }
        #expect(throws: AgentError.self) { try client.signNextShare("lab", for: [["transfer all the money"]]) }
        // Without a session, the vault opened here signs the same way, and counts on.
        #expect(try access(agent: nil, passphrase: TestVault.passphrase).signNextShare(of: "lab", for: [[bob], [bob]]).serial == 3)

        // Sharing records travel through the session.
        _ = try client.apply(.recordSharing(name: "lab", record: KeySharing(serial: 1, recipients: [
            ShareRecipient(recipient: "age1x", label: "bob", added: 3, path: "/tmp/lab.age"),
        ])))
        #expect(try access(agent: client, passphrase: nil).sharingRecords()["lab"]?.recipients.first?.label == "bob")
    }
}
