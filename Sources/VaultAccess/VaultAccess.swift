import AgeFormat
import Agent
import Sharing
import SSHAgent
import SystemIO
import VaultCore

/// The one home for reaching a vault, used by every command: the file's checks that need no
/// secret (permissions, checksum, KDF bounds, the rollback rule), opening through the unlocked
/// session or with the passphrase, saving above every generation seen, and narrow questions
/// (one key, the settings, the key summaries) that through a session carry only what was asked.
public final class VaultAccess {
    /// The file's own rules, which the agent follows too.
    public let file: VaultFileAccess
    /// The session to ask first; nil with `--no-session`.
    let agent: AgentClient?
    /// This vault's agent even with `--no-session`: a session that runs follows a new key.
    let agentOfVault: AgentClient?
    /// What this command asks secrets with and tells notes to.
    public let ui: any UnlockUI
    /// The ways in, tried in order when any will do (`UnlockMethods.standard`).
    let methods: [any UnlockMethod]
    /// Told of the contents whenever they are opened or saved here (the history's recipient).
    let observe: (VaultContents) -> Void
    let warn: (String) -> Void
    /// Hears that another writer holds the vault's lock, while this one waits.
    let onLockWait: (String) -> Void
    /// The vault opened with the passphrase, kept for the rest of the command: one Argon2 run.
    private var opened: UnlockedVault?
    /// The opened vault's key, after a guarding lock dropped what was read: the next read opens
    /// the file again with it instead of asking again.
    private var keyToReopen: UnlockKey?

    public init(file: VaultFileAccess, agent: AgentClient?, agentOfVault: AgentClient? = nil, ui: any UnlockUI,
                methods: [any UnlockMethod] = UnlockMethods.standard(sshAgent: nil),
                observe: @escaping (VaultContents) -> Void, warn: @escaping (String) -> Void, onLockWait: @escaping (String) -> Void = { _ in }) {
        self.onLockWait = onLockWait
        self.file = file
        self.agent = agent
        self.agentOfVault = agentOfVault ?? agent
        self.ui = ui
        self.methods = methods
        self.observe = observe
        self.warn = warn
    }

    /// Seconds to wait for another writer's lock when GEMVAULT_LOCK_TIMEOUT is not set.
    public static let defaultLockTimeout = VaultStore.defaultLockTimeout

    /// The vault at `path` for one command: its lock (waiting `lockTimeout` seconds for
    /// another writer, told to the UI), its record of generations seen in `stateDirectory`, and
    /// its agent, asked first unless `useSession` is false (`--no-session`). Warnings go to the
    /// UI; `observe` is a library's (the history store's), not the command's.
    public convenience init(path: String, lockTimeout: Double, stateDirectory: String, acceptsRollback: Bool, agentPaths: AgentPaths, useSession: Bool,
                            ui: any UnlockUI, methods: [any UnlockMethod], observe: @escaping (VaultContents) -> Void) {
        let rollback = RollbackGuard(record: GenerationRecord(stateDirectory: stateDirectory), vaultPath: ProcessIdentity.absolutePath(path),
                                     acceptsRollback: acceptsRollback)
        self.init(file: VaultFileAccess(store: VaultStore(path: path, lockTimeout: lockTimeout), rollback: rollback, warn: { ui.warn($0) }),
                  agent: useSession ? AgentClient(paths: agentPaths) : nil, agentOfVault: AgentClient(paths: agentPaths),
                  ui: ui, methods: methods, observe: observe, warn: { ui.warn($0) }, onLockWait: { ui.note($0) })
    }

    public var store: VaultStore { file.store }
    public var path: String { file.path }
    /// Whether the vault is there; once seen, it is taken to stay for the command.
    public var exists: Bool {
        if seenToExist { return true }
        seenToExist = store.exists
        return seenToExist
    }
    private var seenToExist = false
    /// Set once a request found no session to use: the command asks the agent no more.
    var noSession = false
    /// What the session answered that a command asks for more than once: the vault's settings
    /// and the conversation keys. Dropped after a change, or when the chat's watch saw one.
    struct KeptAnswer {
        var settings: [String: String]?
        var conversationKeys: [SecretBytes]?
    }
    var kept: KeptAnswer?
    /// A chat's watch on the session (`sessionStillOpen`), and whether the agent has none.
    var sessionWatch: SessionWatch?
    var watchUnsupported = false
    /// Whether a request was answered through the session in this command.
    public internal(set) var answeredBySession = false
    var pinDeclined = false

    /// The file, checked without a secret: read and parsed once per command (again only under
    /// the lock of a write, and after one).
    public func readFile() throws -> VaultFile {
        if let checkedFile { return checkedFile }
        parses += 1
        let vault = try file.readFile()
        checkedFile = vault
        return vault
    }
    private var checkedFile: VaultFile?
    /// How many times this command parsed the vault file (the unit tests count them).
    private(set) var parses = 0

    /// Takes a lock that guards this vault's file beside its own (a key's rotation lock). Its
    /// holder may have written the vault meanwhile, so what this command read is dropped here,
    /// and the next read sees the file as it is now.
    public func acquireGuardingLock(_ name: String, in folder: TrustedFolder, timeout: Double,
                                    onWait: (String) -> Void) throws(FileLock.Failure) -> FileLock {
        let lock = try FileLock.acquire(name, in: folder, timeout: timeout, onWait: onWait)
        checkedFile = nil
        // The secret stays: the file is opened again with the key already derived, so one
        // command asks once (a passphrase from a descriptor cannot be read twice).
        if let opened { keyToReopen = opened.key }
        opened = nil
        return lock
    }

    /// Everything that can be checked without a secret, done before a prompt so nobody types
    /// a passphrase for a bad file.
    public func checkBeforePrompt() throws {
        guard exists else { throw VaultError.notFound(path: path) }
        _ = try readFile()
    }

    // MARK: Opening

    /// The vault opened with the passphrase (once per command).
    public func openDocument() throws -> VaultDocument {
        if let opened { return opened.document }
        if let key = keyToReopen {
            keyToReopen = nil
            let reopened = try unlock(with: key)
            opened = reopened
            return reopened.document
        }
        let unlocked = try withUnlocked { $0 }
        opened = unlocked
        return unlocked.document
    }

    /// Opens the checked file with a key derived before (again only if the slot changed since).
    private func unlock(with key: UnlockKey) throws -> UnlockedVault {
        let vault = try readFile()
        let document = try key.open(vault, path: path)
        file.remember(document.file)
        observe(document.contents)
        return UnlockedVault(document: document, key: key, access: self)
    }

    /// The one way to read and then write with a secret: the ways in that serve `purpose` are
    /// tried in order (a secret is asked, retried on a terminal), the key derived once, and
    /// `work` gets the opened vault, whose writes reuse the derived key.
    public func withUnlocked<T>(_ purpose: UnlockPurpose = .anyWayIn, _ work: (UnlockedVault) throws -> T) throws -> T {
        if purpose == .anyWayIn, keyToReopen != nil { return try work(try openedVault()) }
        return try work(try unlock(with: try key(for: purpose)))
    }

    /// The first key a way in that serves `purpose` gives; `prompting` false tries only those
    /// that ask nothing (an ssh-agent).
    private func key(for purpose: UnlockPurpose, prompting: Bool = true) throws -> UnlockKey {
        let vault = try readFile()
        for method in methods where method.serves(purpose) && (prompting || !method.prompts) {
            if let key = try method.key(for: vault, purpose: purpose, access: self) { return key }
        }
        throw VaultError.wrongPassphrase
    }

    /// Runs `attempt` with the secret `request` names, read through the UI. On a terminal a
    /// wrong one may be typed again, three tries in all; a descriptor or a file gets one.
    public func withSecret<T>(_ request: SecretRequest, _ attempt: (SecretBytes) throws -> T) throws -> T {
        var request = request
        var wrong: Error = VaultError.wrongPassphrase
        while true {
            guard let secret = try ui.ask(request) else { throw wrong }
            try beforeDeriving?()
            do {
                return try attempt(secret)
            } catch let error as VaultError where (error == .wrongPassphrase || error == .wrongRecoveryCode) && request.attempt < 3 {
                wrong = error
                request.attempt += 1
                request.retryNote = "\(request.wrong), try again (\(4 - request.attempt) of 3 left)"
            }
        }
    }
    /// `unlockForSession`'s hook, run once a secret is read, before its derivation.
    private var beforeDeriving: (() throws -> Void)?

    /// Whether the vault can be opened without failing for lack of a terminal: a passphrase can
    /// be had, or a way in that asks nothing (an ssh slot) opens it now (kept for the command).
    public var canOpen: Bool {
        if ui.canAsk || opened != nil || keyToReopen != nil { return true }
        // A method's own failure is reported by the open that follows (the method throws it again).
        guard let key = try? key(for: .anyWayIn, prompting: false) else { return methods.contains { $0.failure != nil } }
        guard let vault = try? unlock(with: key) else { return false }
        opened = vault
        return true
    }

    /// `unlock`'s open: the ways in are tried, and once a secret is read `whileDeriving` runs
    /// (unlock starts the agent, which comes up while Argon2 runs), then the key is derived once.
    public func unlockForSession(whileDeriving: () throws -> Void) throws -> UnlockedVault {
        try checkBeforePrompt()
        return try withoutActuallyEscaping(whileDeriving) { hook in
            beforeDeriving = hook
            defer { beforeDeriving = nil }
            let key = try key(for: .anyWayIn)
            try hook()
            return try unlock(with: key)
        }
    }

    /// Hands an opened vault's key (the passphrase slot's key-encryption key, or the data key
    /// when an ssh slot opened it) to this vault's agent (also under --no-session: `unlock`
    /// starts the session whatever the flag says).
    public func startSession(with document: VaultDocument, idle: Double, max: Double) throws -> AgentStatus {
        guard let agent = agentOfVault else { throw VaultError.wrongPassphrase }
        return try agent.unlock(sessionKey: document.sessionKey, idle: idle, max: max)
    }

    /// The vault opened with the passphrase for this command (asked once), to read and write.
    public func openedVault() throws -> UnlockedVault {
        _ = try openDocument()
        return opened!
    }

    func isOpened(_ vault: UnlockedVault) -> Bool { opened === vault }
    func keepOpened(_ vault: UnlockedVault) { opened = vault }

    /// A vault this command just created, to write to with the key it was made with.
    public func created(_ document: VaultDocument) throws -> UnlockedVault {
        guard let kek = document.keyEncryptionKey else { throw VaultError.wrongPassphrase }
        return UnlockedVault(document: document, key: UnlockKey(VaultDocument.SessionKey.keyEncryptionKey(kek)), access: self)
    }

    /// The session agent for this vault (`gemvault agent`), with the commands' file rules.
    public func agentServer(paths: AgentPaths, log: @escaping @Sendable (String) -> Void) -> AgentServer {
        AgentServer(paths: paths, store: VaultStore(path: paths.vaultPath, lockTimeout: store.lockTimeout), generations: file.rollback.record, log: log)
    }

    /// A name of this vault that stays the same across its copies: its id (format 2), else its
    /// absolute path.
    public func identity() throws -> String {
        try readFile().vaultIDHex ?? ProcessIdentity.absolutePath(path)
    }

    /// Contents opened elsewhere (a vault just made, an unlock): told to `observe` like the rest.
    public func note(_ contents: VaultContents) { observe(contents) }

    // MARK: Narrow questions

    /// One key, marked as used when `markUsed` (the session records it): one round trip to a
    /// session; without one, the file is checked, then `beforePrompt` may refuse (no
    /// passphrase can be had), then the passphrase is asked once.
    public func key(_ name: String, markUsed: Bool, beforePrompt: () throws -> Void = {}) throws -> StoredKey? {
        if let answer = try throughSession({ agent throws(AgentError) in try agent.key(name, markUsed: markUsed) }) { return answer }
        try checkBeforePrompt()
        try beforePrompt()
        let contents = try openDocument().contents
        var stored = contents.key(named: name)
        stored?.followed = contents.sharing[name]?.follow
        return stored
    }

    /// What can be shown of every key, without their values.
    public func keySummaries() throws -> [KeySummary] {
        if let summaries = try throughSession({ agent throws(AgentError) in try agent.keySummaries() }) { return summaries }
        return try openDocument().contents.summaries
    }

    /// The vault's own settings.
    public func settings() throws -> [String: String] {
        if let settings = try sessionSettings() { return settings }
        return try openDocument().contents.settings
    }

    /// The vault's own settings without a prompt nobody could answer: from the session, else
    /// from the vault opened when a passphrase can be had (`canOpen`); nil when neither.
    public func settingsIfOpenable() throws -> (settings: [String: String], fromSession: Bool)? {
        if let settings = try sessionSettings() { return (settings, true) }
        return canOpen ? (try settings(), false) : nil
    }

    /// The names of the keys in `file` (a vault about to be replaced: `init --force` counts
    /// them) opened with `passphrase`, without keeping it open; nil when it does not open.
    public func keyNames(in file: VaultFile, passphrase: SecretBytes) -> [String]? {
        (try? VaultDocument.open(file, path: path, key: PassphraseKey.unlocking(file, with: passphrase)))?.contents.keys.map(\.name)
    }

    /// The vault's settings and conversation keys when they come without a prompt: from the
    /// vault this command already opened, or an unlocked session; nil otherwise.
    public func settingsAndConversationKeysWithoutPrompt() throws -> (settings: [String: String], conversationKeys: [SecretBytes])? {
        if let opened { return (opened.document.contents.settings, opened.document.contents.conversationKeys) }
        guard let settings = try sessionSettings(), let keys = try sessionConversationKeys() else { return nil }
        return (settings, keys)
    }

    /// The keys that open the conversation history, current first.
    public func conversationKeys() throws -> [SecretBytes] {
        if let keys = try sessionConversationKeys() { return keys }
        return try openDocument().contents.conversationKeys
    }

    // MARK: Sharing

    /// The session's agent, holding the sharing identity, could not be asked: said as its own
    /// error, never as a damaged file or a low-order point.
    static func holderUnavailable(_ error: any Error) -> AgeError {
        AgeError(.holderUnavailable, "the session's agent could not open the share: " + ((error as? any ReportableError)?.report.message ?? "\(error)"))
    }

    /// The vault's sharing identity, made on first use (labelled `defaultLabel`): through the
    /// session, whose agent keeps the secrets (it agrees, and signs only shares it builds); else from the vault
    /// opened with the passphrase.
    public func sharingIdentity(defaultLabel: String) throws -> SharingIdentity {
        if let agent, let halves = try throughSession({ agent throws(AgentError) in try agent.sharingIdentity(defaultLabel: defaultLabel) }) {
            return try SharingIdentity(agreementKey: halves.agreementKey, signingKey: halves.signingKey, hybridKey: halves.hybridKey, label: halves.label,
                                       agree: { shares throws(AgeError) in
                                           do { return try agent.agree(shares) } catch { throw Self.holderUnavailable(error) }
                                       },
                                       decapsulate: { encs throws(AgeError) in
                                           do { return try agent.decapsulate(encs) } catch { throw Self.holderUnavailable(error) }
                                       })
        }
        try checkBeforePrompt()
        let vault = try openedVault()
        if vault.document.contents.identity == nil { _ = try vault.apply(.identity(label: defaultLabel, relabel: false)) }
        guard let identity = vault.document.contents.identity else { throw VaultError.cryptoFailure("the sharing identity was not kept") }
        return try SharingIdentity(identity)
    }

    /// Each key's sharing state (what `key share --list`, `key list` and `key which` show).
    public func sharingRecords() throws -> [String: KeySharing] {
        if let records = try throughSession({ agent throws(AgentError) in try agent.sharingRecords() }) { return records }
        return try openDocument().contents.sharing
    }

    // MARK: Changes

    /// One change: sent to the session as it is, or made under the vault's lock with the
    /// passphrase (asked before the lock is taken, so a person typing holds up no writer).
    @discardableResult
    public func apply(_ change: VaultChange) throws -> VaultChange.Outcome {
        try checkBeforePrompt()
        if let outcome = try throughSession({ agent throws(AgentError) in try agent.apply(change) }) {
            kept = nil
            // The history's recipient keeps the vault's `history` setting for locked commands.
            if case .setting(let name, _) = change, name == "history",
               let settings = try? sessionSettings(), let current = try? sessionConversationKeys()?.first {
                observe(VaultContents(settings: settings, conversationKey: current))
            }
            return outcome
        }
        // A command that opened the vault already (sharing: the identity, then the record) asks once.
        if opened == nil, keyToReopen != nil { _ = try openDocument() }
        if let opened { return try opened.apply(change) }
        return try withUnlocked { try $0.apply(change) }
    }

    /// A locked read-modify-write with a key derived before the lock: the file is read again
    /// under the lock and opened with `key` (derived again only if another writer's passwd
    /// changed the slot), `change` edits it, and it is saved.
    public func modify(with key: UnlockKey, backup: VaultStore.Backup = .previous, _ change: (VaultDocument) throws -> Void) throws {
        try store.withExclusiveLock(onWait: onLockWait) { session in
            guard let bytes = try session.read() else { throw VaultError.notFound(path: path) }
            parses += 1
            let document = try key.open(try file.checked(file.parse(bytes)), path: path)
            try change(document)
            try save(document, in: session, backup: backup)
            // What was just written is the vault: a later question in this command (sharing
            // after a rotation) reads it without another passphrase.
            opened = UnlockedVault(document: document, key: key, access: self)
        }
    }

    /// Seals and writes a document above every generation seen, then records the new one.
    /// `newVault` is for a vault made on purpose at this path (`init`, the first run).
    public func save(_ document: VaultDocument, in session: VaultStore.WriteSession, backup: VaultStore.Backup, newVault: Bool = false) throws {
        try file.save(document, in: session, backup: backup, newVault: newVault)
        // What was read before is no longer the vault.
        opened = nil
        checkedFile = nil
        kept = nil
        // A passphrase change's new conversation key, or a new `history` setting, applies at once.
        observe(document.contents)
    }
}

/// The vault opened with one secret, derived once: what it held when read, and writes made
/// with the same key under the vault's lock.
public final class UnlockedVault {
    /// The document as read before any write.
    public let document: VaultDocument
    public let key: UnlockKey
    let access: VaultAccess

    init(document: VaultDocument, key: UnlockKey, access: VaultAccess) {
        self.document = document
        self.key = key
        self.access = access
    }

    /// A locked read-modify-write of the current file with this key. The command's opened
    /// vault stays open through its own writes, holding what was written (plain `gemvault`
    /// stores a key, then chats without a second passphrase).
    public func modify(backup: VaultStore.Backup = .previous, _ change: (VaultDocument) throws -> Void) throws {
        let keptOpen = access.isOpened(self)
        var written: VaultContents?
        try access.modify(with: key, backup: backup) { document in
            try change(document)
            written = document.contents
        }
        if keptOpen, let written {
            document.replaceContents(written)
            access.keepOpened(self)
        }
    }

    /// One change, made under the lock on the current file.
    public func apply(_ change: VaultChange) throws -> VaultChange.Outcome {
        var outcome: VaultChange.Outcome?
        try modify { outcome = try change.apply(to: $0.contents) }
        return outcome!
    }
}

extension VaultAccess {
    /// A Google access token the unlocked session keeps for `key` (credential and scopes), if any.
    public func sessionToken(_ key: String) -> (token: SecretBytes, expiresAt: Int64)? {
        guard !noSession, let agent else { return nil }
        return (try? agent.takeToken(key)) ?? nil
    }

    /// Hands a fresh token to the unlocked session; without one it is kept nowhere.
    public func keepInSession(_ key: String, _ token: SecretBytes, expiresAt: Int64) {
        guard !noSession, let agent else { return }
        try? agent.putToken(key, token, expiresAt: expiresAt)
    }
}
