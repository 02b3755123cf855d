import GemvaultTesting
import Testing
import VaultCore
@testable import Agent
@testable import KeyResolution
import Settings
@testable import VaultAccess

/// A passphrase that must not be needed: the session answers.
private struct UnusedPassphrase: UnlockUI {
    var canAsk: Bool { true }
    func ask(_ request: SecretRequest) throws -> SecretBytes? { throw VaultError.wrongPassphrase }
}

@Suite(.serialized) struct SessionRoundTripTests {
    /// `ask` through an unlocked session resolves its key with one request to the agent: the
    /// vault's settings and the key come back together.
    @Test func theKeyAndTheSettingsComeInOneRoundTrip() throws {
        let folder = TemporaryFolder("trips")
        let key = "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"
        let vault = try TestVault(in: folder, keys: ["work": key], settings: ["key": "work"])
        let agent = try InProcessAgent(store: vault.store, generations: vault.generations, runtimeFolder: folder.appending("run"))
        try agent.unlock(vault.document)

        let access = VaultAccess(file: VaultFileAccess(store: vault.store, rollback: RollbackGuard(record: vault.generations, vaultPath: vault.store.path,
                                                                                                   acceptsRollback: false), warn: { _ in }),
                                 agent: agent.client, ui: UnusedPassphrase(), observe: { _ in }, warn: { _ in })
        let resolver = KeyResolver(keyFileFlag: nil, environment: [:], paths: Paths(environment: ["HOME": folder.path]), explicitKeyName: nil,
                                   layers: SettingLayers(environment: [:]), vault: access, warn: { _ in })
        let ((resolved, _), requests) = try agent.requests { try resolver.resolve() }
        #expect(requests == 1)
        expectSecret(resolved.secret, equals: key)
        #expect(resolved.source == .vault(path: vault.store.path, name: "work"))
        agent.stop()
    }
}
