import Rotation
import Settings
import ToolSecrets

// MARK: Global options

extension OptionSpec {
    static let vault = OptionSpec(name: "--vault", value: "PATH", help: "vault file (default $GEMVAULT_VAULT, then $XDG_DATA_HOME/gemvault/vault)")
    static let passphraseFd = OptionSpec(name: "--passphrase-fd", value: "N", help: "read the passphrase as one line from file descriptor N")
    static let passphraseFile = OptionSpec(name: "--passphrase-file", value: "PATH", help: "read the passphrase from the first line of a private file")
    static let noSession = OptionSpec(name: "--no-session", value: nil, help: "do not use an unlocked session; open the vault file with the passphrase")
    static let acceptRollback = OptionSpec(name: "--accept-rollback", value: nil, help: "open a vault older than one already seen (an old copy restored on purpose)")
    static let color = OptionSpec(name: "--color", value: "WHEN",
                                  help: "colour: \(Setting.color.spec.defaultValue!) (default), always or never; also the '\(Setting.color.name)' setting, NO_COLOR and TERM=dumb")
}

/// Options every command accepts.
let globalOptions: [OptionSpec] = [.vault, .passphraseFd, .passphraseFile, .noSession, .acceptRollback, .color, .help]

// MARK: Options several commands share

extension OptionSpec {
    static let json = OptionSpec(name: "--json", value: nil, help: "print machine-readable JSON")
    static let newPassphraseFd = OptionSpec(name: "--new-passphrase-fd", value: "N", help: "read the new passphrase as one line from file descriptor N")
    static let newPassphraseFile = OptionSpec(name: "--new-passphrase-file", value: "PATH", help: "read the new passphrase from the first line of a private file")
    static let key = OptionSpec(name: "--key", value: "NAME", help: "vault key to use (default: the '\(Setting.key.name)' setting, then '\(Setting.key.spec.defaultValue!)')",
                                setting: Setting.key.spec)
    static let auth = OptionSpec(name: "--auth", value: "MODE", help: "'key' (default) or 'google': no key, a Google identity's access token (setting '\(Setting.auth.name)', Docs/keyless.md)",
                                 setting: Setting.auth.spec)
    static let showToken = OptionSpec(name: "--token", value: nil, help: "with auth 'google': fetch an access token and say until when it is valid (never printed)")
    static let keyFile = OptionSpec(name: "--key-file", value: "PATH", help: "read the API key from a private file; wins over every other source")
    static let allowInsecureEndpoint = OptionSpec(name: "--allow-insecure-endpoint", value: nil, help: "allow a plain-http endpoint that is not on loopback")
    static let model = OptionSpec(name: "--model", value: "M", help: "model name (setting '\(Setting.model.name)')", setting: Setting.model.spec)
    static let system = OptionSpec(name: "--system", value: "TEXT", help: "system instruction (setting '\(Setting.systemPrompt.name)')", privateValue: true,
                                   setting: Setting.systemPrompt.spec)
    static let temperature = OptionSpec(name: "--temperature", value: "T", help: "sampling temperature, 0 to 2", setting: Setting.temperature.spec)
    static let timeout = OptionSpec(name: "--timeout", value: "SECONDS", help: "wait for the first byte and between stream events", setting: Setting.timeout.spec)
    static let think = OptionSpec(name: "--think", value: "LEVEL", help: "how much the model thinks: minimal, low, medium, high or xhigh (setting '\(Setting.thinking.name)')",
                                  setting: Setting.thinking.spec)
    static let strict = OptionSpec(name: "--strict", value: nil,
                                   help: "refuse (exit 64) a thinking level the model does not take, instead of sending the nearest one it takes")
    static let maxOutputTokens = OptionSpec(name: "--max-output-tokens", value: "N",
                                            help: "at most N reply tokens; under a budget, the reply allowance of the estimate (setting '\(Setting.maxOutputTokens.name)')",
                                            setting: Setting.maxOutputTokens.spec)
    static let thinkBudget = OptionSpec(name: "--think-budget", value: "N",
                                        help: "thinking tokens instead of a level: 0 turns thinking off, -1 lets the model choose (not with --think)")
}

let newPassphraseOptions: [OptionSpec] = [.newPassphraseFd, .newPassphraseFile]
let keySourceOptions: [OptionSpec] = [.key, .keyFile, .auth, .allowInsecureEndpoint]
let generationOptions: [OptionSpec] = [.model, .system, .temperature, .maxOutputTokens, .think, .thinkBudget, .strict, .timeout]
/// The tools at Google that chat and ask can offer the model.
let toolOptions: [OptionSpec] = [.search, .urlContext, .code, .store]

// MARK: Options of one command, or of a few

extension OptionSpec {
    // init
    static let kdf = OptionSpec(name: "--kdf", value: "PRESET", help: "Argon2id cost: interactive, \(VaultCommand.defaultPreset.rawValue) (default) or sensitive")
    static let forceReplace = OptionSpec(name: "--force", value: nil,
                                         help: "replace an existing vault; the old file is kept beside it as VAULT.replaced-TIME (asks first on a terminal)")
    // key rm
    static let revoke = OptionSpec(name: "--revoke", value: nil, help: "also delete its keys at Google (API Keys service; Docs/rotation.md)")

    // key rotate
    static let noVerify = OptionSpec(name: "--no-verify", value: nil, help: "store the new key without the check")
    static let secretmanagerEndpoint = OptionSpec(name: "--secretmanager-endpoint", value: "URL",
                                                  help: "Secret Manager's base URL for this command (a host not Google's receives the access token: only from the vault or this flag)",
                                                  setting: Setting.secretmanagerEndpoint.spec)
    static let apikeysEndpoint = OptionSpec(name: "--apikeys-endpoint", value: "URL",
                                            help: "the API Keys service's base URL for this command (a host not Google's receives the access token: only from the vault or this flag)",
                                            setting: Setting.apikeysEndpoint.spec)
    static let forceClaim = OptionSpec(name: "--force", value: nil, help: "with --create of a key linked to Secret Manager: take over another rotator's live claim")
    static let checkTimeout = OptionSpec(name: "--timeout", value: "SECONDS", help: "wait for the check's answer", setting: Setting.timeout.spec)
    static let create = OptionSpec(name: "--create", value: nil, help: "make the new key at Google (API Keys service), check it, store it, delete the old one")
    static let undo = OptionSpec(name: "--undo", value: nil, help: "undelete the previous Google key, make it current again, delete the newer one")
    static let ifOlderThan = OptionSpec(name: "--if-older-than", value: "DAYS", help: "with --create: do nothing (exit 0) when the key is younger")
    static let ifDue = OptionSpec(name: "--if-due", value: nil,
                                  help: "with --create: rotate only when due (a linked key: its newest version is older than the secret's rotation period, else rotation_days; one machine of a fleet wins)")
    static let grace = OptionSpec(name: "--grace", value: "DURATION",
                                  help: "with --create or --undo of a linked key: how long the replaced key keeps working for the fleet (default \(DurationText.text(FleetRotation.defaultGrace)), never less than secret_cache_ttl)")
    static let noWait = OptionSpec(name: "--no-wait", value: nil,
                                   help: "with --create, --undo or --finish of a linked key: record the finish in the vault instead of waiting out the grace")
    static let finish = OptionSpec(name: "--finish", value: nil,
                                   help: "finish a linked key's rotation once its grace is over: disable the previous version, delete the old key")
    static let keepOld = OptionSpec(name: "--keep-old", value: nil, help: "with --create or --undo: leave the replaced key working at Google")
    static let project = OptionSpec(name: "--project", value: "PROJECT", help: "with --create: the Google project of the new key (default: the old key's)")
    static let serviceAccount = OptionSpec(name: "--service-account", value: "EMAIL",
                                           help: "with --create: the service account to bind the new key to (default: the old key's)")
    static let verifyTimeout = OptionSpec(name: "--verify-timeout", value: "DURATION",
                                          help: "with --create: how long Google may take before the new key works (default \(DurationText.text(GoogleRotation.defaultVerifyLimit)))")

    // unlock, agent
    static let idle = OptionSpec(name: "--idle", value: "DURATION",
                                 help: "lock after this long unused (setting \(Setting.sessionIdle.name), default \(Setting.sessionIdle.spec.defaultValue!))")
    static let max = OptionSpec(name: "--max", value: "DURATION",
                                help: "lock after this long in any case (setting \(Setting.sessionMax.name), default \(Setting.sessionMax.spec.defaultValue!))")
    static let foreground = OptionSpec(name: "--foreground", value: nil, help: "stay in the foreground, logging to stderr (required)")

    // config, key which
    static let file = OptionSpec(name: "--file", value: nil, help: "use the plain config file instead of the vault")
    static let noVault = OptionSpec(name: "--no-vault", value: nil, help: "do not open the vault (its layer is skipped)")
    static let google = OptionSpec(name: "--google", value: nil, help: "say which Google credential key rotate --create would use (no token is fetched)")

    // exec
    static let env = OptionSpec(name: "--env", value: "VAR", help: "the variable to set (default \(SecretBinding.defaultKeyVariable))")
    static let forceNested = OptionSpec(name: "--force", value: nil, help: "run even inside another 'gemvault exec'")
    static let execSecret = OptionSpec(name: "--secret", value: "VAR=NAME", help: "put the vault's secret NAME in the variable VAR (repeatable); then the API key only with --key",
                                       repeatable: true)
    static let execSecretFile = OptionSpec(name: "--secret-file", value: "VAR=NAME",
                                           help: "write the secret NAME to a private file in $XDG_RUNTIME_DIR, put its path in VAR, remove it when the command ends (repeatable)",
                                           repeatable: true)

    // mcp
    static let mcpConfig = OptionSpec(name: "--config", value: "FILE", help: "this MCP config file only, instead of the known ones")
    static let dryRun = OptionSpec(name: "--dry-run", value: nil, help: "print the change, secrets masked, and write nothing")
    static let mcpName = OptionSpec(name: "--name", value: "NAME", help: "the vault name of the one secret moved (default mcp.<server>.<VAR>)")
    static let mcpForce = OptionSpec(name: "--force", value: nil, help: "put the file back even though it was edited since wrap wrote it")

    // secret
    static let fromEnv = OptionSpec(name: "--from-env", value: "VAR", help: "take the value from the variable VAR of gemvault's environment (a one-time move)")
    static let multiline = OptionSpec(name: "--multiline", value: nil, help: "allow line breaks in the value (a PEM block); on a terminal, end it with an empty line")

    // history
    static let rawHistory = OptionSpec(name: "--raw", value: nil, help: "the text as saved, unstyled; escape sequences are shown as text, never run")
    static let all = OptionSpec(name: "--all", value: nil, help: "delete every saved conversation")
    static let olderThan = OptionSpec(name: "--older-than", value: "DURATION", help: "delete those last written before, such as 30d")
    static let overBudget = OptionSpec(name: "--over-budget", value: nil,
                                       help: "send even when the request could take the key past its daily or monthly budget, or cannot be checked under one (budget_daily, budget_monthly, key budget)")
    static let days = OptionSpec(name: "--days", value: "N", help: "the last N days, today included (default 30)")
    static let daily = OptionSpec(name: "--daily", value: "AMOUNT", help: "what the key may spend a day (UTC), in the price table's currency; 'none' removes it")
    static let monthly = OptionSpec(name: "--monthly", value: "AMOUNT", help: "what the key may spend a calendar month (UTC); 'none' removes it")
    static let yes = OptionSpec(name: "--yes", value: nil, help: "delete without asking (needed for --all and --older-than without a terminal)")
    static let format = OptionSpec(name: "--format", value: "md|json", help: "\(HistoryCommand.defaultFormat.rawValue) (default) or json")

    // identity, key share, key import
    static let label = OptionSpec(name: "--label", value: "TEXT", help: "the name your shares carry as their sender (default user@host)")
    static let classicIdentity = OptionSpec(name: "--classic", value: nil,
                                            help: "make the sharing identity X25519 only, without the post-quantum (age1pq1…) recipient (a vault with no identity yet)")
    static let upgradeIdentity = OptionSpec(name: "--upgrade", value: nil,
                                            help: "add a post-quantum (age1pq1…) recipient to a classic identity, and re-share the shares that name this vault")
    static let pqOnly = OptionSpec(name: "--pq-only", value: nil, help: "refuse classic recipients: share only to post-quantum ones (age1pq1…)")
    static let to = OptionSpec(name: "--to", value: "RECIPIENT", help: "an age1… recipient (age1pq1…, age1tag1… and a plugin's age1NAME1… too), an ssh-ed25519 public key line, or a .pub file with one (repeatable)",
                               repeatable: true)
    static let recipientsFile = OptionSpec(name: "--recipients-file", value: "FILE", help: "age's recipients file: one recipient a line, # comments (repeatable)",
                                           shortName: "-R", repeatable: true)
    static let armor = OptionSpec(name: "--armor", value: nil, help: "write ASCII armor (PEM) instead of the binary age format")
    static let output = OptionSpec(name: "--output", value: "FILE", help: "write the share to FILE, or one file per recipient to FOLDER/ or a PATTERN-{label}.age (atomically, mode 0644), instead of stdout", shortName: "-o")
    static let overwrite = OptionSpec(name: "--force", value: nil, help: "replace the --output file when it exists")
    static let mode = OptionSpec(name: "--mode", value: "MODE", help: "the --output file's mode: 644 (default: its readers may share a folder) or 600")
    static let fromSecret = OptionSpec(name: "--from", value: "gsm://…",
                                       help: "link the key to a Secret Manager secret (gsm://projects/P/secrets/S[/versions/N]), fetched now and whenever the copy is older than secret_cache_ttl")
    static let relink = OptionSpec(name: "--relink", value: nil,
                                   help: "with --from: link again even when the secret's latest version is older than the one the key took (after a forged answer, or a version disabled on purpose)")
    static let systemdCreds = OptionSpec(name: "--systemd-creds", value: nil, help: "encrypt the key with systemd-creds for a service's LoadCredentialEncrypted=")
    static let credentialOutput = OptionSpec(name: "--output", value: "FILE",
                                             help: "write the encrypted credential to FILE (atomically, mode 0600) instead of printing it inline", shortName: "-o")
    static let tpm2 = OptionSpec(name: "--tpm2", value: nil, help: "bind the credential to this machine's TPM as well as its host key")
    static let revokeRecipient = OptionSpec(name: "--revoke", value: "RECIPIENT|LABEL",
                                            help: "drop a recipient and rotate the key at Google (key rotate --create), sharing the new one with the others")
    static let noRotate = OptionSpec(name: "--no-rotate", value: nil, help: "with --revoke: drop the recipient only; the key they hold keeps working")
    static let list = OptionSpec(name: "--list", value: nil, help: "show who the key was shared with: recipient, label, when, file")
    static let identityFile = OptionSpec(name: "--identity", value: "FILE",
                                         help: "decrypt with an age identity file or an ssh-ed25519 private key (a protected one asks its passphrase) instead of the vault's identity (repeatable)",
                                         shortName: "-i", repeatable: true)
    // slot, pin
    static let sshKey = OptionSpec(name: "--key", value: "FINGERPRINT|FILE.pub",
                                   help: "the ssh-agent's key for the slot: its SHA256:… fingerprint, or a .pub file with it (needed when the agent holds several)")
    static let ageIdentity = OptionSpec(name: "--age-identity", value: "FILE",
                                        help: "open the vault through its age slot with this age identity file (a private file); the age_identity setting otherwise",
                                        shortName: "-i", setting: Setting.ageIdentity.spec)
    static let yesRecovery = OptionSpec(name: "--yes", value: nil, help: "remove the recovery slot (which leaves no way in if the passphrase is forgotten)")
    static let pin = OptionSpec(name: "--pin", value: nil,
                                help: "then set a PIN: after an idle lock, the agent opens the vault again for the PIN (until the session's absolute limit)")
    static let yesStore = OptionSpec(name: "--yes", value: nil, help: "store without asking (needed without a terminal)")
    static let noVerifyImport = OptionSpec(name: "--no-verify", value: nil, help: "store the key without checking it with Gemini")
    static let follow = OptionSpec(name: "--follow", value: nil, help: "take newer shares from FILE whenever the key is used (key sync does it on demand)")
    static let acceptNewSender = OptionSpec(name: "--accept-new-sender", value: nil,
                                            help: "take a share of a pinned name from another signing key, or unsigned, and pin its sender")
    static let acceptUnlisted = OptionSpec(name: "--accept-unlisted", value: nil,
                                           help: "take a share whose signed recipients do not include this vault (someone passed it on), with a warning")
    static let replaceKey = OptionSpec(name: "--replace", value: nil,
                                       help: "replace a key of that name no sender is pinned for (your own, or one imported unsigned) without a terminal")
    static let replaceSecret = OptionSpec(name: "--replace", value: nil, help: "take the shared value in place of a secret you set yourself")
    static let resetSerial = OptionSpec(name: "--reset-serial", value: nil,
                                        help: "take a share of the pinned sender with a lower serial than the one imported (asks; key list shows the reset)")

    // chat, ask, models
    static let continueChat = OptionSpec(name: "--continue", value: nil, help: "go on with the latest saved chat (not an ask), with the model it used")
    static let resume = OptionSpec(name: "--resume", value: "ID",
                                   help: "go on with a saved conversation (any unique prefix of its id), with its model unless --model is given")
    static let bubbles = OptionSpec(name: "--bubbles", value: nil,
                                    help: "draw messages as chat bubbles (on a terminal that can move the cursor); also the '\(Setting.chatStyle.name)' setting")
    static let noStream = OptionSpec(name: "--no-stream", value: nil, help: "wait for the whole answer (generateContent)")
    static let countTokens = OptionSpec(name: "--count-tokens", value: nil, help: "print the prompt's token count instead of asking")
    static let firstByteTimeout = OptionSpec(name: "--timeout", value: "SECONDS", help: "wait for the first byte", setting: Setting.timeout.spec)
    static let thoughts = OptionSpec(name: "--thoughts", value: nil,
                                     help: "ask for the model's thought summaries and show them dimmed above the answer (ask: on stderr, or 'thoughts' in --json; chat bubbles: folded into a line /thoughts expands) (setting 'show_thoughts')")
    static let store = OptionSpec(name: "--store", value: nil,
                                  help: "let Google keep this request and its reply in its logs (\"store\": true); without it gemvault asks Google not to (setting 'store')")
    static let search = OptionSpec(name: "--search", value: nil,
                                   help: "let the model search with Google: the answer comes whole, with numbered citations, its sources and its searches (setting 'search')")
    static let urlContext = OptionSpec(name: "--url-context", value: nil, help: "let the model read the web pages the prompt names; those it could not read are listed")
    static let code = OptionSpec(name: "--code", value: nil, help: "let the model run Python at Google: its code and the output are shown as blocks")
    static let schema = OptionSpec(name: "--schema", value: "FILE",
                                   help: "ask for JSON shaped by this JSON Schema, check the reply against it, print it (exit 8 when it does not match)")
    static let rawReply = OptionSpec(name: "--raw", value: nil, help: "print the reply's text untouched (no markdown rendering)")
    static let attach = OptionSpec(name: "--attach", value: "FILE",
                                   help: "send a file with the prompt: text inline, an image or PDF as inline data (repeatable)",
                                   shortName: "-a", repeatable: true)
    static let keepAttachments = OptionSpec(name: "--keep-attachments", value: nil,
                                            help: "keep attached files' contents in the encrypted history (by default only their names, sizes and SHA-256)")
    static let noSave = OptionSpec(name: "--no-save", value: nil, help: "do not keep this conversation in the encrypted history")
    static let allowSecrets = OptionSpec(name: "--allow-secrets", value: nil,
                                         help: "send a prompt that looks like it holds a credential (API key, token, private key)")
}
