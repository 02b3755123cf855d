import Foundation
import Glibc
import SystemIO
import Testing
import VaultCore
@testable import Agent
@testable import KeyResolution
import Settings
@testable import VaultAccess

/// A passphrase that must not be needed: the session answers.
private struct UnusedPassphrase: PassphraseSource {
    var canProvide: Bool { true }
    func withSecret<T>(for kind: UnlockKind, _ attempt: (Unlock) throws -> T) throws -> T { throw VaultError.wrongPassphrase }
}

/// The AgentServer runs on its own thread; the test reads its count only after it stopped.
private final class ServerBox: @unchecked Sendable {
    let server: AgentServer
    let stopped = DispatchSemaphore(value: 0)
    init(_ server: AgentServer) { self.server = server }
}

@Suite(.serialized) struct SessionRoundTripTests {
    /// `ask` through an unlocked session resolves its key with one request to the agent: the
    /// vault's settings and the key come back together.
    @Test func theKeyAndTheSettingsComeInOneRoundTrip() throws {
        var template = Array((NSTemporaryDirectory() + "/gemvault-trips-XXXXXX").utf8CString)
        let folder = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
        let store = VaultStore(path: folder + "/vault/vault")
        let document = try VaultDocument.create(path: store.path, passphrase: SecretBytes(utf8: "correct horse battery staple"),
                                                recoveryCode: RecoveryCode.generate(), kdf: KDFParameters.Preset.interactive.parameters)
        let key = "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"
        try document.contents.setKey("work", secret: SecretBytes(utf8: key), now: 10)
        try document.contents.setSetting("key", value: "work")
        try store.withExclusiveLock { session in try store.write(try document.sealed(), in: session) }
        let generations = GenerationRecord(stateDirectory: folder + "/state")
        let paths = AgentPaths(environment: ["XDG_RUNTIME_DIR": folder + "/run"], vaultPath: store.path)
        _ = try TrustedFolder.create(folder + "/run")
        let box = ServerBox(AgentServer(paths: paths, store: store, generations: generations, log: { _ in }))
        Thread.detachNewThread {
            _ = try? box.server.run()
            box.stopped.signal()
        }
        let client = AgentClient(paths: paths)
        var started = false
        for _ in 0..<500 where !started {
            started = (try? client.status()) != nil
            if !started { usleep(10_000) }
        }
        #expect(started)
        _ = try client.unlock(kek: try #require(document.keyEncryptionKey), idle: 600, max: 600)

        let vault = VaultAccess(file: VaultFileAccess(store: store, rollback: RollbackGuard(record: generations, vaultPath: store.path, acceptsRollback: false),
                                                      warn: { _ in }),
                                agent: client, passphrase: UnusedPassphrase(), observe: { _ in }, warn: { _ in })
        let resolver = KeyResolver(keyFileFlag: nil, environment: [:], paths: Paths(environment: ["HOME": folder]), explicitKeyName: nil,
                                   layers: SettingLayers(environment: [:]), vault: vault, warn: { _ in })
        let (before, _) = try resolveCounting(resolver, box, client)
        #expect(before.secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == key)
        #expect(before.source == .vault(path: store.path, name: "work"))
        try client.lock()
        box.stopped.wait()
    }

    /// Resolves once and checks the agent answered exactly one request for it (the counts are
    /// read between requests, while the agent waits in poll).
    private func resolveCounting(_ resolver: KeyResolver, _ box: ServerBox, _ client: AgentClient) throws -> (ResolvedKey, Settings) {
        let start = box.server.requestsAnswered
        let resolved = try resolver.resolve()
        #expect(box.server.requestsAnswered - start == 1)
        return resolved
    }
}
