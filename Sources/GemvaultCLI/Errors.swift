import AgeFormat
import GoogleAuth
import Agent
import Conversations
import KeyResolution
import Rotation
import Settings
import Sharing
import SSHAgent
import Spending
import SystemIO
import TerminalIO
import ToolSecrets
import VaultAccess
import VaultCore

/// The exit codes every command shares (Docs/cli.md).
enum ExitCode: Int32 {
    case success = 0
    case failure = 1
    case wrongSecret = 3
    case damaged = 4
    case noKey = 5
    case apiRefused = 6
    case network = 7
    /// `ask --schema`: the reply is not JSON, or does not match the schema.
    case replyMismatch = 8
    case usage = 64
    case interrupted = 130
    /// The reader of stdout went away: 128 + SIGPIPE, the status of a process SIGPIPE ended.
    case readerClosed = 141

    /// The words `--help` and the man page give each code: both are made from this list.
    var summary: String {
        switch self {
        case .success: "success"
        case .failure: "failure"
        case .wrongSecret: "wrong passphrase, recovery code or PIN"
        case .damaged: "vault damaged or unsupported"
        case .noKey: "no API key"
        case .apiRefused: "API refused"
        case .network: "network or server failure"
        case .replyMismatch: "reply does not match --schema"
        case .usage: "usage"
        case .interrupted: "interrupted"
        case .readerClosed: "stdout's reader went away"
        }
    }

    static var summaries: String {
        [ExitCode.success, .failure, .wrongSecret, .damaged, .noKey, .apiRefused, .network, .replyMismatch, .usage, .interrupted, .readerClosed]
            .map { "\($0.rawValue) \($0.summary)" }.joined(separator: ", ") + "."
    }

    /// A provider's failure kind: the one place it becomes an exit code.
    init(_ kind: ChatErrorKind) {
        switch kind {
        case .refused: self = .apiRefused
        case .network: self = .network
        case .interrupted: self = .interrupted
        }
    }

    /// `ask --json`'s `reason` for a failure that names none of its own.
    var reason: String {
        switch self {
        case .noKey: "no-key"
        case .wrongSecret: "wrong-secret"
        case .damaged: "vault-damaged"
        case .usage: "usage"
        case .interrupted: "interrupted"
        case .network: "network"
        case .apiRefused: "refused"
        case .replyMismatch: "schema-mismatch"
        default: "failure"
        }
    }
}

/// A failure with a message that needs no further mapping.
struct CommandFailure: Error {
    let code: ExitCode
    let message: String
    let hint: String?
    init(_ code: ExitCode, _ message: String, hint: String? = nil) {
        self.code = code
        self.message = message
        self.hint = hint
    }
}

/// The one place where errors become messages, hints and exit codes.
enum ErrorReport {
    static func report(_ error: Error) -> ExitCode {
        let (code, message, hint) = describe(error)
        // Messages quote server text, file names and settings: none of it may drive the terminal.
        if !message.isEmpty { Console.error(EscapeNeutralizer.neutralize(message)) }
        if let hint { Console.hint(EscapeNeutralizer.neutralize(hint)) }
        return code
    }

    static func describe(_ error: Error) -> (ExitCode, String, String?) {
        if let refusal = describeWorkflowRefusal(error) { return refusal }
        switch error {
        case let failure as CommandFailure:
            return (failure.code, failure.message, failure.hint)
        case let usage as UsageError:
            let hint = usage.fix ?? usage.command.map { "usage: \($0.usage)" } ?? "run 'gemvault --help' for the list of commands"
            return (.usage, usage.message, hint)
        case let vault as VaultError:
            return describe(vault)
        case let input as SecretInputError:
            return describe(input)
        case let mcp as MCPWrapError:
            return describe(mcp)
        case let config as ConfigError:
            return describe(config)
        case let keys as KeySourceError:
            return describe(keys)
        case is GoogleIdentityWanted:
            return (.usage, "this command needs an API key, and auth is 'google' (Docs/keyless.md)", "pass --auth key, or unset the auth setting")
        case let malformed as MalformedKeyError:
            return (.noKey, "the key from \(malformed.source) is more than one line, or holds a space or a control character; it was not used (a key is one line, and only a line break may follow it)",
                    malformed.hint)
        case let failure as any ChatFailure:
            return (ExitCode(failure.kind), failure.message, failure.hint)
        case let google as GoogleError:
            // Google refusing (4xx, an operation ended in an error) is 6 like Gemini refusing;
            // no answer after the retries is 7; no usable credential is 1.
            switch google.category {
            case .refused: return (.apiRefused, google.message, google.hint)
            case .network: return (.network, google.message, google.hint)
            case .badData: return (.damaged, google.message, google.hint)
            case .credentials:
                let shown = google.commandStderr.isEmpty ? "" : "; its stderr: " + EscapeNeutralizer.neutralize(google.commandStderr)
                return (.failure, google.message + shown, google.hint)
            }
        case let output as StandardOutputFailure:
            // Like `cat` in `cat | head -1`: a reader that stopped reading is no failure worth a word.
            if output.readerClosed { return (.readerClosed, "", nil) }
            return (.failure, "cannot write to standard output: \(output.reason)", nil)
        case let agent as AgentError:
            return describe(agent)
        case let sharing as SharingError:
            return describe(sharing)
        case let unlock as UnlockFailure:
            return (.failure, unlock.message, unlock.hint)
        case let age as AgeError:
            return describe(age)
        case let history as HistoryStore.Failure:
            switch history {
            case .notFound, .ambiguous: return (.failure, history.description, "'gemvault history list' shows the ids")
            case .damaged: return (.damaged, history.description, nil)
            case .broken(let path, let detail): return (.damaged, "\(path) is damaged: \(detail)", "'gemvault history show' shows what came before it")
            default: return (.failure, history.description, nil)
            }
        default:
            return (.failure, "\(error)", nil)
        }
    }

    static func describe(_ error: VaultError) -> (ExitCode, String, String?) {
        switch error {
        case .notFound(let path):
            return (.failure, "no vault at \(path)", "create one with 'gemvault init'")
        case .alreadyExists(let path):
            return (.failure, "a vault already exists at \(path)", "use 'gemvault init --force' to replace it (the old file is kept beside it as \(path).replaced-TIME)")
        case .refused(let failure):
            return (.failure, failure.message, failure.fix)
        case .wrongPassphrase:
            return (.wrongSecret, "wrong passphrase", "if it is lost, run 'gemvault recover' with the recovery code")
        case .wrongRecoveryCode:
            return (.wrongSecret, "wrong recovery code", "the code has 32 characters in groups of four, as 'gemvault init' printed it")
        case .damaged, .slotsDamaged, .tampered, .unsupportedVersion, .unsupportedPayloadVersion, .payloadDamaged,
             .kdfParametersRejected, .rolledBack, .anotherVault:
            return describeDamage(error)
        case .lockTimedOut(let path, let seconds, let holder):
            return (.failure, "another gemvault is writing the vault: \(path) stayed locked for \(Int(seconds)) s" + (holder.map { " (held by \($0))" } ?? ""),
                    "try again when it is done; GEMVAULT_LOCK_TIMEOUT sets how long to wait")
        case .writeFailed(let path, let reason):
            return (.failure, "could not save the vault \(path): \(reason); the vault is unchanged", nil)
        case .system(let error):
            return (.failure, "\(error.operation) \(error.path): \(error.reason)", nil)
        case .cryptoFailure(let detail):
            return (.failure, "libsodium failed (\(detail)); the machine may be out of memory", nil)
        case .slotRefused(let why):
            return (.failure, why, "'gemvault slot list' shows the vault's slots")
        case .keyNotFound(let name):
            return (.failure, "no key named '\(name)' in the vault", "list the keys with 'gemvault key list'")
        case .invalidName(let name):
            return (.usage, "'\(EscapeNeutralizer.neutralize(name))' is not a valid name: use letters, digits, '.', '-' and '_', at most 128 bytes", nil)
        case .valueTooLarge(let what):
            return (.usage, "the value for \(what) is too large", nil)
        case .noEarlierValue(let name):
            return (.failure, "key '\(name)' has no earlier value to roll back to", "'gemvault key history \(name)' lists what the vault keeps")
        case .linkedKey(let name, let reference):
            // A linked key changes in Secret Manager: changed here, the next fetch would undo it.
            return (.failure, "'\(name)' is linked to Secret Manager (\(reference)): add a version with the new key there, and every machine takes it within secret_cache_ttl; nothing changed",
                    "gcloud secrets versions add SECRET --data-file=-  (or 'gemvault key set \(name)' to unlink the key and keep its value here)")
        case .notLinked(let name):
            return (.failure, "key '\(name)' is not linked to the secret this rotation went through (it was set or linked again meanwhile); the rotation's change was not stored",
                    "'gemvault key which --key \(name)' shows where its value comes from now")
        case .noBackup(let path):
            return (.failure, "there is no backup at \(path)", nil)
        case .secretNotFound(let name):
            return (.failure, "no secret named '\(name)' in the vault", "list the secrets with 'gemvault secret list'")
        case .secretExists(let name):
            return (.failure, "a secret named '\(name)' is already in the vault; nothing was changed", "remove it first with 'gemvault secret rm \(name)', or choose another name")
        case .noEarlierSecretValue(let name):
            return (.failure, "secret '\(name)' has no earlier value to roll back to", "'gemvault secret history \(name)' lists what the vault keeps")
        case .invalidSecret(let name, let reason):
            return (.usage, "the value for secret '\(name)' was refused: \(reason); nothing was stored",
                    "a secret is printable text of 1 to \(ToolSecret.maxBytes) bytes; --multiline allows line breaks (a PEM block)")
        }
    }

    /// A vault that is damaged, of an unknown version, or not the one seen there before.
    private static func describeDamage(_ error: VaultError) -> (ExitCode, String, String?) {
        switch error {
        case .damaged(let path, let detail):
            return (.damaged, "the vault \(path) is damaged: \(detail)", restoreHint(path))
        case .slotsDamaged(let path, let detail):
            return (.damaged, "the vault \(path) has damaged key slots: \(detail)", restoreHint(path))
        case .tampered(let path):
            return (.damaged, "the vault \(path) failed authentication: it was modified after it was written", restoreHint(path))
        case .unsupportedVersion(let path, let version):
            return (.damaged, "the vault \(path) has file format version \(version), which this gemvault (reads 1 to \(VaultHeader.newestFormat)) does not know",
                    "upgrade gemvault if a newer one wrote it; otherwise the file is damaged")
        case .unsupportedPayloadVersion(let path, let version):
            return (.damaged, "the vault \(path) opened, but its encrypted contents have version \(version), which this gemvault does not know",
                    "upgrade gemvault if a newer one wrote it")
        case .payloadDamaged(let path, let detail):
            return (.damaged, "the vault \(path) opened, but its encrypted contents are not what gemvault writes: \(detail)", restoreHint(path))
        case .kdfParametersRejected(let path, let detail):
            return (.damaged, "the vault \(path) was refused before asking for the passphrase: \(detail)",
                    "a vault written by gemvault never has such parameters; " + (restoreHint(path) ?? "restore a trusted copy"))
        case .rolledBack(let path, let generation, let seen):
            return (.damaged, "the vault \(path) is generation \(generation), but generation \(seen) of it was seen before: an old copy was restored over a newer one",
                    "if you restored it on purpose, run the command again with --accept-rollback")
        case .anotherVault(let path, let found, let seen):
            return (.damaged, "the vault \(path) is not the vault seen there before (its id is \(found.prefix(8))…, the one seen there was \(seen.prefix(8))…): another vault was put in its place",
                    "if you put it there on purpose, run the command once with --accept-rollback")
        default:
            return (.failure, "\(error)", nil)
        }
    }

    /// The library workflows' own refusals: a rotation's, a budget's, a link's, a share's.
    private static func describeWorkflowRefusal(_ error: Error) -> (ExitCode, String, String?)? {
        switch error {
        case let rotation as RotationError: describe(rotation)
        case let spending as SpendingError: describe(spending)
        case let linking as SecretLinking.Refusal: describe(linking)
        case let refusal as ShareRefusal: (.damaged, refusal.message, refusal.hint)
        case let credential as SystemdCredentialFailure: describe(credential)
        case let start as AgentStartFailure: describe(start)
        case let exec as ExecBindingError: (.usage, describe(exec), execCommands.first.map { "usage: \($0.usage)" })
        default: nil
        }
    }

    /// A rotation's usage mistakes are `key rotate`'s: its usage line is the hint unless the error names a fix.
    static func describe(_ error: RotationError) -> (ExitCode, String, String?) {
        switch error {
        case .usage(let message, let fix): (.usage, message, fix ?? rotationCommands.first.map { "usage: \($0.usage)" })
        case .failed(let message, let hint): (.failure, message, hint)
        case .unreachable(let message, let hint): (.network, message, hint)
        }
    }

    /// A budget's refusal is the API refusing (6); prices that cannot be used are a usage mistake (64).
    static func describe(_ error: SpendingError) -> (ExitCode, String, String?) {
        switch error {
        case .refused(let message, let hint): (.apiRefused, message, hint)
        case .unusablePrices(let message, let hint): (.usage, message, hint)
        }
    }

    /// `key export --systemd-creds`: systemd-creds (or sudo) gave no credential (exit 1).
    static func describe(_ error: SystemdCredentialFailure) -> (ExitCode, String, String?) {
        let installHint = "it comes with systemd 250 or later: on Debian and Ubuntu, 'apt install systemd'"
        func sudoHint(_ throughSudo: Bool, _ pipe: String) -> String? {
            throughSudo ? "if sudo could not run it (no terminal for its password, no rule for you), run: \(pipe)" : nil
        }
        return switch error {
        case .timedOut(let seconds): (.failure, "systemd-creds did not finish within \(seconds) s; nothing was written", nil)
        case .notInstalled: (.failure, "systemd-creds is not installed; nothing was written", installHint)
        case .noSudo(let hostKey, let pipe):
            (.failure, "systemd-creds needs root to read the host's key (\(hostKey)), and sudo is not installed; nothing was written",
             "install sudo, or run as root the equivalent of: \(pipe)")
        case .notStarted(let program, let reason): (.failure, "\(program) could not be started: \(reason)", nil)
        case .keyNotTaken(let reason): (.failure, "could not hand the key to systemd-creds: \(reason)", nil)
        case .exited(let sudo, let status, let said, let pipe):
            (.failure, "\(sudo ? "sudo systemd-creds" : "systemd-creds") failed (status \(status))" + (said.isEmpty ? "" : ": \(EscapeNeutralizer.neutralize(said))")
                + "; nothing was written", sudoHint(sudo, pipe))
        case .signaled(let sudo, let signal, let pipe):
            (.failure, "\(sudo ? "sudo systemd-creds" : "systemd-creds") was stopped by signal \(signal); nothing was written", sudoHint(sudo, pipe))
        case .targetUnknown(let path, let reason): (.failure, "cannot tell whether \(path) exists: \(reason); nothing was written", "--force writes it anyway")
        case .targetIsLink(let path): (.failure, "\(path) is a symbolic link; nothing was written", nil)
        case .targetExists(let path): (.failure, "\(path) exists; nothing was written", "--force replaces it")
        }
    }

    /// `unlock` could not start its agent (exit 1).
    static func describe(_ error: AgentStartFailure) -> (ExitCode, String, String?) {
        let shorterFolder = "set XDG_RUNTIME_DIR to a shorter folder of your own (mode 0700)"
        return switch error {
        case .socketPathTooLong(let path, let folder):
            (.failure, "the agent's socket would be a path of \(path.utf8.count) bytes, more than the \(SystemError.longestPath) the system takes (\(folder))", shorterFolder)
        case .folderRefused(let message, let fix, let runtimeFolderSet):
            (.failure, message, runtimeFolderSet ? fix : "another user may have created it; set XDG_RUNTIME_DIR to a folder of your own (mode 0700), or \(fix)")
        case .socketNameTooLong(let path):
            (.failure, "the agent's socket \(path) is \(path.utf8.count) bytes, more than the \(UnixSocket.longestAddress) a socket name holds, and /proc/self/fd is not there to shorten it",
             shorterFolder)
        case .notSpawned(let reason): (.failure, "could not start the agent: \(reason)", nil)
        case .stoppedAtOnce(let lastError, let log): (.failure, "the agent stopped at once" + (lastError.map { ": \($0)" } ?? ""), "its log is \(log)")
        case .didNotStart(let log): (.failure, "the agent did not start within \(Int(VaultSession.startLimit)) s", "its log is \(log)")
        }
    }

    /// `exec`'s --secret, --secret-file or --env refused: a usage mistake (64), `exec`'s usage line the hint.
    static func describe(_ error: ExecBindingError) -> String {
        switch error {
        case .notABinding(let option, let text): "\(option) takes VAR=NAME (a variable name, '=', a secret's name), not '\(EscapeNeutralizer.neutralize(text))'"
        case .readByTheLoader(let option, let variable): "\(option) \(variable): the dynamic loader or the C library reads \(variable)"
        case .givenTwice(let variable): "\(variable) is given twice"
        case .notAVariable(let text): "--env takes a variable name, not '\(text)'"
        case .keyReadByTheLoader(let variable):
            "--env \(variable): the dynamic loader or the C library reads \(variable), and would take the key for a file name or a setting (and may print it)"
        }
    }

    static func describe(_ error: SecretLinking.Refusal) -> (ExitCode, String, String?) {
        switch error {
        case .notAReference(let text):
            return (.usage, "--from takes gsm://projects/PROJECT/secrets/SECRET or …/versions/N, not '\(text)'",
                    vaultCommands.first { $0.path == ["key", "set"] }.map { "usage: \($0.usage)" })
        case .olderVersion(let name, let taken, let answered, let resource, let reference):
            return (.failure, "'\(name)' took version \(taken) of \(resource), and Secret Manager now answers version \(answered), older; nothing was changed",
                    "when that is right (version \(taken) was forged, or disabled on purpose): gemvault key set \(name) --from \(reference) --relink")
        }
    }

    static func describe(_ error: SharingError) -> (ExitCode, String, String?) {
        switch error {
        case .badRecipient(let what):
            return (.usage, what, "a recipient is an age1… recipient ('gemvault identity' prints this vault's), an ssh-ed25519 public key line, or a .pub file with one")
        case .malformed(let detail):
            return (.damaged, "the share is not what gemvault writes: \(detail); nothing was stored", nil)
        case .age(let age):
            return describe(age)
        case .signing:
            return (.failure, "the vault's sharing identity could not sign the share", nil)
        case .notPostQuantum(let classic):
            return (.usage, "--pq-only: \(classic.joined(separator: ", ")) \(classic.count == 1 ? "is a classic recipient" : "are classic recipients"), not post-quantum; nothing was written",
                    "ask for their age1pq1… recipient ('gemvault identity' or 'age-keygen -pq' prints one), or share without --pq-only")
        }
    }

    /// A share file age cannot read: damage is exit 4; a file for someone else, or of a kind
    /// gemvault does not read, is 1.
    static func describe(_ error: AgeError) -> (ExitCode, String, String?) {
        switch error.kind {
        case .noMatch:
            return (.failure, "the file is not encrypted to this vault's identity (or to the -i identities given); nothing was stored",
                    "ask the sender to share to the recipient 'gemvault identity' prints")
        case .unsupported:
            return (.failure, "\(error.detail); nothing was stored", nil)
        case .wrongPassphrase:
            return (.wrongSecret, "\(error.detail); nothing was stored", nil)
        case .plugin:
            return (.failure, EscapeNeutralizer.neutralize(error.detail), "Docs/sharing.md says which plugins gemvault runs and how long it waits for them")
        default:
            return (.damaged, "the share file is damaged (\(error.kind.rawValue): \(error.detail)); nothing was stored", nil)
        }
    }

    /// A session unlocked by an older gemvault speaks an older protocol after an upgrade.
    static let olderAgentHint = "if gemvault was upgraded while this session was unlocked, run 'gemvault lock' and unlock again"

    /// Names the command that restores the backup, only when there is one to restore.
    static func restoreHint(_ path: String) -> String? {
        guard !path.hasSuffix(".bak"), FileStatus.of(link: path + ".bak") != nil else { return nil }
        return "the previous version is in \(path).bak: 'gemvault restore-backup' checks it and puts it back"
    }

    static func describe(_ error: MCPWrapError) -> (ExitCode, String, String?) {
        switch error {
        case .changedSinceRead(let path): return (.failure, "\(path) changed while gemvault read it; it was not written (the secrets are in the vault)", "run the command again")
        case .writeFailed(let path, let reason): return (.failure, "could not write \(path): \(reason); it is unchanged", nil)
        case .noBackup(let path): return (.failure, "no file replaced by 'gemvault mcp wrap' is kept for \(path)", nil)
        case .editedSinceWrap(let path):
            return (.failure, "\(path) was edited since 'gemvault mcp wrap' wrote it; putting the old file back would lose those edits", "run 'gemvault mcp unwrap --config \(path) --force' to put it back anyway")
        }
    }

    static func describe(_ error: SecretInputError) -> (ExitCode, String, String?) {
        switch error {
        case .noTerminal:
            return (.failure, "the vault needs its passphrase, and there is no terminal to ask on and no unlocked session",
                    "run 'gemvault unlock' first, or pass --passphrase-fd N or --passphrase-file PATH")
        case .empty: return (.usage, "an empty value was given", nil)
        case .tooLong(let limit): return (.usage, "the value is longer than \(limit) bytes", nil)
        case .mismatch: return (.usage, "the two entries do not match", nil)
        case .notOneLine:
            return (.usage, "the key is more than one line, or holds a space or a control character; nothing was stored (a key is one line, and only a line break may follow it)",
                    "give only the key, for example: pass show gemini | head -n 1 | gemvault key set")
        case .unreadable(let what): return (.failure, "cannot read \(what)", nil)
        case .refused(let failure): return (.failure, failure.message, failure.fix)
        }
    }

    static func describe(_ error: ConfigError) -> (ExitCode, String, String?) {
        switch error {
        case .invalidValue(let layer, let setting, let message, let fromFlag):
            return (fromFlag ? .usage : .failure, "\(layer): \(setting): \(message)", nil)
        case .unknownSetting(let name):
            return (.usage, "unknown setting '\(name)'", "settings: " + SettingsSchema.names.joined(separator: ", "))
        case .invalidFile(let path, let reason):
            return (.failure, "\(path): \(reason)", nil)
        case .unreadable(let path, let reason):
            return (.failure, "cannot read \(path): \(reason)", nil)
        case .insecureEndpoint(let url, let layer, let setting):
            let what = setting == Setting.endpoint.name ? "the API key" : "the access token"
            return (.usage, "\(layer): \(setting): \(url) is plain http on a non-loopback host; \(what) would travel unencrypted",
                    "use https, or pass --allow-insecure-endpoint if you really mean it")
        case .untrustedEndpoint(let url, let layer, let setting):
            return (.usage, "\(layer): \(setting): \(url) is not Google's and not loopback; the machine's Google access token would go there, and \(layer) is not trusted to send it away",
                    "set it in the vault ('gemvault config set \(setting) URL') or give --\(String(setting.map { $0 == "_" ? "-" : $0 })) URL to the command, if you really mean it")
        case .refused(let failure):
            return (.failure, failure.message, failure.fix)
        }
    }

    static func describe(_ error: KeySourceError) -> (ExitCode, String, String?) {
        switch error {
        case .noKey(let reasons, let vaultKeys):
            if let first = vaultKeys.first {
                return (.noKey, "no API key available (" + reasons.joined(separator: "; ") + ")",
                        "choose one of the vault's keys: '--key \(first)' for one command, or 'gemvault config set key \(first)' for every command")
            }
            return (.noKey, "no API key available (" + reasons.joined(separator: "; ") + ")",
                    "store one with 'gemvault key set', or export GEMINI_API_KEY, or write it to the key file, or set key_command")
        case .vaultNeedsPassphrase(let path):
            return (.noKey, "the API key is in the vault \(path), but there is no terminal to ask for its passphrase and no unlocked session",
                    "run 'gemvault unlock' first, or pass --passphrase-fd N or --passphrase-file PATH")
        case .keyCommandFailed(let command, let detail, let stderr):
            let shown = stderr.isEmpty ? "" : "; its stderr: " + EscapeNeutralizer.neutralize(stderr)
            return (.noKey, "key_command '\(command)' \(detail)\(shown)", "check the command with: gemvault config get key_command")
        case .secretUnreachable(let name, let secret, let since, let detail):
            return (.network, "'\(name)' could not be refreshed from Secret Manager \(secret) since \(Output.localDate(since)) (\(detail)), longer than secret_max_stale allows; its copy was not used",
                    "check the network and the Google credentials, or raise secret_max_stale")
        case .keyFile(let vault):
            let (code, message, hint) = describe(vault)
            // A refused file (someone else's, open to others, a link) exits 1 as every refused file does.
            if case .refused = vault { return (code, message, hint) }
            return (code == .failure ? .noKey : code, message, hint)
        }
    }

    static func describe(_ error: AgentError) -> (ExitCode, String, String?) {
        switch error {
        case .busy:
            return (.failure, "the session is busy: its agent dropped this command's connection unanswered, also when asked again (many clients at once)",
                    "try again in a moment; the session is still unlocked")
        case .notRunning:
            return (.failure, "no unlocked session for this vault", "run 'gemvault unlock'")
        case .locked:
            return (.failure, "the session is locked", "run 'gemvault unlock'")
        case .lockedWithPIN:
            return (.failure, "the session is locked; its PIN opens it again", "run 'gemvault unlock' on a terminal to type the PIN")
        case .stale:
            return (.failure, "the vault kept changing while this command tried to save; nothing was changed", "try again")
        case .rolledBack(let generation, let seen):
            return (.damaged, "the vault went back from generation \(seen) to \(generation): an old copy was restored over a newer one",
                    "run the command with --accept-rollback and without the session ('gemvault lock') if you restored it on purpose")
        case .wrongKey:
            return (.wrongSecret, "the session's key no longer opens the vault (its passphrase was changed elsewhere)", "run 'gemvault unlock' again")
        case .refused(let failure):
            return (.failure, failure.message, failure.fix)
        case .untrusted(let detail):
            return (.failure, "refusing the agent's socket: \(detail)", Self.olderAgentHint)
        case .failed(let detail):
            return (.failure, "the agent failed: \(detail)", Self.olderAgentHint)
        case .noSuchKey(let name):
            return describe(VaultError.keyNotFound(name: name))
        case .changeRefused(let refusal):
            return describe(refusal)
        case .wrongPIN(let left):
            return left > 0 ? (.wrongSecret, "wrong PIN (\(left) \(left == 1 ? "try" : "tries") left)", "press Enter at the PIN prompt to use the passphrase instead")
                : (.wrongSecret, "wrong PIN; the agent wiped the PIN after too many wrong tries", "the passphrase opens the vault; 'gemvault pin set' sets a new PIN")
        }
    }
}
