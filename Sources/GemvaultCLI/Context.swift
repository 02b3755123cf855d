import Glibc
import GemvaultConfig
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
    var store: VaultStore { VaultStore(path: vaultPath) }

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
        try SecretInput.read(from: try passphraseSource(), prompt: "Passphrase for \(vaultPath): ")
    }

    /// Reads the vault and checks it without any secret: permissions, checksum, structure, KDF bounds.
    func readVaultFile() throws -> VaultFile {
        try VaultFile.parse(try store.read(), path: vaultPath, policy: kdfPolicy)
    }

    /// Reads and parses the vault, then opens it with the passphrase (no lock: reads are atomic).
    func openVault() throws -> VaultDocument {
        let file = try readVaultFile()
        let passphrase = try readPassphrase()
        return try VaultDocument.open(file, path: vaultPath, passphrase: passphrase)
    }

    /// A locked read-modify-write. `secret` is read before the lock is taken so that a person
    /// typing a passphrase never holds up other writers.
    func modifyVault(unlockWith secret: SecretBytes, recovery: Bool = false, _ change: (VaultDocument) throws -> Void) throws {
        try store.withExclusiveLock {
            let file = try readVaultFile()
            let document = recovery
                ? try VaultDocument.open(file, path: vaultPath, recoveryCode: secret)
                : try VaultDocument.open(file, path: vaultPath, passphrase: secret)
            try change(document)
            try store.writeAtomically(try document.sealed())
        }
    }

    /// Warns about short passphrases; counts characters, not bytes.
    static func checkNewPassphrase(_ passphrase: SecretBytes) {
        let characters = passphrase.withUnsafeBytes { $0.filter { $0 & 0xC0 != 0x80 }.count }
        if characters < 12 {
            Console.warning("the passphrase is shorter than 12 characters; a longer one resists guessing far better")
        }
    }
}
