import AgeFormat
import Settings
import Sharing
import SSHAgent
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

let slotCommands: [CommandSpec] = [
    CommandSpec(path: ["slot", "list"], arguments: "", argumentRange: 0...0,
                summary: "list the vault's key slots (the ways in): kinds, ssh keys, age recipients, dates",
                options: [.json], details: "Needs no passphrase: the slots are in the file's clear header. 'slot rm' takes the ID column's number, or the KEY column's ssh fingerprint (SHA256:…) or age recipient, as shown there (a long recipient shortened to its first 24 characters, …, its last 12).",
                isGroupDefault: true, run: SlotCommand.list),
    CommandSpec(path: ["slot", "add"], arguments: "ssh|age [RECIPIENT]", argumentRange: 1...2,
                summary: "add an ssh-agent or age slot: a key in $SSH_AUTH_SOCK, or an age identity, opens the vault without a passphrase",
                options: [.sshKey],
                details: "ssh: the ssh-agent signs a random challenge kept in the slot (Ed25519, or RSA with rsa-sha2-512); HKDF-SHA-256 of the signature makes the key that holds the vault's data key.\nThe key is asked to sign twice first: a key whose signatures differ (ECDSA, a randomising token) is refused. Then the vault is opened (the passphrase is asked) and the slot added.\nage RECIPIENT: the data key is sealed in a small age file to RECIPIENT (age1…, as age-keygen -y prints it, or any recipient 'key share --to' takes); 'unlock -i FILE' or the age_identity setting names the identity that opens it.\nFrom then on, any command that needs the vault tries the slot before asking for the passphrase. Docs/quick-unlock.md explains what each protects against.",
                run: SlotCommand.add),
    CommandSpec(path: ["slot", "rm"], arguments: "ID", argumentRange: 1...1,
                summary: "remove a key slot (never the passphrase slot) and put the vault under a new data key",
                options: [.yesRecovery],
                details: "ID is the slot's number in 'slot list', an ssh slot's SHA256:… fingerprint, or an age slot's recipient (whole, or as 'slot list' shortens it). The passphrase is asked (not an ssh slot): the vault is rekeyed, so the removed way in opens nothing written afterwards.\nThe recovery slot goes only with --yes; the passphrase slot never.",
                run: SlotCommand.remove),
]

enum SlotCommand {
    struct SlotRow: Encodable {
        let id: Int
        let kind: String
        @Nullable var keyType: String?
        @Nullable var fingerprint: String?
        @Nullable var added: String?
        @Nullable var kdf: String?
    }

    struct SlotList: Encodable {
        let vault: String
        let formatVersion: Int
        let slots: [SlotRow]
    }

    static func rows(_ header: VaultHeader) -> [SlotRow] {
        header.slots.enumerated().map { index, slot in
            let listing = slot.listing
            return SlotRow(id: index + 1, kind: slot.kind, keyType: listing.keyType, fingerprint: listing.fingerprint, added: listing.added.map(Output.isoDate),
                           kdf: listing.kdf.map { "argon2id13, \($0.opsLimit) passes, \($0.memLimit >> 20 == 0 ? "\($0.memLimit >> 10) KiB" : "\($0.memLimit >> 20) MiB")" })
        }
    }

    static func list(_ call: Invocation) throws {
        let context = call.context
        let header = try context.vault.header()
        let rows = rows(header)
        if call.flag(.json) {
            try Output.json(SlotList(vault: ProcessIdentity.absolutePath(context.vaultPath), formatVersion: header.formatVersion, slots: rows), schema: .slotList)
            return
        }
        let table = [["ID", "KIND", "KEY", "ADDED"]] + zip(rows, header.slots).map { row, slot in
            [String(row.id), row.kind, row.fingerprint.map { "\(row.keyType ?? "") \($0)" } ?? row.kdf ?? "", slot.listing.added.map(Output.localDate) ?? "-"]
        }
        try Console.out(Output.table(table))
    }

    /// The kinds `slot add KIND` makes, by the word it takes: each a registered slot kind.
    static var adders: [(word: String, kind: any SlotKind.Type, add: (Invocation) throws -> Void)] {
        [("ssh", SSHAgentSlot.self, addSSH), ("age", AgeSlot.self, addAge)]
    }

    static func add(_ call: Invocation) throws {
        let word = call.positionals[0]
        guard let adder = adders.first(where: { $0.word == word && SlotKinds.kind(byte: $0.kind.kindByte) != nil }) else {
            let words = adders.map { "'\($0.word)'" }.joined(separator: ", ")
            throw UsageError("'\(EscapeNeutralizer.neutralize(word))' is not a slot kind gemvault adds; the kind is \(words)", command: call.command)
        }
        try adder.add(call)
    }

    static func addAge(_ call: Invocation) throws {
        guard call.positionals.count == 2 else { throw UsageError("slot add age takes the recipient: gemvault slot add age age1…", command: call.command) }
        let recipient: NamedRecipient
        do throws(SharingError) { recipient = try RecipientList.parse(call.positionals[1], origin: "the recipient") } catch {
            if case .badRecipient(let why) = error { throw UsageError(why, command: call.command, fix: "give the recipient age-keygen -y prints for the identity file") }
            throw error
        }
        let context = call.context
        try context.vault.checkBeforePrompt()
        let now = Output.now()
        try context.vault.addAgeSlot(recipient.recipient, now: now)
        Console.note("added an age slot for \(AgeSlot.recipientType(recipient.text)) \(AgeSlot.short(recipient.text)); 'gemvault unlock -i FILE' or the age_identity setting opens the vault with its identity")
    }

    /// The identities for the vault's age slots: `-i FILE`, else (unless a passphrase was given
    /// on purpose) the age_identity setting, from the environment or config.json. The file is
    /// a private one, checked as a passphrase file is.
    static func ageIdentities(options: ParsedOptions, environment: [String: String], configFile: () throws -> ConfigFile) throws -> AgeIdentitySource? {
        var named = options.value(.ageIdentity)
        if named == nil, !CommandUnlockUI.givesPassphrase(options) { named = try ageIdentitySetting(environment: environment, configFile: configFile) }
        guard let path = named else { return nil }
        return try AgeIdentitySource.reading(path) { attempt in try ShareCommand.sshKeyPassphrase(path: path, attempt: attempt) }
    }

    /// The age_identity setting alone (the environment, else config.json as the command loaded
    /// it), each layer checked as Settings.resolve checks it, without resolving every setting.
    static func ageIdentitySetting(environment: [String: String], configFile: () throws -> ConfigFile) throws -> String? {
        let spec = Setting.ageIdentity.spec
        var candidates: [(raw: String, layer: String)] = []
        if let value = try configFile().values[spec.name] { candidates.append((value, "config.json")) }
        if let value = environment[spec.environmentVariable], !value.isEmpty { candidates.append((value, spec.environmentVariable)) }
        var named: String?
        for candidate in candidates {
            switch spec.validate(candidate.raw) {
            case .success(let value): named = value
            case .failure(let problem): throw ConfigError.invalidValue(layer: candidate.layer, setting: spec.name, message: problem.message, fromFlag: false)
            }
        }
        return named
    }

    static func addSSH(_ call: Invocation) throws {
        let context = call.context
        let choice = try keyChoice(call.value(.sshKey), command: call.command)
        try context.vault.checkBeforePrompt()
        let agent: SSHAgentClient
        do throws(SSHAgentError) { agent = try SSHAgentClient(environment: context.environment) } catch {
            throw CommandFailure(.failure, "no ssh-agent: SSH_AUTH_SOCK is not set", hint: "start one with 'eval $(ssh-agent)' and 'ssh-add', or log in with agent forwarding (ssh -A)")
        }
        let identity = try SSHSlotUnlock.chooseKey(choice, agent: agent)
        let key = try context.vault.addSSHSlot(for: identity, agent: agent, now: Output.now())
        Console.note("added an ssh-agent slot for \(identity.keyType) \(key.fingerprintText)\(identity.comment.isEmpty ? "" : " (\(identity.comment))"); commands now open the vault without a passphrase while SSH_AUTH_SOCK holds that key")
    }

    /// `--key`: a SHA256:… fingerprint, or a public key file.
    static func keyChoice(_ value: String?, command: CommandSpec) throws -> SSHKeyChoice? {
        guard let value else { return nil }
        if value.hasPrefix("SHA256:") { return .fingerprint(value) }
        guard let text = PlainFile.readText(value, limit: 64 << 10) else {
            throw UsageError("--key \(value): no such readable file, and not a SHA256:… fingerprint", command: command,
                             fix: "name the .pub file ssh-keygen wrote, or a fingerprint that 'ssh-add -l' lists")
        }
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" })
        guard fields.count >= 2, let blob = Sodium.bytes(base64: String(fields[1])) else {
            throw UsageError("\(value) is not an ssh public key file (TYPE BASE64 [COMMENT])", command: command,
                             fix: "name the .pub file ssh-keygen wrote, or a fingerprint that 'ssh-add -l' lists")
        }
        return .publicKey(blob: blob, path: value)
    }

    static func remove(_ call: Invocation) throws {
        let context = call.context
        let header = try context.vault.header()
        let id = call.positionals[0]
        let found: VaultHeader.Slot?
        if let number = Int(id) {
            found = header.slots.indices.contains(number - 1) ? header.slots[number - 1] : nil
        } else {
            // An age slot's recipient whole, as 'slot add age' took it, or as 'slot list' shortens it.
            let recipient = Array(((try? RecipientList.parse(id, origin: "the slot's recipient"))?.text ?? id).utf8)
            found = header.slots.first { $0.listing.fingerprint == id || ($0.kind == AgeSlot.name && $0.identity == recipient) }
        }
        guard let slot = found else {
            throw CommandFailure(.failure, "the vault has no slot '\(AgeSlot.short(EscapeNeutralizer.neutralize(id)))'", hint: "'gemvault slot list' shows the IDs and fingerprints")
        }
        // The rules are checked before the prompt too, so nobody types a passphrase for a refusal.
        if slot.isPassphrase {
            throw VaultError.slotRefused("the passphrase slot is never removed: it is the way in that always works (gemvault passwd changes it)")
        }
        if slot.isRecovery && !call.flag(.yesRecovery) {
            throw VaultError.slotRefused("removing the recovery slot leaves no way in if the passphrase is forgotten; add --yes if that is what you want")
        }
        try context.vault.checkBeforePrompt()
        let result = try context.vault.removeSlot(slot, allowRecovery: call.flag(.yesRecovery))
        VaultCommand.noteKeptSlots(result)
        Console.note("removed the \(slot.kind) slot\(slot.listing.fingerprint.map { " for \($0)" } ?? ""); the vault is under a new data key, so that way in opens nothing written from now on")
        if slot.isRecovery {
            Console.note("the vault has no recovery slot now; 'gemvault recovery-code' makes a new one")
        }
    }
}
