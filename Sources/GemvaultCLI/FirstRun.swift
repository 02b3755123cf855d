import Conversations
import KeyResolution
import Settings
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

/// Plain `gemvault`, the seed app's entry page: with no vault, a guided set-up (vault,
/// recovery code, API key, a check with the API, a session and a chat), each step declinable;
/// with a vault, the chat. The passphrase is typed twice, once, and never again: every later
/// step reuses the key-encryption key the first one derived.
enum FirstRun {
    static func start(_ context: Context) throws {
        guard Terminal.stdinIsTerminal, Terminal.stdoutIsTerminal else {
            Console.err(helpText.overview())
            throw ExitStatus(code: ExitCode.usage.rawValue)
        }
        if context.vault.exists {
            RecoveryReminder.askAgain(context)
            try chatOrAddKey(context)
            return
        }
        // One line a paragraph, wrapped to the window (at 60 columns a fixed break split words).
        Console.err(Output.fitted("""
        Welcome to gemvault. There is no vault at \(context.vaultPath) yet.
        Four steps set one up: the vault and its recovery code, your API key, a check with Google, \
        and a session for chatting. Answer n to skip a step; Ctrl-C stops at any time.

        """))
        guard TerminalQuestion.offer("1. Create the vault now?") else {
            Console.note("nothing was created; run 'gemvault init' when you are ready")
            return
        }
        let vault = try createVault(context)

        guard TerminalQuestion.offer("2. Store your Gemini API key in it now (hidden input)?") else {
            Console.note("no key stored; 'gemvault key set' adds one later")
            return
        }
        let key = try readKey()
        try storeKey(key, in: vault)

        if TerminalQuestion.offer("3. Check the key with one request to the Gemini API?") {
            _ = try checkUntilAccepted(key, context) { retyped in try storeKey(retyped, in: vault, replacing: true) }
        }

        if TerminalQuestion.offer("4. Unlock a session, so chat and key get need no passphrase for a while?") {
            try SessionCommand.startSession(try invocation(["unlock"], context), vault: vault)
        }
        guard TerminalQuestion.offer("Start a chat now?") else {
            Console.note("all set; 'gemvault chat' starts one, 'gemvault --help' lists the rest")
            return
        }
        try run(["chat"], context)
    }

    /// Like `init`: the passphrase twice, then the recovery code once, kept until confirmed.
    private static func createVault(_ context: Context) throws -> UnlockedVault {
        let created = try VaultCommand.createVault(context, passphraseFrom: .terminal, kdf: VaultCommand.defaultPreset, replacing: false)
        RecoveryReminder.remember(context)
        Console.err(Output.fitted("gemvault: created \(context.vaultPath)\n\nYour recovery code opens the vault if the passphrase is lost. It is shown only this once:") + "\n\n    ")
        try Output.writeSecret(created.recoveryCode)
        Console.err("\n" + Output.fitted("Write it down and keep it offline, away from this machine.") + "\n")
        while !TerminalQuestion.confirm("Have you stored the recovery code?") {
            guard TerminalQuestion.available else { break }
            Console.err(Output.fitted("It cannot be shown again. Without it, a forgotten passphrase loses every key in the vault.") + "\n")
            if TerminalQuestion.confirm("Go on without storing it?") { return created.vault }
        }
        RecoveryReminder.forget(context)
        // The code leaves the screen and the terminal's scrollback once it is written down.
        Console.err("\u{1b}[H\u{1b}[2J\u{1b}[3J")
        Console.note("the recovery code was cleared from the screen and its scrollback")
        return created.vault
    }

    /// The key, warned about like `key set` does; a key of the wrong shape is typed again
    /// unless the user says to keep it.
    private static func readKey(name: String = Setting.key.defaultValue) throws -> SecretBytes {
        while true {
            let key = try VaultCommand.readAPIKey(prompt: "Paste the API key (from https://aistudio.google.com/apikey): ")
            guard KeyKindNotice.warn(key, name: name), TerminalQuestion.available,
                  TerminalQuestion.offer("Type the key again?") else { return key }
        }
    }

    /// Stores the key under the lock, opening the vault with the key in hand (no passphrase
    /// again). A key typed again after a refused check replaces the refused one, which is not kept.
    private static func storeKey(_ key: SecretBytes, name: String = Setting.key.defaultValue, in vault: UnlockedVault, replacing: Bool = false) throws {
        try vault.modify { document in
            if replacing, document.contents.key(named: name) != nil { try document.contents.removeKey(name) }
            try document.contents.setKey(name, secret: key, now: Output.now())
        }
        Console.note("stored key '\(name)' (\(key.masked))")
    }

    /// The first run waits this long for the check's answer, whatever `timeout` says: a
    /// newcomer at a dead endpoint learns why in seconds, not after a minute of silence.
    static let checkLimit = 10.0

    /// Step 3: one request with the key, with a progress line. A refused key is typed again
    /// (the default) and stored in place of the refused one; declined, or with no answer
    /// within `checkLimit`, the set-up stops with the check's exit code: it never goes on to
    /// a chat that would fail the same way. Returns the key the API accepted.
    private static func checkUntilAccepted(_ first: SecretBytes, name: String = Setting.key.defaultValue, _ context: Context,
                                           vaultSettings: [String: String]? = nil, store: (SecretBytes) throws -> Void) throws -> SecretBytes {
        var key = first
        while true {
            do {
                try check(key, context, vaultSettings: vaultSettings)
                Console.note("the API accepted the key")
                return key
            } catch let error as any ChatFailure where error.kind == .refused {
                Console.warning("the check failed: \(error.message)")
                if let hint = error.hint { Console.hint(hint) }
                guard TerminalQuestion.offer("Type the key again?") else {
                    throw CommandFailure(.apiRefused, "set-up stopped: key '\(name)' is stored, but the Gemini API refused it",
                                         hint: "'gemvault key rotate \(name)' replaces it with a key that works; then 'gemvault' starts a chat")
                }
                key = try readKey(name: name)
                try store(key)
            } catch let error as any ChatFailure {
                throw CommandFailure(.network, "set-up stopped: \(error.message)",
                                     hint: "key '\(name)' is stored, unchecked; check the network and the 'endpoint' setting ('gemvault config explain endpoint'), then run 'gemvault' again to chat")
            }
        }
    }

    /// `vaultSettings`: an existing vault's own (its endpoint, its model), as the chat will use them.
    private static func check(_ key: SecretBytes, _ context: Context, vaultSettings: [String: String]?) throws {
        var layers = try context.settingLayers(try invocation(["chat"], context))
        if let vaultSettings {
            layers.vaultSettings = vaultSettings
            layers.vaultPath = context.vaultPath
        }
        let settings = try Settings.resolve(layers)
        let provider = ProviderChoice.current
        provider.prepare()
        let progress = ProgressLine.start("checking the key with \(try settings.endpoint(.endpoint))…")
        defer { progress?.stop() }
        try provider.checkKey(ProviderChoice.Setup(settings: settings, key: key, keyOrigin: "what you pasted", keyReplaceHint: "type the key again when asked",
                                                   timeout: checkLimit))
    }

    /// Plain `gemvault` with a vault: the chat. A vault without the key the chat needs gets
    /// the key step instead of exit 5, with the vault the chat already opened (no second
    /// passphrase) or through the unlocked session.
    private static func chatOrAddKey(_ context: Context) throws {
        do {
            try run(["chat"], context)
            return
        } catch let error as KeySourceError {
            // A vault holding keys under other names needs a choice, not another key.
            guard case .noKey(_, let held) = error, held.isEmpty, context.vault.exists, TerminalQuestion.available else { throw error }
            let throughSession = try context.vault.sessionIsOpen()
            let vaultSettings = try context.vault.settings()
            var layers = try context.settingLayers(try invocation(["chat"], context))
            layers.vaultSettings = vaultSettings
            let name = try Settings.resolve(layers)[.key]
            Console.note("the vault at \(context.vaultPath) has no key '\(name)' yet")
            guard TerminalQuestion.offer("Store your Gemini API key in it now (hidden input)?") else {
                Console.note("no key stored; 'gemvault key set' adds one later")
                return
            }
            let store: (SecretBytes, Bool) throws -> Void = { key, replacing in
                if throughSession {
                    if replacing { try context.vault.apply(.removeKey(name: name)) }
                    try context.vault.apply(.setKey(name: name, secret: key, now: Output.now()))
                    Console.note("stored key '\(name)' (\(key.masked))")
                } else {
                    try storeKey(key, name: name, in: try context.vault.openedVault(), replacing: replacing)
                }
            }
            let key = try readKey(name: name)
            try store(key, false)
            if TerminalQuestion.offer("Check the key with one request to the Gemini API?") {
                _ = try checkUntilAccepted(key, name: name, context, vaultSettings: vaultSettings) { try store($0, true) }
            }
            try run(["chat"], context)
        }
    }

    private static func invocation(_ argv: [String], _ context: Context) throws -> Invocation {
        guard case .run(let spec, let positionals, let options) = try commandLine.parse(argv) else { throw UsageError("no command '\(argv.joined(separator: " "))'") }
        return Invocation(command: spec, positionals: positionals, options: options, context: context)
    }

    private static func run(_ argv: [String], _ context: Context) throws {
        let call = try invocation(argv, context)
        try call.command.run(call)
    }
}
