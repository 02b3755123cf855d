import GemvaultConfig
import SystemIO
import TerminalIO
import VaultCore

/// Plain `gemvault`, the seed app's entry page: with no vault, a guided set-up (vault,
/// recovery code, API key, a check with the API, a session and a chat), each step declinable;
/// with a vault, the chat. The passphrase is typed twice, once, and never again: every later
/// step reuses the key-encryption key the first one derived.
enum FirstRun {
    static func start(_ context: Context) throws {
        guard Terminal.stdinIsTerminal, Terminal.stdoutIsTerminal else {
            Console.err(HelpText.overview())
            throw ExitStatus(code: ExitCode.usage.rawValue)
        }
        if context.store.exists {
            try run(["chat"], context)
            return
        }
        Console.err("""
        Welcome to gemvault. There is no vault at \(context.vaultPath) yet.
        Four steps set one up: the vault and its recovery code, your API key, a check with Google,
        and a session for chatting. Answer n to skip a step; Ctrl-C stops at any time.

        """)
        guard TerminalQuestion.offer("1. Create the vault now?") else {
            Console.note("nothing was created; run 'gemvault init' when you are ready")
            return
        }
        let document = try createVault(context)

        guard TerminalQuestion.offer("2. Store your Gemini API key in it now (hidden input)?") else {
            Console.note("no key stored; 'gemvault key set' adds one later")
            return
        }
        let key = try readKey()
        try storeKey(key, in: document, context)

        if TerminalQuestion.offer("3. Check the key with one request to the Gemini API?") {
            do {
                try RotationCommand.verify(key, try invocation(["chat"], context), vaultSettings: nil)
                Console.note("the API accepted the key")
            } catch {
                let (_, message, hint) = ErrorReport.describe(error)
                Console.warning("the key was stored, but the check failed: \(message)")
                if let hint { Console.hint(hint) }
            }
        }

        if TerminalQuestion.offer("4. Unlock a session, so chat and key get need no passphrase for a while?") {
            try SessionCommand.startSession(try invocation(["unlock"], context), document: document)
        }
        guard TerminalQuestion.offer("Start a chat now?") else {
            Console.note("all set; 'gemvault chat' starts one, 'gemvault --help' lists the rest")
            return
        }
        try run(["chat"], context)
    }

    /// Like `init`: the passphrase twice, then the recovery code once, kept until confirmed.
    private static func createVault(_ context: Context) throws -> VaultDocument {
        let passphrase = try context.readNewPassphrase(.terminal, prompt: "New passphrase for \(context.vaultPath): ",
                                                       confirmPrompt: "Repeat the passphrase: ")
        let code = RecoveryCode.generate()
        let document = try VaultDocument.create(path: context.vaultPath, passphrase: passphrase, recoveryCode: code,
                                                kdf: KDFParameters.Preset.moderate.parameters)
        try context.store.withExclusiveLock { session in
            if try session.read() != nil { throw VaultError.alreadyExists(path: context.vaultPath) }
            try context.vault.save(document, in: session, backup: .previous, newVault: true)
        }
        context.rememberRecipient(document.contents)
        Console.err("gemvault: created \(context.vaultPath)\n\nYour recovery code opens the vault if the passphrase is lost. It is shown only this once:\n\n    ")
        try Output.writeSecret(code)
        Console.err("\nWrite it down and keep it offline, away from this machine.\n")
        while !TerminalQuestion.confirm("Have you stored the recovery code?") {
            guard TerminalQuestion.available else { break }
            Console.err("It cannot be shown again. Without it, a forgotten passphrase loses every key in the vault.\n")
            if TerminalQuestion.confirm("Go on without storing it?") { break }
        }
        return document
    }

    /// The key, warned about like `key set` does; a key of the wrong shape may be typed again.
    private static func readKey() throws -> SecretBytes {
        while true {
            let key = try VaultCommand.readAPIKey(prompt: "Paste the API key (from https://aistudio.google.com/apikey): ")
            guard KeyKindNotice.warn(key, name: "default"), TerminalQuestion.available,
                  TerminalQuestion.confirm("Type the key again?") else { return key }
        }
    }

    /// Stores the key under the lock, opening the vault with the key-encryption key in hand.
    private static func storeKey(_ key: SecretBytes, in created: VaultDocument, _ context: Context) throws {
        guard let kek = created.keyEncryptionKey else { throw VaultError.wrongPassphrase }
        try context.store.withExclusiveLock { session in
            guard let bytes = try session.read() else { throw VaultError.notFound(path: context.vaultPath) }
            let document = try VaultDocument.open(try context.vault.file.checked(context.vault.file.parse(bytes)),
                                                  path: context.vaultPath, kek: kek)
            try document.contents.setKey("default", secret: key, now: Output.now())
            try context.vault.save(document, in: session, backup: .previous)
            created.replaceContents(document.contents)
        }
        Console.note("stored key 'default' (\(key.masked))")
    }

    private static func invocation(_ argv: [String], _ context: Context) throws -> Invocation {
        guard case .run(let spec, let positionals, let options) = try ArgumentParser.parse(argv) else { throw UsageError("no command '\(argv.joined(separator: " "))'") }
        return Invocation(command: spec, positionals: positionals, options: options, context: context)
    }

    private static func run(_ argv: [String], _ context: Context) throws {
        let call = try invocation(argv, context)
        try call.command.run(call)
    }
}
