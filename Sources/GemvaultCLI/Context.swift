import Agent
import Conversations
import Settings
import SSHAgent
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

/// What every command shares: the environment, paths, and how to reach the vault.
struct Context {
    let environment: [String: String]
    /// For a program gemvault starts for itself (the agent, the pager): `HelperEnvironment`.
    var helperEnvironment: [String: String] { HelperEnvironment.of(environment) }
    let paths: Paths
    let options: ParsedOptions
    /// How this command reaches the vault: the one home for it (the VaultAccess module).
    let vault: VaultAccess

    init(environment: [String: String], options: ParsedOptions) {
        self.environment = environment
        self.paths = Paths(environment: environment)
        self.options = options
        let paths = self.paths
        let vaultPath = paths.vault(flag: options.value(.vault))
        let history = HistoryStore(stateDirectory: paths.stateHome, vaultPath: vaultPath)
        vault = VaultAccess(path: vaultPath, lockTimeout: environment["GEMVAULT_LOCK_TIMEOUT"].flatMap(Double.init).map { max(0, $0) } ?? VaultAccess.defaultLockTimeout,
                            stateDirectory: paths.stateHome, acceptsRollback: options.flag(.acceptRollback),
                            agentPaths: AgentPaths(environment: environment, vaultPath: vaultPath), useSession: !options.flag(.noSession),
                            passphrase: CommandPassphrase(options: options, vaultPath: vaultPath, environment: environment),
                            observe: { contents in
                                // Conversations can be sealed, or not saved, without an unlock.
                                try? history.saveRecipient(conversationKey: contents.conversationKey, vaultHistory: contents.settings[Setting.history.name])
                            },
                            warn: { Console.warning($0) }, onLockWait: { Console.note($0) })
    }

    var vaultPath: String { vault.path }

    /// `--color`, then the `color` setting, then auto (a terminal without NO_COLOR or TERM=dumb).
    func style(_ settings: Settings?, fd: Int32) -> Style {
        let mode = options.value(.color).flatMap(ColorMode.init) ?? settings.flatMap { ColorMode(rawValue: $0[.color]) } ?? .auto
        return Style.decide(mode: mode, environment: environment, isTerminal: Terminal.isTerminal(fd))
    }

    /// The agent of this vault (which may not be running).
    var agent: AgentClient { AgentClient(paths: AgentPaths(environment: environment, vaultPath: vaultPath)) }

    /// Where the current passphrase comes from: --passphrase-fd, --passphrase-file, or the terminal.
    func passphraseSource() throws -> SecretSource {
        try secretSource(fdOption: .passphraseFd, fileOption: .passphraseFile)
    }

    /// A descriptor option, else a file option, else the terminal.
    func secretSource(fdOption: OptionSpec, fileOption: OptionSpec) throws -> SecretSource {
        try SecretSource.chosen(by: options, fdOption: fdOption, fileOption: fileOption)
    }

    /// Whether the vault can be opened without failing for lack of a terminal (a passphrase, or
    /// an ssh slot the ssh-agent opens).
    var canOpenVault: Bool { vault.canOpen }

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

    /// `attempt` with the vault's passphrase, retried on a terminal.
    func withPassphrase<T>(_ attempt: (SecretBytes) throws -> T) throws -> T {
        try CommandPassphrase(options: options, vaultPath: vaultPath, environment: environment).withPassphrase(attempt)
    }
}

/// The vault's secret for one command: the passphrase from --passphrase-fd,
/// --passphrase-file or the terminal, the recovery code from the terminal or stdin. On a
/// terminal a wrong one may be typed again (three tries, like sudo and ssh).
struct CommandPassphrase: PassphraseSource {
    let options: ParsedOptions
    let vaultPath: String
    let environment: [String: String]

    var canProvide: Bool { givesPassphrase || SecretInput.hasTerminal }
    private var givesPassphrase: Bool { options.flag(.passphraseFd) || options.flag(.passphraseFile) }

    /// SSH_AUTH_SOCK's agent, unless the passphrase was given on purpose.
    var sshAgent: Result<SSHAgentClient, SSHAgentError>? {
        givesPassphrase ? nil : Result { () throws(SSHAgentError) in try SSHAgentClient(environment: environment) }
    }

    func note(_ text: String) { Console.note(text) }

    /// Asked on the terminal only; Enter (an empty PIN) goes on to the passphrase.
    func readPIN() throws -> SecretBytes? {
        guard !givesPassphrase, SecretInput.hasTerminal else { return nil }
        do {
            return try SecretInput.read(from: .terminal, prompt: "Unlock with PIN (passphrase: press Enter): ")
        } catch SecretInputError.empty {
            return nil
        }
    }

    func withSecret<T>(for kind: UnlockKind, _ attempt: (Unlock) throws -> T) throws -> T {
        let source: SecretSource
        let prompt: String
        switch kind {
        case .passphrase, .passphraseSlot, .currentPassphrase:
            source = try SecretSource.chosen(by: options, fdOption: .passphraseFd, fileOption: .passphraseFile)
            prompt = kind == .currentPassphrase ? "Current passphrase for \(vaultPath): " : "Passphrase for \(vaultPath): "
        case .recoveryCode:
            source = Terminal.stdinIsTerminal ? .terminal : .fileDescriptor(FileDescriptor.standardInput.raw)
            prompt = "Recovery code: "
        }
        return try SecretSource.retrying(source, read: {
            let secret = try SecretInput.read(from: source, prompt: prompt)
            Redaction.registerPassphrase(secret)
            return secret
        }) { secret in try attempt(kind == .recoveryCode ? .recoveryCode(secret) : .passphrase(secret)) }
    }

    /// The passphrase itself, for the commands that open a file other than the vault (restore-backup).
    func withPassphrase<T>(_ attempt: (SecretBytes) throws -> T) throws -> T {
        try withSecret(for: .passphrase) { unlock in
            guard case .passphrase(let secret) = unlock else { throw VaultError.wrongPassphrase }
            return try attempt(secret)
        }
    }
}

extension SecretSource {
    /// A descriptor option, else a file option, else the terminal.
    static func chosen(by options: ParsedOptions, fdOption: OptionSpec, fileOption: OptionSpec) throws -> SecretSource {
        if let text = options.value(fdOption) {
            guard let fd = Int32(text), fd >= 0 else { throw UsageError("\(fdOption.name) takes a file descriptor number, not '\(text)'") }
            return .fileDescriptor(fd)
        }
        if let path = options.value(fileOption) { return .file(path) }
        return .terminal
    }

    /// Runs `attempt` with a secret read by `read`. On a terminal a wrong one may be tried
    /// again, three tries in all; each try costs a full key derivation. A descriptor or a file
    /// gets one try.
    static func retrying<T>(_ source: SecretSource, read: () throws -> SecretBytes, _ attempt: (SecretBytes) throws -> T) throws -> T {
        var tries = 1
        while true {
            let secret = try read()
            do {
                return try attempt(secret)
            } catch let error as VaultError where (error == .wrongPassphrase || error == .wrongRecoveryCode) && source == .terminal && tries < 3 {
                tries += 1
                Console.note("\(error == .wrongPassphrase ? "wrong passphrase" : "wrong recovery code"), try again (\(4 - tries) of 3 left)")
            }
        }
    }
}
