import AgeFormat
import Foundation
import Glibc
import Sharing
import SystemIO
import Testing
import VaultCore
@testable import Agent
@testable import VaultAccess

private struct Passphrase: PassphraseSource {
    let text: String?
    var canProvide: Bool { text != nil }
    func withSecret<T>(for kind: UnlockKind, _ attempt: (Unlock) throws -> T) throws -> T {
        guard let text else { throw VaultError.wrongPassphrase }
        return try attempt(.passphrase(SecretBytes(utf8: text)))
    }
}

private final class RunningAgent: @unchecked Sendable {
    let server: AgentServer
    let stopped = DispatchSemaphore(value: 0)
    init(_ server: AgentServer) { self.server = server }
}

/// The sharing identity through a session (its secrets stay in the agent) and with the passphrase.
@Suite(.serialized) struct SharingAccessTests {
    static let passphrase = "correct horse battery staple"

    @Test func theSessionSignsAndAgreesButTheIdentityIsTheVaults() throws {
        var template = Array((NSTemporaryDirectory() + "/gemvault-sharing-XXXXXX").utf8CString)
        let folder = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let store = VaultStore(path: folder + "/vault/vault")
        let document = try VaultDocument.create(path: store.path, passphrase: SecretBytes(utf8: Self.passphrase), recoveryCode: RecoveryCode.generate(),
                                                kdf: KDFParameters.Preset.interactive.parameters)
        try document.contents.setKey("lab", secret: SecretBytes(utf8: "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"), now: 10)
        try store.withExclusiveLock { session in try store.write(try document.sealed(), in: session) }
        let generations = GenerationRecord(stateDirectory: folder + "/state")
        let paths = AgentPaths(environment: ["XDG_RUNTIME_DIR": folder + "/run"], vaultPath: store.path)
        _ = try TrustedFolder.create(folder + "/run")
        let agent = RunningAgent(AgentServer(paths: paths, store: store, generations: generations, log: { _ in }))
        Thread.detachNewThread {
            _ = try? agent.server.run()
            agent.stopped.signal()
        }
        let client = AgentClient(paths: paths)
        var started = false
        for _ in 0..<500 where !started {
            started = (try? client.status()) != nil
            if !started { usleep(10_000) }
        }
        #expect(started)
        _ = try client.unlock(kek: try #require(document.keyEncryptionKey), idle: 600, max: 600)
        func access(agent: AgentClient?, passphrase: String?) -> VaultAccess {
            VaultAccess(file: VaultFileAccess(store: store, rollback: RollbackGuard(record: generations, vaultPath: store.path, acceptsRollback: false),
                                              warn: { _ in }),
                        agent: agent, passphrase: Passphrase(text: passphrase), observe: { _ in }, warn: { _ in })
        }

        // Made on first use, inside the agent; asked again, the same identity.
        let session = try access(agent: client, passphrase: nil).sharingIdentity(defaultLabel: "alice@lab")
        let again = try access(agent: client, passphrase: nil).sharingIdentity(defaultLabel: "ignored")
        #expect(session.recipient == again.recipient && session.signingPublicKey == again.signingPublicKey && again.label == "alice@lab")

        // The vault file holds it: opened with the passphrase, it is the same identity.
        let local = try access(agent: nil, passphrase: Self.passphrase).sharingIdentity(defaultLabel: "ignored")
        #expect(local.recipient == session.recipient && local.fingerprint == session.fingerprint)

        // A share signed through the session verifies; a file to the recipient opens through it.
        let share = try ShareDocument.signed(name: "lab", key: SecretBytes(utf8: "AQ.k"), googleKey: nil, serial: 1, created: 5, identity: session)
        #expect(share.isSignatureValid && share.sender.signingKey == local.signingPublicKey)
        let file = try AgeFile.encrypt(SecretBytes(utf8: "a key"), to: [session.recipientKey])
        #expect(try AgeFile.decrypt(file, with: [session.age]).isEqual(to: SecretBytes(utf8: "a key")))

        // The agent signs share documents only.
        #expect(throws: AgentError.self) { try client.signShare(SecretBytes(utf8: "transfer all the money")) }

        // Sharing records travel through the session.
        _ = try client.apply(.recordSharing(name: "lab", record: KeySharing(serial: 1, recipients: [
            ShareRecipient(recipient: "age1x", label: "bob", added: 3, path: "/tmp/lab.age"),
        ])))
        #expect(try access(agent: client, passphrase: nil).sharingRecords()["lab"]?.recipients.first?.label == "bob")
        try client.lock()
        agent.stopped.wait()
    }
}
