import AgeFormat
import AgePlugins
import KeyResolution
import Sharing
import Settings
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

let secretCommands: [CommandSpec] = [
    CommandSpec(path: ["secret", "set"], arguments: "NAME", argumentRange: 1...1,
                summary: "store or replace a secret for another tool (hidden prompt, or stdin when it is not a terminal)",
                options: [.multiline, .fromEnv, .fromSecret], details: """
                A secret is any printable text of 1 to 65,536 bytes: an MCP server's token, a database password, another provider's key. It is never taken from the command line.
                A replaced value is kept in the secret's history (5 earlier values). Line breaks are refused unless --multiline allows them (a PEM block).
                --from-env VAR moves the value of a variable of gemvault's environment into the vault (unset it afterwards).
                --from gsm://projects/P/secrets/S[/versions/N] links it to Secret Manager: fetched now, and again when its copy is older than secret_cache_ttl; setting it without --from unlinks it.
                Programs get secrets with 'gemvault exec --secret VAR=NAME -- COMMAND' (Docs/tool-secrets.md).
                """,
                run: SecretCommand.set),
    CommandSpec(path: ["secret", "get"], arguments: "NAME", argumentRange: 1...1,
                summary: "print a secret and a newline on stdout, for scripts",
                options: [], details: "", run: SecretCommand.get),
    CommandSpec(path: ["secret", "list"], arguments: "", argumentRange: 0...0,
                summary: "list secret names, masked values, dates and the tools that use them",
                options: [], details: "A value shows its first 4 and last 4 characters, and a short or multi-line one (a PEM block) shows as ****.",
                run: SecretCommand.list),
    CommandSpec(path: ["secret", "rm"], arguments: "NAME", argumentRange: 1...1,
                summary: "remove a secret and its earlier values",
                options: [], details: "", run: SecretCommand.remove),
    CommandSpec(path: ["secret", "history"], arguments: "NAME", argumentRange: 1...1,
                summary: "show a secret's current and earlier values, masked, with their dates",
                options: [], details: "", run: SecretCommand.history),
    CommandSpec(path: ["secret", "rollback"], arguments: "NAME", argumentRange: 1...1,
                summary: "make a secret's previous value current again",
                options: [], details: "The value it replaces goes into the history, so a second rollback undoes the first.",
                run: SecretCommand.rollBack),
    CommandSpec(path: ["secret", "rename"], arguments: "NAME NEW", argumentRange: 2...2,
                summary: "give a secret another name, with its dates and history",
                options: [], details: "Refused when NEW is taken. Commands and config files that name the old one (gemvault exec --secret VAR=NAME) must be changed too.",
                run: SecretCommand.rename),
    CommandSpec(path: ["secret", "share"], arguments: "NAME", argumentRange: 1...1,
                summary: "encrypt a secret to recipients as a signed age file",
                options: [.to, .recipientsFile, .armor, .output, .overwrite, .mode, .pqOnly],
                details: """
                Recipients as for 'key share' (a mix of post-quantum and classic ones is warned about; --pq-only refuses classic ones). The output is one age file (stdout, or -o FILE) that every recipient named can open, with 'age -d' too; inside is the secret as a JSON document signed by this vault, marked as a secret's share (never importable as a key), naming its recipients, with a serial of its own per secret name.
                Unlike a key's share, no recipient or file is recorded: a changed secret is shared again by hand.
                """,
                run: SecretCommand.share),
    CommandSpec(path: ["secret", "import"], arguments: "FILE [NAME]", argumentRange: 1...2,
                summary: "store a secret shared with you by 'gemvault secret share'",
                options: [.identityFile, .acceptNewSender, .resetSerial, .replaceSecret],
                details: """
                The file is decrypted with this vault's identity, or with -i, as 'key import' does; FILE may be - for stdin. It must be a secret's share (a key's is refused, and 'key import' refuses a secret's), signed, and written for this vault (or the -i identity).
                The first import of a name pins its sender's signing key: a later share of that name from another key is refused (exit 4) unless --accept-new-sender, one with a lower serial (a replay) unless --reset-serial. A sender whose label looks like that of another sender you trust, with another key, is refused unless --accept-new-sender. A secret you set yourself (not imported) is replaced only with --replace (exit 4 without it); else the secret is stored without asking, and a replaced value goes into its history.
                """,
                run: SecretCommand.importShare),
]

enum SecretCommand {
    static func set(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        let context = call.context
        if let from = call.value(.fromSecret) { return try link(call, name: name, from: from) }
        try context.vault.checkBeforePrompt()
        let value = try readValue(call, name: name)
        if let problem = ToolSecret.problem(with: value, multiline: call.flag(.multiline)) {
            throw VaultError.invalidSecret(name: name, reason: problem)
        }
        Redaction.register(value)
        let outcome = try context.vault.apply(.secret(.set(name: name, value: value, now: Output.now(), usedBy: nil)))
        Console.note("\(outcome.replaced ? "replaced" : "stored") secret '\(name)' (\(value.masked), \(value.count) bytes)")
        if let variable = call.value(.fromEnv) { Console.hint("unset \(variable) where it was set, so no copy stays in plain text") }
    }

    /// `secret set NAME --from gsm://…` (KeyResolution's LinkedToolSecrets).
    static func link(_ call: Invocation, name: String, from: String) throws {
        guard call.value(.fromEnv) == nil else { throw CommandFailure(.usage, "--from and --from-env cannot go together") }
        let linked = try linked(call.context, call).link(name, from: from, multiline: call.flag(.multiline))
        let ttl = linked.settings.resolved(.secretCacheTTL).value ?? "5m"
        Console.note("\(linked.outcome.replaced ? "replaced" : "stored") secret '\(name)' (\(linked.value.masked), \(linked.value.count) bytes) from Secret Manager "
                     + "\(linked.resource), version \(linked.version); it is fetched again when its copy is older than \(ttl) (secret_cache_ttl)")
    }

    /// Linked secrets, with this command's settings and messages.
    static func linked(_ context: Context, _ call: Invocation) -> LinkedToolSecrets {
        LinkedToolSecrets(vault: context.vault, resolve: { vault in
            var layers = try context.settingLayers(call)
            layers.vaultSettings = vault
            layers.vaultPath = context.vaultPath
            return try Settings.resolve(layers)
        }, environment: context.environment, home: context.paths.home, warn: { Console.warning($0) }, note: { Console.note($0) })
    }

    /// `secret share NAME --to …` (VaultAccess's SecretShares): one file for every recipient named.
    static func share(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        let given = try ShareCommand.recipients(call)
        guard !given.isEmpty else { throw UsageError("name a recipient: --to age1… (or -R FILE)", command: call.command) }
        let strength = try ShareCommand.checkStrength(call, given)
        let mode = try ShareCommand.fileMode(call)
        let path = call.value(.output)
        if path == nil, !call.flag(.armor), Terminal.isTerminal(1) {
            throw UsageError("refusing to write a binary age file to the terminal", command: call.command, fix: "write it to a file with -o FILE, pipe it, or give --armor for text")
        }
        if let path, !call.flag(.overwrite), FileStatus.of(link: path) != nil { throw CommandFailure(.failure, "\(path) exists; nothing was written", hint: "--force replaces it") }
        let vault = call.context.vault
        try vault.checkBeforePrompt()
        _ = try vault.sharingIdentity(defaultLabel: ShareCommand.defaultLabel)
        let serial = try vault.shareSecret(name, to: given.map(\.text), path: path, armor: call.flag(.armor), mode: mode, replacing: call.flag(.overwrite),
                                           strength: strength, ConsoleShareOutput())
        Console.note("shared secret '\(name)' (serial \(serial)) with \(given.count == 1 ? "1 recipient" : "\(given.count) recipients")" + (path.map { ": wrote \($0)" } ?? ""))
    }

    /// `secret import FILE [NAME]`: opened here, checked and stored by VaultAccess's SecretShares.
    static func importShare(_ call: Invocation) throws {
        let path = call.positionals[0]
        let explicitName = call.positionals.count > 1 ? call.positionals[1] : nil
        if let explicitName { try VaultContents.validateName(explicitName) }
        let vault = call.context.vault
        let contents = try ShareCommand.readShare(path)
        var identities = try call.values(.identityFile).flatMap(ShareCommand.loadIdentities)
        if identities.isEmpty {
            try vault.checkBeforePrompt()
            identities = try vault.sharingIdentity(defaultLabel: ShareCommand.defaultLabel).ages
        }
        let plaintext = try AgeFile.decrypt(contents.bytes, with: identities)
        let imported = try vault.importSecretShare(plaintext, openedAs: AgePluginUnwrap.recipients(of: identities), name: explicitName,
                                                   acceptNewSender: call.flag(.acceptNewSender), resetSerial: call.flag(.resetSerial),
                                                   replace: call.flag(.replaceSecret))
        Console.note("\(imported.replaced ? "replaced" : "stored") secret '\(imported.name)' (\(imported.masked)) from \(ShareCommand.visible(imported.sender.label)), "
                     + "\(SharingIdentity.fingerprint(of: imported.sender.signingKey)), serial \(imported.serial)")
    }

    /// The value: from a variable, or typed (hidden) or piped.
    static func readValue(_ call: Invocation, name: String) throws -> SecretBytes {
        if let variable = call.value(.fromEnv) {
            guard let text = call.context.environment[variable], !text.isEmpty else {
                throw CommandFailure(.usage, "the variable \(EscapeNeutralizer.neutralize(variable)) is not set or empty in gemvault's environment; nothing was stored")
            }
            return SecretBytes(copying: Array(text.utf8)).trimmingWhitespace()
        }
        return try SecretTextInput.read(prompt: "Secret '\(name)': ", limit: ToolSecret.maxBytes, multiline: call.flag(.multiline),
                                        stdinIsTerminal: Terminal.stdinIsTerminal)
    }

    static func get(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        let context = call.context
        let secret = try context.vault.toolSecret(name, beforePrompt: {
            guard context.canOpenVault else { throw KeySourceError.vaultNeedsPassphrase(path: context.vaultPath) }
        })
        guard let secret else { throw VaultError.secretNotFound(name: name) }
        try Output.writeSecret(try linked(context, call).current(secret))
    }

    static func list(_ call: Invocation) throws {
        let secrets = try call.context.vault.toolSecretSummaries()
        guard !secrets.isEmpty else {
            Console.note("the vault holds no secrets; add one with 'gemvault secret set NAME', or move an MCP server's with 'gemvault mcp wrap'")
            return
        }
        let now = Output.now()
        try Console.out(Output.table([["NAME", "VALUE", "BYTES", "AGE", "UPDATED", "LAST USED", "USED BY"]] + secrets.map { secret in
            [secret.name, secret.masked, String(secret.bytes), Output.age(since: secret.updated, now: now), Output.localDate(secret.updated),
             secret.lastUsed > 0 ? Output.localDate(secret.lastUsed) : "-", EscapeNeutralizer.neutralize(secret.usedBy.isEmpty ? "-" : secret.usedBy)]
        }))
    }

    static func remove(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        let outcome = try call.context.vault.apply(.secret(.remove(name: name)))
        Console.note("removed secret '\(name)' (\(outcome.masked ?? "****")) and its earlier values")
    }

    static func history(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        guard let secret = try call.context.vault.toolSecretSummaries().first(where: { $0.name == name }) else {
            throw VaultError.secretNotFound(name: name)
        }
        let current = [["current", secret.masked, Output.localDate(secret.updated), "-"]]
        let earlier = secret.earlier.enumerated().map { index, old in
            ["\(index + 1) back", old.masked, Output.localDate(old.set), Output.localDate(old.retired)]
        }
        try Console.out(Output.table([["VALUE", "MASKED", "SET", "REPLACED"]] + current + earlier))
    }

    static func rollBack(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        let outcome = try call.context.vault.apply(.secret(.rollBack(name: name, now: Output.now())))
        Console.note("secret '\(name)' is back to its previous value (\(outcome.masked ?? "****"))")
    }

    static func rename(_ call: Invocation) throws {
        let (name, new) = (call.positionals[0], call.positionals[1])
        try VaultContents.validateName(name)
        try VaultContents.validateName(new)
        try call.context.vault.apply(.secret(.rename(from: name, to: new)))
        Console.note("renamed secret '\(name)' to '\(new)'")
    }
}
