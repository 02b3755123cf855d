import Agent
import GemvaultConfig
import SystemIO
import TerminalIO
import VaultCore

/// What every command shares: the environment, paths, and how to reach the vault.
struct Context {
    let environment: [String: String]
    let paths: Paths
    let options: [String: String]
    /// Argon2 bounds for files read from disk; only tests of the library loosen them.
    let kdfPolicy: KDFPolicy = .standard

    init(environment: [String: String], options: [String: String]) {
        self.environment = environment
        self.paths = Paths(environment: environment)
        self.options = options
    }

    var vaultPath: String { paths.vault(flag: options["--vault"]) }
    /// GEMVAULT_LOCK_TIMEOUT seconds, 10 by default.
    var store: VaultStore {
        VaultStore(path: vaultPath, lockTimeout: environment["GEMVAULT_LOCK_TIMEOUT"].flatMap(Double.init).map { max(0, $0) } ?? 10)
    }
    var generations: GenerationRecord { GenerationRecord(stateDirectory: paths.stateHome) }
    var acceptsRollback: Bool { options["--accept-rollback"] != nil }

    /// `--color`, then the `color` setting, then auto (a terminal without NO_COLOR or TERM=dumb).
    func style(_ settings: Settings?, fd: Int32) -> Style {
        let mode = options["--color"].flatMap(ColorMode.init) ?? settings.flatMap { ColorMode(rawValue: $0[.color]) } ?? .auto
        return Style.decide(mode: mode, environment: environment, isTerminal: Terminal.isTerminal(fd))
    }

    /// The agent of this vault (which may not be running).
    var agent: AgentClient { AgentClient(paths: AgentPaths(environment: environment, vaultPath: vaultPath)) }

    /// The contents of an unlocked session for this vault, or nil when no agent holds it.
    /// Never prompts. A session that answers with a rollback or an untrusted socket is an error.
    func sessionContents(used name: String? = nil) throws -> (generation: UInt64, contents: VaultContents)? {
        guard store.exists, options["--no-session"] == nil else { return nil }
        do throws(AgentError) {
            return try agent.contents(used: name)
        } catch {
            switch error {
            case .notRunning, .locked, .wrongKey: return nil
            case .refused(let failure):
                // Another user may have made /tmp/gemvault-<uid>: no session, but no lock-out either.
                Console.warning("the session is not used: \(failure.message)")
                return nil
            default: throw error
            }
        }
    }

    /// The vault's contents: from the unlocked session when there is one, else by unlocking
    /// the file with the passphrase.
    func vaultContents(used name: String? = nil) throws -> VaultContents {
        if let session = try sessionContents(used: name) { return session.contents }
        return try openVault().contents
    }

    /// Where the current passphrase comes from: --passphrase-fd, --passphrase-file, or the terminal.
    func passphraseSource() throws -> SecretSource {
        try secretSource(fdOption: "--passphrase-fd", fileOption: "--passphrase-file")
    }

    /// A descriptor option, else a file option, else the terminal.
    func secretSource(fdOption: String, fileOption: String) throws -> SecretSource {
        if let text = options[fdOption] {
            guard let fd = Int32(text), fd >= 0 else { throw UsageError("\(fdOption) takes a file descriptor number, not '\(text)'") }
            return .fileDescriptor(fd)
        }
        if let path = options[fileOption] { return .file(path) }
        return .terminal
    }

    /// Whether a passphrase can be read without failing for lack of a terminal.
    var canReadPassphrase: Bool {
        options["--passphrase-fd"] != nil || options["--passphrase-file"] != nil || SecretInput.hasTerminal
    }

    func readPassphrase() throws -> SecretBytes {
        let passphrase = try SecretInput.read(from: try passphraseSource(), prompt: "Passphrase for \(vaultPath): ")
        Redaction.registerPassphrase(passphrase)
        return passphrase
    }

    /// Reads the vault and checks it without any secret: permissions, checksum, structure,
    /// KDF bounds, and that it is not older than a generation already seen.
    func readVaultFile() throws -> VaultFile {
        let file = try VaultFile.parse(try store.read(), path: vaultPath, policy: kdfPolicy)
        do {
            return try checked(file)
        } catch VaultError.rolledBack {
            // A writer records its generation just after its rename: read without the lock, the
            // file can look older than the record for a moment. A real rollback stays.
            return try checked(VaultFile.parse(try store.read(), path: vaultPath, policy: kdfPolicy))
        }
    }

    /// Everything that can be checked without a secret (permissions, checksum, slots, KDF
    /// bounds, rollback), done before a prompt so nobody types a passphrase for a bad file.
    func checkVaultBeforePrompt() throws {
        guard store.exists else { throw VaultError.notFound(path: vaultPath) }
        _ = try readVaultFile()
    }

    /// The rollback rule the agent shares (VaultCore's RollbackGuard).
    var rollbackGuard: RollbackGuard {
        RollbackGuard(record: generations, vaultPath: ProcessIdentity.absolutePath(vaultPath), acceptsRollback: acceptsRollback)
    }

    /// Refuses a file older than a generation seen for its vault id or path, or another vault
    /// at the path. The record is a second line of defence: when it cannot be read (a state
    /// folder that is not the user's own), the command goes on with a warning.
    func checked(_ file: VaultFile) throws -> VaultFile {
        do { try rollbackGuard.check(file) } catch {
            switch error {
            case .rolledBack, .anotherVault: throw error
            default: Console.warning("the record of this vault's generations could not be read (\(ErrorReport.describe(error).1)); a restored old copy would go unnoticed")
            }
        }
        return file
    }

    func highestSeen(_ file: VaultFile) -> UInt64? {
        do { return try rollbackGuard.highestSeen(file) } catch {
            Console.warning("the record of this vault's generations could not be read (\(ErrorReport.describe(error).1)); a restored old copy would go unnoticed")
            return nil
        }
    }

    /// Records an authenticated file's generation. With --accept-rollback the record follows
    /// it down; `newVault` (init) makes the path's record follow a new vault.
    func remember(_ file: VaultFile, newVault: Bool = false) {
        do { try rollbackGuard.remember(file, newVault: newVault) } catch {
            Console.warning("the vault's generation could not be recorded (\(ErrorReport.describe(error).1)); a restored old copy would go unnoticed")
        }
    }

    /// Reads and parses the vault, then opens it with the passphrase (no lock: reads are atomic).
    func openVault() throws -> VaultDocument {
        let file = try readVaultFile()
        let document = try withPassphrase { try VaultDocument.open(file, path: vaultPath, passphrase: $0) }
        remember(document.file)
        rememberRecipient(document.contents)
        return document
    }

    /// Changes the vault's contents: through the unlocked session when there is one (no
    /// passphrase; an edit based on an older generation is redone), else a locked
    /// read-modify-write with the passphrase, asked (and on a terminal retried) before the
    /// lock is taken so that a person typing never holds up other writers.
    func modifyVault(_ change: (VaultContents) throws -> Void) throws {
        try checkVaultBeforePrompt()
        for _ in 0..<8 {
            guard let (generation, contents) = try sessionContents() else { break }
            try change(contents)
            do throws(AgentError) {
                _ = try agent.write(contents, basedOn: generation)
                rememberRecipient(contents)
                return
            } catch {
                if error == .stale { continue }
                if error == .locked || error == .notRunning { break }
                throw error
            }
        }
        try withPassphrase { passphrase in try modifyVault(unlockWith: passphrase) { try change($0.contents) } }
    }

    /// A locked read-modify-write with a secret already read. `knownKey`, the passphrase's key
    /// derived before the lock, opens the file without another Argon2 run while its slot is
    /// unchanged (another writer's passwd changes the salt; then the passphrase is derived again).
    func modifyVault(unlockWith secret: SecretBytes, recovery: Bool = false, knownKey: PassphraseKey? = nil,
                     knownRecoveryKey: RecoveryKey? = nil, backup: VaultStore.Backup = .previous,
                     _ change: (VaultDocument) throws -> Void) throws {
        let store = self.store
        try store.withExclusiveLock(onWait: { Console.err("gemvault: \($0)\n") }) { session in
            guard let bytes = try session.read() else { throw VaultError.notFound(path: vaultPath) }
            let file = try checked(VaultFile.parse(bytes, path: vaultPath, policy: kdfPolicy))
            let document: VaultDocument
            if recovery, let knownRecoveryKey, knownRecoveryKey.fits(file) {
                document = try VaultDocument.open(file, path: vaultPath, recoveryKey: knownRecoveryKey)
            } else if recovery {
                document = try VaultDocument.open(file, path: vaultPath, recoveryCode: secret)
            } else if let knownKey, knownKey.fits(file) {
                document = try VaultDocument.open(file, path: vaultPath, kek: knownKey.kek)
            } else {
                document = try VaultDocument.open(file, path: vaultPath, passphrase: secret)
            }
            try change(document)
            try save(document, in: session, backup: backup)
        }
    }

    /// Seals and writes a document above every generation seen, then records the new one.
    /// `newVault` is for a vault made on purpose at this path (`init`, the first run).
    func save(_ document: VaultDocument, in session: VaultStore.WriteSession, backup: VaultStore.Backup, newVault: Bool = false) throws {
        let seen = newVault ? 0 : highestSeen(document.file) ?? 0
        try store.write(try document.sealed(minimumGeneration: seen), in: session, backup: backup)
        remember(document.file, newVault: newVault)
        // A passphrase change's new conversation key, or a new `history` setting, applies at once.
        rememberRecipient(document.contents)
    }

    /// A new passphrase, asked twice on a terminal, with the short-passphrase warning before
    /// the confirmation, while another can still be chosen.
    func readNewPassphrase(_ source: SecretSource, prompt: String, confirmPrompt: String) throws -> SecretBytes {
        let passphrase = try SecretInput.readNew(from: source, prompt: prompt, confirmPrompt: confirmPrompt,
                                                 weakness: Self.weakness, warn: { Console.warning($0) })
        Redaction.registerPassphrase(passphrase)
        return passphrase
    }

    /// Counts characters, not bytes.
    static func weakness(_ passphrase: SecretBytes) -> String? {
        let characters = passphrase.withUnsafeBytes { $0.filter { $0 & 0xC0 != 0x80 }.count }
        return characters < 12 ? "the passphrase is shorter than 12 characters; a longer one resists guessing far better" : nil
    }

    /// Runs `attempt` with a secret read by `read`. On a terminal a wrong one may be tried
    /// again, three tries in all, like sudo and ssh; each try costs a full key derivation.
    /// A descriptor or a file gets one try.
    func retrying<T>(_ source: SecretSource, read: () throws -> SecretBytes, _ attempt: (SecretBytes) throws -> T) throws -> T {
        var tries = 1
        while true {
            let secret = try read()
            do {
                return try attempt(secret)
            } catch let error as VaultError where (error == .wrongPassphrase || error == .wrongRecoveryCode) && source == .terminal && tries < 3 {
                tries += 1
                Console.err("gemvault: \(error == .wrongPassphrase ? "wrong passphrase" : "wrong recovery code"), try again (\(4 - tries) of 3 left)\n")
            }
        }
    }

    /// `attempt` with the vault's passphrase, retried on a terminal.
    func withPassphrase<T>(_ attempt: (SecretBytes) throws -> T) throws -> T {
        try retrying(try passphraseSource(), read: readPassphrase, attempt)
    }
}
