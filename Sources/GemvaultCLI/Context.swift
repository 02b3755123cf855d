import Agent
import Conversations
import Settings
import Sharing
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
    /// config.json, read once a command: by the settings, and by the vault's opening for the
    /// age_identity setting, whichever comes first.
    let configFiles: ConfigFileCache

    init(environment: [String: String], options: ParsedOptions) {
        self.environment = environment
        self.paths = Paths(environment: environment)
        self.options = options
        let paths = self.paths
        let configFiles = ConfigFileCache(path: paths.configFile)
        self.configFiles = configFiles
        let vaultPath = paths.vault(flag: options.value(.vault))
        // Conversations can be sealed, or not saved, without an unlock: the history store notes
        // the recipient whenever the vault is opened or saved.
        let history = HistoryStore(stateDirectory: paths.stateHome, vaultPath: vaultPath)
        vault = VaultAccess(path: vaultPath, lockTimeout: environment["GEMVAULT_LOCK_TIMEOUT"].flatMap(Double.init).map { max(0, $0) } ?? VaultAccess.defaultLockTimeout,
                            stateDirectory: paths.stateHome, acceptsRollback: options.flag(.acceptRollback),
                            agentPaths: AgentPaths(environment: environment, vaultPath: vaultPath), useSession: !options.flag(.noSession),
                            ui: CommandUnlockUI(options: options, vaultPath: vaultPath),
                            methods: UnlockMethods.standard(sshAgent: CommandUnlockUI.givesPassphrase(options) ? nil
                                : SSHAgentUnlock(agent: Result { () throws(SSHAgentError) in try SSHAgentClient(environment: environment) }),
                                ageIdentity: AgeIdentityUnlock(load: { try SlotCommand.ageIdentities(options: options, environment: environment, configFile: configFiles.file) },
                                                               hardwareIdentities: { CommandUnlockUI.givesPassphrase(options) ? [] : AgePluginDefaults.identities(for: $0) },
                                                               named: options.value(.ageIdentity))),
                            observe: history.noteVault)
    }

    var vaultPath: String { vault.path }

    /// `--color`, then the `color` setting, then auto (a terminal without NO_COLOR or TERM=dumb).
    func style(_ settings: Settings?, fd: Int32) -> Style {
        let mode = options.value(.color).flatMap(ColorMode.init) ?? settings.flatMap { ColorMode(rawValue: $0[.color]) } ?? .auto
        return Style.decide(mode: mode, environment: environment, isTerminal: Terminal.isTerminal(fd))
    }

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
                                                 weakness: PassphrasePolicy.weakness, warn: { Console.warning($0) })
        Redaction.registerPassphrase(passphrase)
        return passphrase
    }
}

/// How a command asks for the vault's secrets: the passphrase from --passphrase-fd,
/// --passphrase-file or the terminal, the recovery code from the terminal or stdin, a PIN
/// from the terminal only. A descriptor or a file is read once; the terminal again after a
/// wrong secret (VaultAccess.withSecret decides how often).
struct CommandUnlockUI: UnlockUI {
    let options: ParsedOptions
    let vaultPath: String

    static func givesPassphrase(_ options: ParsedOptions) -> Bool { options.flag(.passphraseFd) || options.flag(.passphraseFile) }

    var canAsk: Bool { Self.givesPassphrase(options) || SecretInput.hasTerminal }

    func note(_ text: String) { Console.note(text) }

    func warn(_ text: String) { Console.warning(text) }

    func ask(_ request: SecretRequest) throws -> SecretBytes? {
        let source: SecretSource
        switch request.source {
        case .passphraseOptions: source = try SecretSource.chosen(by: options, fdOption: .passphraseFd, fileOption: .passphraseFile)
        case .terminalOrStandardInput: source = Terminal.stdinIsTerminal ? .terminal : .fileDescriptor(FileDescriptor.standardInput.raw)
        case .terminalOnly:
            // Asked on the terminal only; Enter (an empty PIN) goes on to the passphrase.
            guard !Self.givesPassphrase(options), SecretInput.hasTerminal else { return nil }
            do { return try SecretInput.read(from: .terminal, prompt: request.name + ": ") } catch SecretInputError.empty { return nil }
        }
        if request.attempt > 1 {
            guard source == .terminal else { return nil }
            if let retry = request.retryNote { Console.note(retry) }
        }
        let prompt = request.source == .passphraseOptions ? "\(request.name) for \(vaultPath): " : request.name + ": "
        let secret = try SecretInput.read(from: source, prompt: prompt)
        Redaction.registerPassphrase(secret)
        return secret
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
}

/// config.json as loaded the first time a command asked for it.
final class ConfigFileCache {
    let path: String
    private var loaded: ConfigFile?

    init(path: String) { self.path = path }

    func file() throws -> ConfigFile {
        if let loaded { return loaded }
        let file = try ConfigFile.load(path: path)
        loaded = file
        return file
    }
}
