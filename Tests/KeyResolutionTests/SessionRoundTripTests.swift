import GemvaultTesting
import Testing
@testable import VaultCore
@testable import Agent
@testable import KeyResolution
import Settings
import SystemIO
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
        var resolver = KeyResolver(keyFileFlag: nil, environment: [:], paths: Paths(environment: ["HOME": folder.path]), explicitKeyName: nil,
                                   layers: SettingLayers(environment: [:]), vault: access, warn: { _ in })
        resolver.conversationKeysFromSession = true
        let ((resolved, _), requests) = try agent.requests { try resolver.resolve() }
        #expect(requests == 1)
        expectSecret(resolved.secret, equals: key)
        #expect(resolved.source == .vault(path: vault.store.path, name: "work"))
        // The history and the budget ask again in the same command: the answer is kept.
        let (_, later) = try agent.requests {
            _ = try access.conversationKeys()
            _ = try access.settingsAndConversationKeysWithoutPrompt()
            _ = try access.settings()
        }
        #expect(later == 0)
        #expect(access.answeredBySession)
        // A command that saves no conversation (exec) gets no conversation keys in its answer.
        let narrow = try agent.client.sessionAnswer(name: "work", nameFromSettings: true, markUsed: false, conversationKeys: false)
        #expect(narrow.conversationKeys == nil && narrow.key != nil)
        agent.stop()
    }

    /// A chat watches its session on one connection: turns make no request, a change through
    /// the session is told (and what was kept is asked again), and a lock closes the watch.
    @Test func aChatWatchesTheSessionWithoutARequestPerTurn() throws {
        let folder = TemporaryFolder("watch")
        let vault = try TestVault(in: folder, keys: ["work": "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"], settings: ["key": "work"])
        let agent = try InProcessAgent(store: vault.store, generations: vault.generations, runtimeFolder: folder.appending("run"))
        try agent.unlock(vault.document)
        let access = VaultAccess(file: VaultFileAccess(store: vault.store, rollback: RollbackGuard(record: vault.generations, vaultPath: vault.store.path,
                                                                                                   acceptsRollback: false), warn: { _ in }),
                                 agent: agent.client, ui: UnusedPassphrase(), observe: { _ in }, warn: { _ in })
        #expect(try access.sessionSettings()?["key"] == "work")
        #expect(access.sessionStillOpen())
        let (_, turns) = agent.requests { (0..<3).map { _ in access.sessionStillOpen() } }
        #expect(turns == 0)
        // A turn is still a use of the session: its idle clock starts again.
        let before = agent.server.lastActivity
        Clock.sleep(0.01)
        #expect(access.sessionStillOpen())
        #expect(waitUntil { agent.server.lastActivity > before })
        // Another command changes a setting through the session: the watch tells the chat.
        _ = try agent.client.apply(.setting(name: "model", value: "echo"))
        #expect(waitUntil { access.sessionStillOpen() && access.kept == nil })
        #expect(try access.sessionSettings()?["model"] == "echo")
        try agent.client.lock()
        #expect(waitUntil { !access.sessionStillOpen() })
        agent.stop()
    }

    /// Values the agent got one change at a time end in one buffer after each save, not in one
    /// allocation each (the agent's memory with 1,000 keys set through it).
    @Test func theAgentKeepsTheValuesItWasSentInOneBuffer() throws {
        let folder = TemporaryFolder("compact")
        let vault = try TestVault(in: folder, keys: ["work": "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"], settings: [:])
        let agent = try InProcessAgent(store: vault.store, generations: vault.generations, runtimeFolder: folder.appending("run"))
        try agent.unlock(vault.document)
        for index in 0..<10 {
            _ = try agent.client.apply(.setKey(name: "key\(index)", secret: SecretBytes(utf8: "AQ.Compact-\(index)-0123456789abcdefghijklmnopqrstu"), now: 1))
        }
        let keys = try #require(agent.server.document).contents.keys
        #expect(keys.count == 11)
        #expect(Set(keys.map { ObjectIdentifier($0.secret.memoryOwner) }).count == 1)
        expectSecret(try #require(try agent.client.key("key7", markUsed: false)).secret, equals: "AQ.Compact-7-0123456789abcdefghijklmnopqrstu")
        agent.stop()
    }

    /// Asks `condition` until it holds, for at most 5 s (the agent runs on its own thread).
    private func waitUntil(_ condition: () -> Bool) -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            Clock.sleep(0.01)
        }
        return false
    }
}
