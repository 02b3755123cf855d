import Agent
import GemvaultTesting
import SystemIO
import Testing
import VaultCore
@testable import VaultAccess

/// The passphrase a script would give, counted: a session that answers never asks for it.
private final class CountedPassphrase: UnlockUI, @unchecked Sendable {
    let text: String
    var asked = 0

    init(_ text: String = TestVault.passphrase) { self.text = text }

    var canAsk: Bool { true }

    func ask(_ request: SecretRequest) throws -> SecretBytes? {
        guard request.attempt == 1, request.source != .terminalOnly else { return nil }
        asked += 1
        return SecretBytes(utf8: text)
    }
}

/// The same, with a PIN typed at the PIN prompt (nil: Enter) and the notes it was told.
private final class PINTyping: UnlockUI, @unchecked Sendable {
    let pins: [String?]
    var typed = 0
    var asked = 0
    var notes: [String] = []

    init(_ pins: [String?]) { self.pins = pins }

    var canAsk: Bool { true }

    func ask(_ request: SecretRequest) throws -> SecretBytes? {
        guard request.source == .terminalOnly else {
            asked += 1
            return SecretBytes(utf8: TestVault.passphrase)
        }
        defer { typed += 1 }
        return typed < pins.count ? pins[typed].map { SecretBytes(utf8: $0) } : nil
    }

    func note(_ text: String) { notes.append(text) }
}

/// VaultAccess through a real agent on a temporary socket: unlock, the one-round-trip
/// questions, changes, lock, expiry and a key that does not open the vault.
@Suite(.serialized) struct SessionPathTests {
    static let work = "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"
    static let home = "AQ.Cd9TP7Mr1e4yU2nXw8zAl3QbJ6tKf0hGvF5cRjSuZoYpDaNiLq"

    /// A vault with two keys and its agent, still locked.
    private func setUp() throws -> (TestVault, InProcessAgent) {
        let vault = try TestVault(in: TemporaryFolder("session"), keys: ["work": Self.work, "home": Self.home],
                                  settings: ["key": "home", "model": "gemini-test"])
        let agent = try InProcessAgent(store: vault.store, generations: vault.generations, runtimeFolder: vault.folder.appending("run"))
        return (vault, agent)
    }

    /// One command's door to the vault, asking `agent` first.
    private func access(_ vault: TestVault, _ agent: InProcessAgent?, _ passphrase: any UnlockUI = CountedPassphrase()) -> VaultAccess {
        let rollback = RollbackGuard(record: vault.generations, vaultPath: vault.store.path, acceptsRollback: false)
        return VaultAccess(file: VaultFileAccess(store: vault.store, rollback: rollback, warn: { _ in }), agent: agent?.client,
                           ui: passphrase, observe: { _ in }, warn: { _ in })
    }

    @Test func unlockHandsTheDerivedKeyToTheAgentWhichThenAnswersWithoutAPassphrase() throws {
        let (vault, agent) = try setUp()
        let unlocking = access(vault, agent)
        #expect(try unlocking.sessionIsOpen() == false)
        let opened = try access(vault, agent).unlockForSession(whileDeriving: {})
        let status = try access(vault, agent).startSession(with: opened.document, idle: 600, max: 3600)
        #expect(status.unlocked && status.vaultPath == agent.paths.vaultPath)
        #expect(try #require(status.locksAt) - (status.unlockedAt ?? 0) <= 600)

        let passphrase = CountedPassphrase()
        let command = access(vault, agent, passphrase)
        #expect(try command.sessionIsOpen())
        expectSecret(try command.key("work", markUsed: false)?.secret, equals: Self.work)
        #expect(try command.keySummaries().map(\.name).sorted() == ["home", "work"])
        #expect(try command.settings() == ["key": "home", "model": "gemini-test"])
        #expect(passphrase.asked == 0 && command.parses == 0)
    }

    /// `ask` through a session: the settings and the key the `key` setting names, one request.
    @Test(arguments: [(false, "work", work), (true, "home", home)])
    func theSettingsAndAKeyComeInOneRoundTrip(nameFromSettings: Bool, expectedName: String, expectedKey: String) throws {
        let (vault, agent) = try setUp()
        try agent.unlock(vault.document)
        let command = access(vault, agent)
        let (answer, requests) = try agent.requests { try command.sessionSettingsAndKey(name: "work", nameFromSettings: nameFromSettings) }
        #expect(requests == 1)
        let (settings, name, key) = try #require(answer)
        #expect(settings["model"] == "gemini-test" && name == expectedName)
        expectSecret(key?.secret, equals: expectedKey)
    }

    @Test func aKeyTheVaultLacksComesBackAsNoneInTheSameRoundTrip() throws {
        let (vault, agent) = try setUp()
        try agent.unlock(vault.document)
        let (answer, requests) = try agent.requests { try access(vault, agent).sessionSettingsAndKey(name: "missing", nameFromSettings: false) }
        #expect(requests == 1 && answer?.name == "missing" && answer?.key == nil && answer?.settings["key"] == "home")
    }

    /// A change sent through the session is on disk: a command without a session reads it
    /// with the passphrase.
    @Test func aChangeThroughTheSessionReachesTheFile() throws {
        let (vault, agent) = try setUp()
        try agent.unlock(vault.document)
        let command = access(vault, agent)
        let (outcome, requests) = try agent.requests {
            try command.apply(.replaceKey(name: "work", secret: SecretBytes(utf8: Self.work + "x"), now: 20))
        }
        #expect(outcome.replaced && outcome.masked == "AQ.A…MhKp" && requests == 1)
        let passphrase = CountedPassphrase()
        let offline = access(vault, nil, passphrase)
        let stored = try #require(try offline.key("work", markUsed: false))
        expectSecret(stored.secret, equals: Self.work + "x")
        #expect(stored.updated == 20 && passphrase.asked == 1)
        #expect(try offline.keySummaries().first { $0.name == "work" }?.earlier.count == 1)
    }

    @Test func aChangeTheVaultRefusesChangesNothing() throws {
        let (vault, agent) = try setUp()
        try agent.unlock(vault.document)
        let before = try vault.store.read()
        #expect(throws: AgentError.noSuchKey("other")) {
            try access(vault, agent).apply(.replaceKey(name: "other", secret: SecretBytes(utf8: Self.work), now: 30))
        }
        #expect(try vault.store.read() == before)
    }

    /// After `lock` the agent is gone: the next command asks for the passphrase, once, and
    /// asks the agent no more after finding no session.
    @Test func afterLockTheCommandsUseThePassphrase() throws {
        let (vault, agent) = try setUp()
        try agent.unlock(vault.document)
        try agent.client.lock()
        #expect(agent.waitUntilStopped())
        let passphrase = CountedPassphrase()
        let command = access(vault, agent, passphrase)
        #expect(try command.sessionIsOpen() == false)
        #expect(try command.sessionSettingsAndKey(name: "work", nameFromSettings: true) == nil)
        expectSecret(try command.key("work", markUsed: false)?.secret, equals: Self.work)
        #expect(try command.settings()["model"] == "gemini-test")
        #expect(passphrase.asked == 1 && command.parses == 1)
    }

    /// A session idle past its limit, or open past its longest, ends by itself, and with it
    /// the key it held.
    @Test(arguments: [(1.0, 3600.0), (3600.0, 1.0)])
    func aSessionExpires(idle: Double, max: Double) throws {
        let (vault, agent) = try setUp()
        let status = try agent.unlock(vault.document, idle: idle, max: max)
        #expect(status.idleDeadline != nil && status.maxDeadline != nil)
        #expect(agent.waitUntilStopped(seconds: 30))
        #expect(throws: AgentError.notRunning) { try agent.client.status() }
        let passphrase = CountedPassphrase()
        expectSecret(try access(vault, agent, passphrase).key("home", markUsed: false)?.secret, equals: Self.home)
        #expect(passphrase.asked == 1)
    }

    /// A key-encryption key that does not open the vault leaves the agent locked; a locked
    /// agent is no session, so the passphrase answers.
    @Test func aWrongKeyLeavesTheAgentLocked() throws {
        let (vault, agent) = try setUp()
        #expect(throws: AgentError.wrongKey) { try agent.client.unlock(kek: SecretBytes.random(count: 32), idle: 600, max: 600) }
        #expect(try agent.client.status().unlocked == false)
        let passphrase = CountedPassphrase()
        let command = access(vault, agent, passphrase)
        let (stored, requests) = try agent.requests { try command.key("work", markUsed: true) }
        expectSecret(stored?.secret, equals: Self.work)
        #expect(requests == 1 && passphrase.asked == 1)
    }

    @Test func aWrongPassphraseStartsNoSession() throws {
        let (vault, agent) = try setUp()
        #expect(throws: VaultError.wrongPassphrase) {
            try access(vault, agent, CountedPassphrase("not the passphrase")).unlockForSession(whileDeriving: {})
        }
        #expect(try agent.client.status().unlocked == false)
    }

    /// A session locked while idle, with a PIN: the request that finds it locked learns the
    /// tries left in the same answer, the PIN opens it, the request is made again; no passphrase.
    @Test func anIdleLockedSessionOpensAgainWithItsPINAndAWrongOneCosts() throws {
        let (vault, agent) = try setUp()
        let opened = try access(vault, agent).unlockForSession(whileDeriving: {})
        _ = try access(vault, agent).startSession(with: opened.document, idle: 1, max: 600)
        _ = try agent.client.setPIN(SecretBytes(utf8: "4812"), tries: 3)
        Clock.sleep(1.8)
        #expect(try agent.client.status().unlocked == false)
        #expect(try agent.client.status().pinTriesLeft == 3)

        let typing = PINTyping(["0000", "4812"])
        let (stored, requests) = try agent.requests { try access(vault, agent, typing).key("work", markUsed: false) }
        expectSecret(stored?.secret, equals: Self.work)
        // locked, wrong PIN, right PIN, the request again
        #expect(requests == 4 && typing.asked == 0 && typing.typed == 2)
        #expect(typing.notes == ["wrong PIN (2 tries left)"])
        // The wrong one still counts: a right PIN does not reset it.
        #expect(try agent.client.status().pinTriesLeft == 2)
    }

    /// Google tokens are the unlocked session's: an idle lock (the agent lives on, with its PIN)
    /// forgets them, so the PIN opens a session that must fetch them again.
    @Test func anIdleLockForgetsTheSessionsTokens() throws {
        let (vault, agent) = try setUp()
        let opened = try access(vault, agent).unlockForSession(whileDeriving: {})
        _ = try access(vault, agent).startSession(with: opened.document, idle: 1, max: 600)
        _ = try agent.client.setPIN(SecretBytes(utf8: "4812"), tries: 3)
        try agent.client.putToken("credential scopes", SecretBytes(utf8: "ya29.session-token"), expiresAt: Clock.now() + 3600)
        expectSecret(try agent.client.takeToken("credential scopes")?.token, equals: "ya29.session-token")
        // Not one header-safe line, or too near its expiry: not kept.
        #expect(throws: AgentError.self) { try agent.client.putToken("other", SecretBytes(utf8: "ya29.a\nb"), expiresAt: Clock.now() + 3600) }
        #expect(throws: AgentError.self) { try agent.client.putToken("other", SecretBytes(utf8: "ya29.near"), expiresAt: Clock.now() + 200) }
        Clock.sleep(1.8)
        #expect(try agent.client.status().unlocked == false)
        try agent.client.unlockWithPIN(SecretBytes(utf8: "4812"))
        #expect(try agent.client.takeToken("credential scopes") == nil)
    }

    /// Enter at the PIN prompt goes on to the passphrase, and the PIN stays for later.
    @Test func enterAtThePINPromptAsksForThePassphrase() throws {
        let (vault, agent) = try setUp()
        let opened = try access(vault, agent).unlockForSession(whileDeriving: {})
        _ = try access(vault, agent).startSession(with: opened.document, idle: 1, max: 600)
        _ = try agent.client.setPIN(SecretBytes(utf8: "4812"), tries: 3)
        Clock.sleep(1.8)
        let typing = PINTyping([nil])
        expectSecret(try access(vault, agent, typing).key("work", markUsed: false)?.secret, equals: Self.work)
        #expect(typing.asked == 1 && typing.typed == 1)
        #expect(try agent.client.status().pinTriesLeft == 3)
    }

    /// `unlock` (moved out of the CLI): with an agent already listening, none is started and the
    /// vault is opened for it; once a session holds the vault, a second unlock leaves it alone.
    @Test func unlockOpensTheVaultForAListeningAgentAndLeavesARunningSessionAlone() throws {
        let (vault, agent) = try setUp()
        // An agent answers (locked), so the command that would start one is never run.
        let first = try access(vault, agent).unlockForNewSession(paths: agent.paths, agentCommand: ["/nonexistent/gemvault"], environment: [:])
        guard case .opened(let opened, let spawned) = first else { Issue.record("expected the vault opened, got \(first)"); return }
        #expect(spawned == nil)
        _ = try access(vault, agent).startSession(with: opened.document, idle: 600, max: 3600)
        let typing = CountedPassphrase()
        let second = try access(vault, agent, typing).unlockForNewSession(paths: agent.paths, agentCommand: ["/nonexistent/gemvault"], environment: [:])
        guard case .running(let status, let reopened) = second else { Issue.record("expected the running session, got \(second)"); return }
        #expect(status.unlocked && !reopened && typing.asked == 0)
    }
}
