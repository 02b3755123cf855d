import Agent
import GoogleKeys
import KeyResolution
import Rotation
import Settings
import Sharing
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

let vaultCommands: [CommandSpec] = [
    CommandSpec(path: ["init"], arguments: "", argumentRange: 0...0,
                summary: "create the vault and print its recovery code once",
                options: [.kdf, .forceReplace, .classicIdentity, .json],
                details: "The passphrase is asked twice on the terminal, or read from --passphrase-fd or --passphrase-file.\nThe recovery code goes to stdout once; keep it offline. It opens the vault if the passphrase is lost.\nThe vault's sharing identity is made with it: post-quantum (age1pq1… beside age1…) unless --classic (Docs/sharing.md).",
                run: VaultCommand.initialize),
    CommandSpec(path: ["key", "set"], arguments: "[NAME]", argumentRange: 0...1,
                summary: "store or replace an API key (hidden prompt, or stdin when it is not a terminal)",
                options: [.fromSecret, .relink, .secretmanagerEndpoint, .allowInsecureEndpoint], details: """
                NAME defaults to 'default'. The key is never taken from the command line. A replaced key is kept in the key's history.
                --from gsm://projects/P/secrets/S[/versions/N] links the key to a Secret Manager secret instead: its value is fetched now with the Google credentials key rotate --create uses, and again whenever the copy in the vault is older than secret_cache_ttl (Docs/fleet.md). Setting the key without --from unlinks it.
                A key is one line: a line break after it is dropped, but more lines (or a space or a control character) are refused (exit 64), never cut.
                Google makes two kinds of key. An auth key (AQ. and about 50 more characters) is what Google AI Studio creates since 2026; it is stored silently.
                A standard key (AIza and 35 more) is stored with a warning: the Gemini API rejects standard keys since September 2026.
                To move: create an auth key at https://aistudio.google.com/apikey, run 'gemvault key rotate NAME' and paste it, then delete the old key there.
                """,
                run: VaultCommand.setKey),
    CommandSpec(path: ["key", "get"], arguments: "[NAME]", argumentRange: 0...1,
                summary: "print a key and a newline on stdout, for scripts",
                options: [], details: "", run: VaultCommand.getKey),
    CommandSpec(path: ["key", "list"], arguments: "", argumentRange: 0...0,
                summary: "list key names, masked values and dates",
                options: [.json], details: "", run: VaultCommand.listKeys),
    CommandSpec(path: ["key", "rm"], arguments: "NAME", argumentRange: 1...1,
                summary: "remove a key",
                options: [.revoke, .apikeysEndpoint, .allowInsecureEndpoint],
                details: "With --revoke, the key's current value and the earlier values gemvault knows at Google are deleted there first (soft-deleted: Google can undelete them for 30 days, and may accept them for about 25 minutes); the vault changes only when that worked.",
                run: VaultCommand.removeKey),
    CommandSpec(path: ["passwd"], arguments: "", argumentRange: 0...0,
                summary: "change the passphrase and put the vault under a new data key",
                options: newPassphraseOptions,
                details: "Afterwards the old passphrase opens nothing written since, not even together with an old copy of the vault.\nvault.bak is replaced by the new vault. The recovery code keeps working (a format 1 vault, made by a build before 0.1.0, asks for its code on a terminal to keep it, and otherwise gets a new one, shown once).",
                run: VaultCommand.changePassphrase),
    CommandSpec(path: ["recover"], arguments: "", argumentRange: 0...0,
                summary: "set a new passphrase using the recovery code (also a new data key)",
                options: newPassphraseOptions,
                details: "The recovery code is asked on the terminal, or read from stdin when stdin is not a terminal. It keeps working afterwards.",
                run: VaultCommand.recover),
    CommandSpec(path: ["recovery-code"], arguments: "", argumentRange: 0...0,
                summary: "replace the recovery code with a new one, printed once; the old code stops working",
                options: [.json],
                details: "For a code that was seen or lost. Asks for the passphrase. The vault also gets a new data key and conversation key, so the old code opens no copy of the vault written from now on.\nThe new code goes to stdout once; keep it offline.",
                run: VaultCommand.replaceRecoveryCode),
    CommandSpec(path: ["rekey"], arguments: "", argumentRange: 0...0,
                summary: "put the vault under a new data key, keeping the passphrase",
                options: [],
                details: "Old copies of the vault (backups, synced versions) then open nothing written afterwards. vault.bak is replaced by the new vault.",
                run: VaultCommand.rekey),
    CommandSpec(path: ["restore-backup"], arguments: "", argumentRange: 0...0,
                summary: "check vault.bak with the passphrase and make it the vault again",
                options: [],
                details: "For a damaged vault. The damaged file is kept beside it under a dated name. The restored vault gets a new generation, so the rollback check does not trip.",
                run: VaultCommand.restoreBackup),
    CommandSpec(path: ["inspect"], arguments: "", argumentRange: 0...0,
                summary: "show the vault's header without a passphrase",
                options: [.json], details: "", run: VaultCommand.inspect),
]

/// What gemvault says about a key's shape when one is typed in (GoogleKeys' `KeyShapeNotice`).
enum KeyKindNotice {
    /// Warns about a standard key or a value of no known shape; returns whether it warned.
    @discardableResult
    static func warn(_ key: SecretBytes, name: String) -> Bool {
        guard let notice = key.withUnsafeBytes({ KeyShapeNotice($0, name: name) }) else { return false }
        Console.warning(notice.warning)
        if let hint = notice.hint { Console.hint(hint) }
        return true
    }
}

enum VaultCommand {
    /// The Argon2id cost of a new vault without --kdf (also the first run's).
    static let defaultPreset = KDFParameters.Preset.moderate

    static func initialize(_ call: Invocation) throws {
        let context = call.context
        let presetName = call.value(.kdf) ?? defaultPreset.rawValue
        guard let preset = KDFParameters.Preset(rawValue: presetName) else {
            throw UsageError("--kdf takes interactive, moderate or sensitive, not '\(presetName)'", command: call.command)
        }
        let replacing = call.flag(.forceReplace)
        if context.vault.exists && !replacing { throw VaultError.alreadyExists(path: context.vaultPath) }
        if context.vault.exists { try confirmReplacing(context) }
        let created = try createVault(context, passphraseFrom: try context.passphraseSource(), kdf: preset, replacing: replacing,
                                      classicIdentity: call.flag(.classicIdentity))
        if let kept = created.keptAside {
            Console.note("the vault it replaces was kept as \(kept), with its conversations (gemvault --vault \(kept) history list)")
        }
        let code = created.recoveryCode
        if call.flag(.json) {
            let text = code.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
            try Output.json(InitResult(vault: context.vaultPath, kdf: preset.rawValue, recovery_code: text), schema: .initResult)
        } else {
            Console.note("created \(context.vaultPath) (Argon2id \(preset.rawValue))")
            Console.note("the recovery code below is shown only this once; write it down and keep it offline")
            try Output.writeSecret(code)
        }
    }

    /// The steps `init` and the first run share: the new passphrase (twice on a terminal), then
    /// the vault written by VaultAccess (a recovery code, the file under the lock; with
    /// `replacing`, an existing vault kept aside under a dated name with its conversations).
    static func createVault(_ context: Context, passphraseFrom source: SecretSource, kdf preset: KDFParameters.Preset,
                            replacing: Bool, classicIdentity: Bool = false) throws -> CreatedVault {
        let passphrase = try context.readNewPassphrase(source, prompt: "New passphrase for \(context.vaultPath): ", confirmPrompt: "Repeat the passphrase: ")
        return try context.vault.create(passphrase: passphrase, kdf: preset.parameters, identityLabel: ShareCommand.defaultLabel,
                                        classicIdentity: classicIdentity, replacing: replacing,
                                        dateStamp: Output.compactDate(Output.now())) { kept in
            do { try context.history.move(toVaultAt: kept) } catch {
                Console.warning("the conversations of the replaced vault stay where they were: \(error)")
            }
        }
    }

    /// On a terminal, `init --force` says what it would replace and asks first. Counting the
    /// keys needs the old passphrase, which may be skipped (losing it may be why).
    static func confirmReplacing(_ context: Context) throws {
        let bytes = try context.vault.store.read()
        guard TerminalQuestion.available else { return }
        let file = try? context.vault.file.parse(bytes)
        var description = "gemvault: a vault already exists at \(context.vaultPath)"
        if let file, let modified = FileStatus.of(context.vaultPath)?.modified {
            description += " (generation \(file.generation), last written \(Output.localDate(modified)))"
        }
        Console.err(description + "\n")
        // An empty answer (or none) skips the count.
        if let file, let secret = try? SecretInput.read(from: .terminal, prompt: "Its passphrase, to count the keys it would replace (Enter to skip): ") {
            Redaction.registerPassphrase(secret)
            if let names = context.vault.keyNames(in: file, passphrase: secret) {
                Console.note("it holds \(names.count) key\(names.count == 1 ? "" : "s")\(names.isEmpty ? "" : ": " + names.joined(separator: ", "))")
            } else {
                Console.note("that passphrase does not open it, so its keys were not counted")
            }
        }
        guard TerminalQuestion.confirm("Replace it? The old file stays beside it under a dated name.") else {
            throw CommandFailure(.failure, "nothing was changed: the vault at \(context.vaultPath) was not replaced")
        }
    }

    struct InitResult: Encodable {
        let vault: String
        let kdf: String
        let recovery_code: String
    }

    static func setKey(_ call: Invocation) throws {
        let context = call.context
        let name = call.positionals.first ?? Setting.key.defaultValue
        try VaultContents.validateName(name)
        if let from = call.value(.fromSecret) { return try linkKey(call, name: name, from: from) }
        if let option = [OptionSpec.relink, .secretmanagerEndpoint].first(where: call.flag) { throw UsageError("\(option.name) goes with --from", command: call.command) }
        try context.vault.checkBeforePrompt()
        // The key first: stdin may be the key while the passphrase comes from the terminal or a descriptor.
        let key = try readAPIKey(prompt: "API key for '\(name)': ")
        KeyKindNotice.warn(key, name: name)
        // The key is kept in secret memory across passphrase retries, never asked again.
        let outcome = try context.vault.apply(.setKey(name: name, secret: key, now: Output.now()))
        Console.note("\(outcome.replaced ? "replaced" : "stored") key '\(name)' (\(key.masked))")
        try DefaultKeyOffer.afterStoring(name, context)
    }

    /// `key set NAME --from gsm://…`: fetched, checked and stored with its link (KeyResolution's SecretLinking).
    static func linkKey(_ call: Invocation, name: String, from: String) throws {
        let linked = try SecretLinking.link(name, from: from, vault: call.context.vault, resolve: { try call.settings(vault: $0) }, relink: call.flag(.relink),
                                            environment: call.context.environment, home: call.context.paths.home, warn: { Console.warning($0) },
                                            beforeStoring: { KeyKindNotice.warn($0, name: name) })
        let ttl = linked.settings.resolved(.secretCacheTTL).value ?? "5m"
        Console.note("\(linked.outcome.replaced ? "replaced" : "stored") key '\(name)' (\(linked.value.masked)) from Secret Manager \(linked.resource), version \(linked.version); "
                     + "it is fetched again when its copy is older than \(ttl) (secret_cache_ttl)")
        try DefaultKeyOffer.afterStoring(name, call.context)
    }

    /// An API key from a hidden prompt, or all of stdin when it is not a terminal: its one line.
    static func readAPIKey(prompt: String) throws -> SecretBytes {
        let source: SecretSource = Terminal.stdinIsTerminal ? .terminal : .standardInput
        let input = try SecretInput.read(from: source, prompt: prompt)
        guard input.trimmingWhitespace().count > 0 else { throw SecretInputError.empty }
        guard let key = input.singleLineCredential() else { throw SecretInputError.notOneLine }
        Redaction.register(key)
        return key
    }

    static func getKey(_ call: Invocation) throws {
        let name = call.positionals.first ?? Setting.key.defaultValue
        try VaultContents.validateName(name)
        let context = call.context
        // One round trip when a session holds the vault: the key is asked for, not the status
        // first. Without one, a script with no terminal or passphrase source gets "no key"
        // (exit 5), as every command that needs the key does, not a generic failure.
        let stored = try context.vault.key(name, markUsed: true, beforePrompt: {
            guard context.canOpenVault else { throw KeySourceError.vaultNeedsPassphrase(path: context.vaultPath) }
        })
        // Without a NAME, a vault whose only key has another name gives that one, as requests do.
        let chosen = try stored ?? (call.positionals.isEmpty ? context.vault.soleKey(markUsed: true).key : nil)
        guard let chosen else { throw VaultError.keyNotFound(name: name) }
        try Output.writeSecret(try currentValue(of: chosen, call))
    }

    /// A stored key's value; for a key linked to Secret Manager, fetched again when its copy
    /// is older than secret_cache_ttl, as for every other command.
    static func currentValue(of stored: StoredKey, _ call: Invocation) throws -> SecretBytes {
        guard stored.link != nil else { return stored.secret }
        let resolver = try call.context.keyResolver(call)
        let settings = try resolver.settings(vaultSettings: try call.context.vault.settings())
        return try resolver.linkedValue(of: stored, settings)?.secret ?? stored.secret
    }

    struct KeyListing: Encodable {
        let name: String
        let masked: String
        let kind: GoogleKeyKind
        /// Google no longer accepts this kind of key (a standard key).
        let kind_retired: Bool
        let created: String
        let updated: String
        let age_days: Int64
        @Nullable var last_used: String?
        let previous_versions: Int
        /// The current value's key at Google, when gemvault made or found it.
        @Nullable var google_key: String?
        @Nullable var service_account: String?
        /// How many recipients it was shared with (key share).
        let recipients: Int
        /// Who shared it with this vault: the sender's label and fingerprint, or "unsigned".
        @Nullable var shared_by: String?
        /// The Secret Manager secret it is fetched from (key set --from), with the version stored.
        @Nullable var secret_manager: String?
        /// When a rotation through the secret may be finished (its grace ends); absent when none waits.
        var rotation_finish_after: String?
    }

    static func listKeys(_ call: Invocation) throws {
        // Names, masked values, kinds and dates: no key's value leaves the session for this.
        let keys = try call.context.vault.keySummaries()
        let sharing = keys.isEmpty ? [:] : try call.context.vault.sharingRecords()
        let now = Output.now()
        if call.flag(.json) {
            let listings = keys.map {
                KeyListing(name: $0.name, masked: $0.masked, kind: $0.kind, kind_retired: $0.kind.isRetired, created: Output.isoDate($0.created),
                           updated: Output.isoDate($0.updated), age_days: max(0, now - $0.updated) / 86400,
                           last_used: $0.lastUsed > 0 ? Output.isoDate($0.lastUsed) : nil, previous_versions: $0.earlier.count,
                           google_key: $0.google?.resource, service_account: $0.google?.serviceAccount.nonEmpty,
                           recipients: sharing[$0.name]?.recipientCount ?? 0, shared_by: sharedBy(sharing[$0.name]), secret_manager: $0.link.map(linkText),
                           rotation_finish_after: $0.link?.rotation.flatMap { $0.isPending ? Output.isoDate($0.finishAfter) : nil })
            }
            try Output.json(["keys": listings], schema: .keyList)
            return
        }
        if keys.isEmpty {
            Console.note("the vault holds no keys; add one with 'gemvault key set'")
            return
        }
        let showGoogle = keys.contains { $0.google != nil }
        let showSharing = keys.contains { ShareCommand.summary(sharing[$0.name]) != nil }
        let showLinks = keys.contains { $0.link != nil }
        try Console.out(Output.table([["NAME", "KEY", "KIND", "AGE", "UPDATED", "LAST USED"] + (showGoogle ? ["GOOGLE KEY", "SERVICE ACCOUNT"] : [])
                                      + (showSharing ? ["SHARING"] : []) + (showLinks ? ["SECRET MANAGER"] : [])]
            + keys.map { key in
                [key.name, key.masked, key.kind.label, Output.age(since: key.updated, now: now), Output.localDate(key.updated),
                 key.lastUsed > 0 ? Output.localDate(key.lastUsed) : "-"]
                    + (showGoogle ? [key.google?.resource ?? "-", key.google?.serviceAccount.nonEmpty ?? "-"] : [])
                    + (showSharing ? [EscapeNeutralizer.neutralize(ShareCommand.summary(sharing[key.name]) ?? "-")] : [])
                    + (showLinks ? [key.link.map { link in
                        linkText(link) + (link.rotation.flatMap { $0.isPending ? ", rotation finishes after \(Output.localDate($0.finishAfter))" : nil } ?? "")
                    } ?? "-"] : []) }, columns: Output.windowColumns()))
        let retired = keys.filter(\.kind.isRetired).map(\.name)
        if !retired.isEmpty {
            Console.warning("Google rejects standard keys since September 2026: \(retired.map { "'\($0)'" }.joined(separator: ", "))")
            Console.hint("create auth keys at https://aistudio.google.com/apikey and store each with 'gemvault key rotate NAME'")
        }
    }

    static func linkText(_ link: SecretLink) -> String { "\(link.reference) (version \(link.version))" }

    static func sharedBy(_ record: KeySharing?) -> String? {
        switch record?.origin {
        case .signed(let sender)?: "\(sender.label) \(SharingIdentity.fingerprint(of: sender.signingKey))"
        case .unsigned?: "unsigned"
        default: nil
        }
    }

    static func removeKey(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        if call.flag(.revoke) { return try GoogleRotation.revoke(call.rotationRequest(), name: name) }
        if let option = [OptionSpec.allowInsecureEndpoint, .apikeysEndpoint].first(where: call.flag) { throw UsageError("\(option.name) goes with --revoke", command: call.command) }
        try call.context.vault.apply(.removeKey(name: name))
        Console.note("removed key '\(name)'")
    }

    static func readNewPassphrase(_ call: Invocation) throws -> SecretBytes {
        let source = try call.context.secretSource(fdOption: .newPassphraseFd, fileOption: .newPassphraseFile)
        return try call.context.readNewPassphrase(source, prompt: "New passphrase: ", confirmPrompt: "Repeat the new passphrase: ")
    }

    static func changePassphrase(_ call: Invocation) throws {
        let context = call.context
        try context.vault.checkBeforePrompt()
        // Check the current passphrase before asking for a new one. Its key is kept, so each
        // passphrase costs one Argon2 run in all (Docs/performance.md).
        let current = try context.vault.withUnlocked(.secret(.currentPassphrase)) { $0 }
        let new = try readNewPassphrase(call)
        let result = try current.rekey(newPassphrase: new, legacyRecoveryCode: { try askForLegacyRecoveryCode(current) })
        if let code = result.newRecoveryCode { showNewRecoveryCode(code) }
        noteKeptSlots(result)
        Console.note("passphrase changed and the vault is under a new data key; the old passphrase opens nothing written from now on\(result.newRecoveryCode != nil ? "" : ". The recovery code still works")")
    }

    static func recover(_ call: Invocation) throws {
        let context = call.context
        try context.vault.checkBeforePrompt()
        let code = try context.vault.withUnlocked(.secret(.recoveryCode)) { $0 }
        let new = try readNewPassphrase(call)
        let result = try code.rekey(newPassphrase: new)
        if let newCode = result.newRecoveryCode { showNewRecoveryCode(newCode) }
        noteKeptSlots(result)
        Console.note("new passphrase set and the vault is under a new data key; the recovery code stays the same")
    }

    /// After a rekey: the slots that took the new data key without their secrets, by kind.
    static func noteKeptSlots(_ result: RekeyResult) {
        warnOfDroppedSlots(result)
        var kinds: [String] = []
        for kind in result.slotsKept where !kinds.contains(kind) { kinds.append(kind) }
        for kind in kinds {
            let count = result.slotsKept.filter { $0 == kind }.count
            Console.note("the vault's \(count == 1 ? "\(kind) slot holds the new data key and keeps" : "\(count) \(kind) slots hold the new data key and keep") working")
        }
    }

    /// A slot a rekey could not keep (its age plugin missing here): dropped, and said loudly.
    static func warnOfDroppedSlots(_ result: RekeyResult) {
        for warning in result.slotsDropped { Console.warning(warning) }
    }

    static func rekey(_ call: Invocation) throws {
        let context = call.context
        try context.vault.checkBeforePrompt()
        // Through the session: no passphrase, and the agent follows the new data key at once.
        let (result, throughSession) = try context.vault.rekey(legacyRecoveryCode: askForLegacyRecoveryCode)
        if let code = result.newRecoveryCode { showNewRecoveryCode(code) }
        noteKeptSlots(result)
        if throughSession { context.rememberRecipientThroughSession() }
        Console.note("the vault is under a new data key; old copies of it open nothing written from now on")
    }

    struct RecoveryCodeResult: Encodable {
        let vault: String
        let recovery_code: String
    }

    /// A new recovery code for a vault whose code was seen or lost: a rekey with a new
    /// recovery slot, so neither the old code nor an old copy opens what is written next.
    static func replaceRecoveryCode(_ call: Invocation) throws {
        let context = call.context
        try context.vault.checkBeforePrompt()
        let result = try context.vault.withUnlocked(.secret(.passphrase)) { try $0.rekey(newPassphrase: nil, replacingRecoveryCode: true) }
        warnOfDroppedSlots(result)
        // Shown last: a code that cannot be written fails the command, after the session has followed.
        if let code = result.replacementCode {
            if call.flag(.json) {
                let text = code.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                try Output.json(RecoveryCodeResult(vault: context.vaultPath, recovery_code: text), schema: .recoveryCode)
            } else {
                Console.note("the old recovery code no longer opens this vault; the new one below is shown only this once. Write it down and keep it offline.")
                try Output.writeSecret(code)
            }
        }
        RecoveryReminder.forget(context)
        Console.note("recovery code replaced; the vault is under a new data key")
    }

    /// A format 1 vault (made by a build before 0.1.0) keeps its recovery code through a rekey only if the code
    /// is typed once: on a terminal, ask for it (Enter, or three wrong tries, makes a new one).
    static func askForLegacyRecoveryCode(_ vault: UnlockedVault) throws -> UnlockKey? {
        guard vault.recoverySlotIsLegacy, TerminalQuestion.available else { return nil }
        Console.note("this vault is in format 1, made by a build before 0.1.0; its recovery code can follow the new data key only if you type it now")
        for _ in 0..<3 {
            guard let typed = try? SecretInput.read(from: .terminal, prompt: "Recovery code (Enter for a new one): "), typed.count > 0 else { return nil }
            Redaction.registerPassphrase(typed)
            if let key = try vault.recoveryKey(typed) { return key }
            Console.note("that code does not open this vault")
        }
        return nil
    }

    static func showNewRecoveryCode(_ code: SecretBytes) {
        Console.note("this vault's recovery slot was of the old format and could not follow the new data key without the code;")
        Console.note("here is its new recovery code, shown only this once (the old code no longer works). Write it down and keep it offline.")
        Output.writeSecretToStandardError(code)
    }

    static func restoreBackup(_ call: Invocation) throws {
        let store = call.context.vault.store
        let restored = try call.context.vault.restoreBackup(dateStamp: Output.compactDate(Output.now()), onWait: { Console.note($0) })
        if let kept = restored.keptAside { Console.note("the replaced vault was kept as \(kept)") }
        Console.note("restored \(store.backupPath) as \(store.path) (now generation \(restored.generation))")
    }
}
