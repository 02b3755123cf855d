import AgeFormat
import Glibc
import GoogleAuth
import GoogleKeys
import Rotation
import Sharing
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

let shareCommands: [CommandSpec] = [
    CommandSpec(path: ["identity"], arguments: "", argumentRange: 0...0,
                summary: "print this vault's age recipients and signing-key fingerprint, for others to share keys with you",
                options: [.label, .classicIdentity, .upgradeIdentity, .json],
                details: """
                The identity is made with the vault (or on first use): a hybrid post-quantum key (ML-KEM-768 + X25519), whose age1pq1… recipient others encrypt shares to, an X25519 key (its age1… recipient, for senders without post-quantum age), and an Ed25519 key that signs the shares you send. The secret keys stay in the vault; a session's agent uses them without handing them out.
                --classic makes the identity X25519 only, for a vault that has none yet. --upgrade adds the post-quantum key to a classic identity, and shares again, to it, every share this vault recorded for its own age1… recipient. --json keeps 'recipient' the age1… one; 'pq_recipient' is the age1pq1… one (null for a classic identity), 'recipients' both.
                --label sets the name your shares carry (default user@host): printable ASCII, single spaces, none at either end, so that it cannot pass for another's on the screen. Docs/sharing.md explains sharing.
                """,
                run: ShareCommand.identity),
    CommandSpec(path: ["key", "share"], arguments: "NAME", argumentRange: 1...1,
                summary: "encrypt a key to recipients as a signed age file, or list who it was shared with",
                options: [.to, .recipientsFile, .armor, .output, .overwrite, .mode, .pqOnly, .list, .revokeRecipient, .noRotate, .allowInsecureEndpoint, .json],
                details: """
                RECIPIENT is an age1… recipient (see 'gemvault identity'; age1…=LABEL names it): X25519, post-quantum age1pq1…, a hardware key's age1tag1… or age1tagpq1…, or a plugin's age1NAME1… (a YubiKey's, a TPM's: wrapped by age-plugin-NAME from PATH, which may ask for a touch or PIN; Docs/sharing.md); or an ssh-ed25519 public key line (its comment names it), or a .pub file holding one; -R FILE is age's recipients file (one a line, # comments). A recipient that is none of these is refused, named (exit 64), before anything is written.
                The output is a standard age file (armored with --armor) that 'age -d' reads with the recipient's identity or ~/.ssh/id_ed25519 (age 1.3 or later for age1pq1…, the hardware's plugin for a tag); inside is the key as a JSON document signed by this vault, naming the recipients it was written for. -o FILE is one file every recipient named can open (said when there are several); -o FOLDER/ (NAME-LABEL.age) or -o 'PATTERN-{label}.age' writes one file per recipient. Files are written atomically with mode 0644 (--mode 600 keeps them private), never over a link, and replace an existing file only with --force.
                A share to post-quantum (age1pq1…) and classic recipients at once is warned about: the classic ones are the weak link, through which a quantum computer could open it. --pq-only refuses classic recipients, named, among those given or recorded (exit 64, nothing written).
                The vault records each recipient and file: a later share of the key rewrites every recorded file, for the recipients it was written for, with a higher serial. --list shows them.
                --revoke RECIPIENT (or the label --list shows) drops a recipient, removes the files only they had, and rotates the key at Google (as key rotate --create does; Docs/rotation.md), which shares the new key with the others: a recipient saw the key, so only a new key takes it back. Google may accept the old key for about 25 minutes more. Without a Google credential, or for a key Google did not make or cannot find, it refuses (exit 1, nothing changed) unless --no-rotate, which only drops the recipient.
                """,
                run: ShareCommand.share),
    CommandSpec(path: ["key", "import"], arguments: "FILE [NAME]", argumentRange: 1...2,
                summary: "store a key shared with you (a gemvault share, or a plain age file holding a key)",
                options: [.identityFile, .yesStore, .noVerifyImport, .follow, .acceptNewSender, .acceptUnlisted, .replaceKey, .resetSerial, .allowInsecureEndpoint, .json],
                details: """
                The file is decrypted with this vault's identity, or with -i (an age identity file, whose AGE-PLUGIN-NAME-1… lines age-plugin-NAME opens, or an ssh-ed25519 private key, whose passphrase is asked on the terminal if it has one). FILE may be - for stdin (a pipe, a file or a terminal; at most 1 MiB).
                Before storing, it shows the key's name, masked value, kind and Google key, and who signed it. On a terminal it asks; without one it needs --yes. The key is checked with Gemini (listing models) unless --no-verify.
                The first signed import of a name pins its sender's signing key: a later share of that name from another key, or an unsigned one, is refused (exit 4) unless --accept-new-sender; one with a lower serial (a replay) unless --reset-serial, which asks and which key list shows. A name not pinned yet, from a sender whose label is or looks like (spaces, invisible characters, case, look-alike letters aside) that of another signing key you trust, is warned about and asked (without a terminal, refused unless --accept-new-sender). Replacing a key no sender is pinned for (your own, or one imported unsigned) is asked even with --yes; without a terminal it needs --replace.
                A share names the recipients it was written for: one that does not name this vault (or the -i identity) was passed on by a recipient, and is refused (exit 4) unless --accept-unlisted. A share of format 1 names none: it is taken only for a name already pinned to its signer, and is otherwise refused the same way.
                With --follow, FILE is recorded: whenever the key is used, a changed FILE holding a newer share from the pinned sender is taken (said once on stderr); one that fails a check is warned about and the stored key stays.
                """,
                run: ShareCommand.importShare),
    CommandSpec(path: ["key", "sync"], arguments: "[NAME]", argumentRange: 0...1,
                summary: "take newer shares from the files keys follow now, and say what each held",
                options: [],
                details: "For every key imported with --follow (or NAME): a changed file holding a newer share signed by the pinned sender is taken. Exit 4 when a changed file failed a check; the stored key stays.",
                run: ShareCommand.sync),
]

enum ShareCommand {
    /// What shares carry as the sender's name until `identity --label` sets one.
    /// `user@host`, kept to what `identity --label` takes (anything else becomes `_`).
    static var defaultLabel: String {
        let label = String((CurrentUser.name + "@" + CurrentUser.host).unicodeScalars.map { (0x21...0x7e).contains($0.value) ? Character($0) : "_" })
        return VaultIdentity.isPlainLabel(label) ? label : "gemvault"
    }
    /// The longest share or identity file read: a share is a few hundred bytes.
    static let fileLimit = 1 << 20

    // MARK: identity

    struct IdentityReport: Encodable {
        let recipient: String
        /// The hybrid post-quantum recipient, null for a classic identity.
        @Nullable var pq_recipient: String?
        /// Every recipient, the post-quantum one first.
        let recipients: [String]
        /// The Ed25519 public key, base64, as shares carry it in `from.signing_key`.
        let signing_key: String
        let fingerprint: String
        let label: String
    }

    static func identity(_ call: Invocation) throws {
        let vault = call.context.vault
        try vault.checkBeforePrompt()
        // What --classic or --upgrade leaves, so it is not read again.
        var made: SharingIdentity?
        if call.flag(.classicIdentity) {
            guard !call.flag(.upgradeIdentity) else { throw UsageError("--classic and --upgrade go apart: --upgrade adds the post-quantum key --classic leaves out", command: call.command) }
            let classic = try vault.makeClassicIdentity(label: defaultLabel)
            if !classic.made, classic.identity.pqRecipient != nil {
                throw CommandFailure(.usage, "the vault has a post-quantum identity already; --classic only makes a new one, X25519 only",
                                     hint: "senders without post-quantum age can still use its age1… recipient")
            }
            made = classic.identity
        }
        if call.flag(.upgradeIdentity) {
            let upgrade = try vault.upgradeIdentity(defaultLabel: defaultLabel, ConsoleShareOutput())
            made = upgrade.identity
            Console.note(upgrade.upgraded ? "added a post-quantum recipient to this vault's identity; give senders the age1pq1… recipient below"
                         + (upgrade.reshared.isEmpty ? "" : " (shared again for it: \(upgrade.reshared.joined(separator: ", ")))")
                         : "this vault's identity is post-quantum already")
            if !upgrade.followed.isEmpty {
                Console.note("the shares you follow are written to your age1… recipient until their senders share to the new one: "
                             + upgrade.followed.map { "\($0.name) (from \(visible($0.sender)))" }.joined(separator: ", "))
            }
        }
        var identity = try made ?? vault.sharingIdentity(defaultLabel: defaultLabel)
        if let label = call.value(.label) {
            guard VaultIdentity.isValidLabel(label) else {
                throw UsageError("--label takes 1 to \(VaultIdentity.labelLimit) bytes of text without control characters", command: call.command)
            }
            // Others see the label on their terminal: one that could pass for another's is not made.
            guard VaultIdentity.isPlainLabel(label) else {
                throw UsageError("--label takes printable ASCII (letters, digits, punctuation and single spaces, none at either end): "
                                 + "'\(ShareCommand.visible(label))' has more, which could make it look like someone else's", command: call.command)
            }
            if label != identity.label {
                _ = try vault.apply(.identity(label: label, relabel: true))
                identity = try vault.sharingIdentity(defaultLabel: defaultLabel)
            }
        }
        try printIdentity(identity, json: call.flag(.json))
    }

    /// Both recipients while both exist: the post-quantum one first, as senders should use it.
    private static func printIdentity(_ identity: SharingIdentity, json: Bool) throws {
        if json {
            try Output.json(IdentityReport(recipient: identity.recipient, pq_recipient: identity.pqRecipient, recipients: identity.recipients,
                                           signing_key: Sodium.base64(identity.signingPublicKey), fingerprint: identity.fingerprint, label: identity.label),
                            schema: .identity)
            return
        }
        let recipients = identity.pqRecipient.map { [["pq recipient", $0], ["recipient", identity.recipient]] } ?? [["recipient", identity.recipient]]
        try Console.out(EscapeNeutralizer.neutralize(Output.table(recipients + [["signing key", identity.fingerprint], ["label", identity.label]])))
    }

    // MARK: key share

    static func share(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        if call.flag(.list) { return try list(call, name: name) }
        if let revoked = call.value(.revokeRecipient) { return try revoke(call, name: name, recipient: revoked) }
        if call.flag(.noRotate) { throw UsageError("--no-rotate goes with --revoke", command: call.command) }
        guard !call.flag(.json) else { throw UsageError("--json goes with --list", command: call.command) }
        // Every recipient is read before anything else: a bad one changes nothing.
        let given = try recipients(call)
        if call.flag(.pqOnly) { try RecipientStrength.requirePostQuantum(given) }
        let mode = try fileMode(call)
        let vault = call.context.vault
        try vault.checkBeforePrompt()
        _ = try vault.sharingIdentity(defaultLabel: defaultLabel)
        guard try vault.key(name, markUsed: false) != nil else { throw VaultError.keyNotFound(name: name) }
        var record = try vault.sharingRecords()[name] ?? KeySharing()
        let earlier = try recorded(record)
        guard !given.isEmpty || !earlier.isEmpty else {
            throw UsageError("'\(name)' has not been shared yet, and no recipient was named", command: call.command,
                             fix: "name one: gemvault key share \(name) --to age1… (or -R FILE); 'gemvault identity' prints a vault's recipient")
        }
        let targets = try outputTargets(call, name: name, given: given, earlier: earlier)
        // Without recipients and -o, the share goes again to everyone recorded, in the files recorded.
        let toStandardOutput = targets.isEmpty && !given.isEmpty
        if toStandardOutput, !call.flag(.armor), Terminal.isTerminal(1) {
            throw UsageError("refusing to write a binary age file to the terminal", command: call.command,
                             fix: "write it to a file with -o FILE, pipe it, or give --armor for text")
        }
        if !call.flag(.overwrite), let taken = targets.first(where: { FileStatus.of(link: $0.path) != nil }) {
            throw CommandFailure(.failure, "\(taken.path) exists; nothing was written", hint: "--force replaces it")
        }
        let now = Output.now()
        for target in targets {
            for recipient in target.recipients { record.add(recipient, path: target.path, now: now) }
        }
        if toStandardOutput { for recipient in given { record.add(recipient, path: nil, now: now) } }
        guard record.recipients.count <= KeySharing.recipientLimit else {
            throw UsageError("a key can be shared with at most \(KeySharing.recipientLimit) recipients", command: call.command)
        }
        let strength = try checkStrength(call, try recorded(record, parsed: given + earlier), checkedAlready: given)
        var new = targets.map { NewShareFile(path: $0.path, recipients: $0.recipients.map(\.text), armor: call.flag(.armor), mode: mode, replacing: call.flag(.overwrite)) }
        if toStandardOutput { new.append(NewShareFile(path: nil, recipients: given.map(\.text), armor: call.flag(.armor), mode: mode, replacing: false)) }
        let (serial, written) = try vault.writeShares(name: name, record: record, new: new, strength: strength, ConsoleShareOutput())
        _ = try vault.apply(.recordSharing(name: name, record: record))
        let everyone = record.recipientCount == 1 ? "1 recipient" : "\(record.recipientCount) recipients"
        Console.note("shared '\(name)' (serial \(serial)) with \(everyone)" + (written.isEmpty ? "" : ": wrote " + written.joined(separator: ", ")))
        // One file for several people: each of them can open it, which they should know.
        for file in new where file.recipients.count > 1 {
            Console.note("\(file.path ?? "the share on stdout") is for all \(file.recipients.count) of them: each can open it"
                         + " (-o FOLDER/ or -o 'NAME-{label}.age' writes one file per recipient)")
        }
    }

    /// age's rule for everyone a share goes to: with --pq-only a classic native recipient is
    /// refused now (but for those `checkedAlready`); the rest (a plugin's labels, the
    /// mixed-recipient warning) once wrapped.
    static func checkStrength(_ call: Invocation, _ recipients: [NamedRecipient], checkedAlready: [NamedRecipient] = []) throws -> ShareStrength {
        if call.flag(.pqOnly) {
            let checked = Set(checkedAlready.map(\.text))
            try RecipientStrength.requirePostQuantum(recipients.filter { !checked.contains($0.text) })
        }
        return ShareStrength(postQuantumOnly: call.flag(.pqOnly), recipients: recipients)
    }

    /// The files `-o` names for this share; empty without `-o`. Without `--to`, for everyone recorded.
    static func outputTargets(_ call: Invocation, name: String, given: [NamedRecipient], earlier: [NamedRecipient]) throws -> [ShareFiles.Target] {
        guard let value = call.value(.output) else { return [] }
        let path = ProcessIdentity.absolutePath(ProcessIdentity.expandingTilde(value))
        let isFolder = value.hasSuffix("/") || FileStatus.of(path)?.kind == .directory
        return try ShareFiles.targets(path, isFolder: isFolder, name: name, recipients: given.isEmpty ? earlier : given)
    }

    /// Each recipient `record` names, once, with its label: taken from `parsed` by its text, else parsed.
    static func recorded(_ record: KeySharing, parsed: [NamedRecipient] = []) throws -> [NamedRecipient] {
        let known = Dictionary(parsed.map { ($0.text, $0.recipient) }, uniquingKeysWith: { first, _ in first })
        var seen = Set<String>()
        return try record.recipients.filter { seen.insert($0.recipient).inserted }.map { entry in
            NamedRecipient(recipient: try known[entry.recipient] ?? RecipientList.parse(entry.recipient, origin: "the recorded recipient").recipient, label: entry.label)
        }
    }

    /// `--to` values and `-R` files, parsed; the first bad one is a usage error naming it.
    static func recipients(_ call: Invocation) throws -> [NamedRecipient] {
        var all: [NamedRecipient] = []
        for value in call.values(.to) {
            if value.hasPrefix("age1") || value.hasPrefix("ssh-") {
                // Named with its value: among several --to, the bad one is the one to fix.
                all.append(try RecipientList.parse(value, origin: "--to \(value)"))
            } else {
                // A path: a .pub file with one key line, read like a recipients file.
                let text = try readText(value, what: "--to")
                let parsed = try RecipientList.parseFile(text, path: value)
                guard !parsed.isEmpty else { throw SharingError.badRecipient("\(value): holds no recipient") }
                all += parsed
            }
        }
        for path in call.values(.recipientsFile) {
            let parsed = try RecipientList.parseFile(try readText(path, what: "-R"), path: path)
            guard !parsed.isEmpty else { throw SharingError.badRecipient("\(path): holds no recipient") }
            all += parsed
        }
        var seen = Set<String>()
        return all.filter { seen.insert($0.text).inserted }
    }

    /// The longest recipients file read: a share's 256 recipients, post-quantum ones about 2,000
    /// characters each, with their comments (64 KiB held only about 33 of them).
    static let recipientsFileLimit = 1 << 20

    /// A recipients file's text. A private key named by mistake (the file beside the .pub) is
    /// wiped and refused before it becomes a String.
    private static func readText(_ path: String, what: String) throws -> String {
        var bytes: [UInt8]
        do throws(InputFile.Failure) {
            bytes = try InputFile.read(ProcessIdentity.expandingTilde(path), limit: recipientsFileLimit)
        } catch .notFound {
            throw SharingError.badRecipient("\(what) \(path): not an age1… recipient, an ssh-ed25519 key line, or a file")
        } catch {
            throw SharingError.badRecipient("\(what) \(path): \(error.reason)")
        }
        let secretMarkers = [Array("PRIVATE KEY".utf8), Array("AGE-SECRET-KEY-".utf8), Array("AGE-PLUGIN-".utf8)]
        if secretMarkers.contains(where: { marker in bytes.indices.contains { bytes[$0...].starts(with: marker) } }) {
            SecretBytes.wipe(&bytes)
            throw SharingError.badRecipient("\(what) \(path): holds a private key, not a recipient; give the public key (the .pub file, or 'gemvault identity')")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func fileMode(_ call: Invocation) throws -> mode_t {
        switch call.value(.mode) {
        case nil, "644", "0644": 0o644
        case "600", "0600": 0o600
        case let other?: throw UsageError("--mode takes 644 or 600, not '\(other)'", command: call.command)
        }
    }

    /// Revocation is rotation: the recipient is dropped, then the key is rotated at Google,
    /// which shares the new value with the others (`reshareAfterRotation`).
    static func revoke(_ call: Invocation, name: String, recipient value: String) throws {
        guard call.values(.to).isEmpty, call.values(.recipientsFile).isEmpty, call.value(.output) == nil else {
            throw UsageError("--revoke takes no --to, -R or -o: the others get the new key in their recorded files", command: call.command)
        }
        let vault = call.context.vault
        try vault.checkBeforePrompt()
        var record = try vault.sharingRecords()[name] ?? KeySharing()
        let target = try revokedRecipient(value, record: record)
        guard let index = record.recipients.firstIndex(where: { $0.recipient == target }) else {
            throw CommandFailure(.failure, "\(target) is not a recipient of '\(name)'", hint: "'gemvault key share \(name) --list' shows them")
        }
        let dropped = record.recipients[index]
        let droppedEntries = record.recipients.filter { $0.recipient == dropped.recipient }
        let shown = dropped.label.isEmpty ? dropped.recipient : "\(dropped.label) (\(dropped.recipient))"
        let keep = "use --no-rotate to drop the recipient alone (the key they hold keeps working)"
        let before = try vault.keySummaries().first { $0.name == name }
        if !call.flag(.noRotate) { try checkRotatable(call, name: name, summary: before, shown: shown, keep: keep) }
        let recorded = record
        record.recipients.removeAll { $0.recipient == dropped.recipient }
        _ = try vault.apply(.recordSharing(name: name, record: record))
        if call.flag(.noRotate) {
            VaultAccess.removeShareFiles(of: droppedEntries, keeping: record, ConsoleShareOutput())
            Console.warning("dropped \(shown) from the recipients of '\(name)', but the key they hold still works: only a new key takes it back ('gemvault key rotate --create \(name)')")
            return
        }
        Console.note("dropped \(shown) from the recipients of '\(name)'; rotating it at Google")
        var options = ["--create": ""]
        if call.flag(.allowInsecureEndpoint) { options["--allow-insecure-endpoint"] = "" }
        let rotate = Invocation(command: rotationCommands.first { $0.path == ["key", "rotate"] }!, positionals: [name],
                                options: ParsedOptions(byName: options), context: call.context)
        do {
            try GoogleRotation.create(rotate.rotationRequest(), name: name)
        } catch {
            // Nothing rotated: the recipient is put back, so the record says who holds the key.
            let after = try? vault.keySummaries().first { $0.name == name }
            if after?.updated == before?.updated, after?.masked == before?.masked {
                _ = try? vault.apply(.recordSharing(name: name, record: recorded))
                Console.warning("the rotation failed, so \(shown) was not revoked and stays a recipient of '\(name)'")
                // A key Google cannot find was not made there: refused like any key gemvault cannot rotate.
                if let google = error as? GoogleError, google.status == 404 {
                    throw CommandFailure(.failure, "Google has no key '\(name)' holds (\(google.message)), so gemvault cannot rotate it to take it back from \(shown); nothing changed",
                                         hint: "make a new key where it was made and run 'gemvault key rotate \(name)' with it (the others get it), or \(keep)")
                }
            } else {
                Console.warning("\(shown) no longer receives '\(name)', but the rotation did not finish: the old key may still work")
            }
            throw error
        }
        VaultAccess.removeShareFiles(of: droppedEntries, keeping: record, ConsoleShareOutput())
        Console.warning("\(shown) no longer receives '\(name)'; the key they hold may still work at Google for up to about 25 minutes (Google's delete lag)")
    }

    /// A revocation rotates the key: refused before anything changes for a key that is not a
    /// Google auth key, or without a Google credential.
    private static func checkRotatable(_ call: Invocation, name: String, summary: KeySummary?, shown: String, keep: String) throws {
        guard summary?.kind == .auth else {
            throw CommandFailure(.failure, "'\(name)' is not a Google auth key, so gemvault cannot rotate it at Google to take it back from \(shown); nothing changed",
                                 hint: "make a new key where it was made and run 'gemvault key rotate \(name)' with it (the others get it), or \(keep)")
        }
        let settings = try call.settings(vault: try call.context.vault.settings())
        let credentials = try GoogleRotation.credentials(call.rotationRequest(), settings)
        do throws(GoogleError) {
            _ = try credentials.source()
        } catch {
            throw CommandFailure(.failure, "\(shown) cannot be revoked without rotating '\(name)' at Google: \(error.message); nothing changed", hint: keep)
        }
    }

    /// `--revoke`'s value: a recipient as `--to` takes it, the label `--list` shows, or a .pub file.
    static func revokedRecipient(_ value: String, record: KeySharing) throws -> String {
        if value.hasPrefix("age1") || value.hasPrefix("ssh-") { return try RecipientList.parse(value, origin: "--revoke \(value)").text }
        let labelled = Set(record.recipients.filter { $0.label == value }.map(\.recipient))
        if labelled.count > 1 {
            throw UsageError("more than one recipient is labelled '\(value)': name the one to revoke by its recipient ('key share NAME --list' shows them)")
        }
        if let only = labelled.first { return only }
        guard let first = try RecipientList.parseFile(try readText(value, what: "--revoke"), path: value).first else {
            throw SharingError.badRecipient("\(value): holds no recipient")
        }
        return first.text
    }

    struct RecipientReport: Encodable {
        let recipient: String
        let label: String
        let added: String
        @Nullable var path: String?
    }

    struct ShareList: Encodable {
        let name: String
        let serial: UInt64
        let recipients: [RecipientReport]
    }

    static func list(_ call: Invocation, name: String) throws {
        guard call.values(.to).isEmpty, call.values(.recipientsFile).isEmpty, call.value(.output) == nil else {
            throw UsageError("--list shows the recipients; it takes no --to, -R or -o", command: call.command)
        }
        let vault = call.context.vault
        guard try vault.keySummaries().contains(where: { $0.name == name }) else { throw VaultError.keyNotFound(name: name) }
        let record = try vault.sharingRecords()[name] ?? KeySharing()
        if call.flag(.json) {
            try Output.json(ShareList(name: name, serial: record.sentSerial, recipients: record.recipients.map {
                RecipientReport(recipient: $0.recipient, label: $0.label, added: Output.isoDate($0.added), path: $0.path.isEmpty ? nil : $0.path)
            }), schema: .keyShareList)
            return
        }
        guard !record.recipients.isEmpty else {
            Console.note("'\(name)' has not been shared")
            return
        }
        let rows = record.recipients.map { [$0.recipient, $0.label.isEmpty ? "-" : $0.label, Output.localDate($0.added), $0.path.isEmpty ? "(stdout)" : $0.path] }
        try Console.out(EscapeNeutralizer.neutralize(Output.table([["RECIPIENT", "LABEL", "SHARED", "FILE"]] + rows)))
    }
}

extension KeySharing {
    /// Records a share to `recipient` written to `path` (nil: stdout). A new label replaces the
    /// old one; a new file is kept beside the ones before, which their readers may follow.
    mutating func add(_ recipient: NamedRecipient, path: String?, now: Int64) {
        for index in recipients.indices where recipients[index].recipient == recipient.text && !recipient.label.isEmpty {
            let old = recipients[index]
            recipients[index] = ShareRecipient(recipient: old.recipient, label: recipient.label, added: old.added, path: old.path)
        }
        let entries = recipients.indices.filter { recipients[$0].recipient == recipient.text }
        guard let path else {
            if entries.isEmpty { recipients.append(ShareRecipient(recipient: recipient.text, label: recipient.label, added: now, path: "")) }
            return
        }
        if entries.contains(where: { recipients[$0].path == path }) { return }
        if let toStandardOutput = entries.first(where: { recipients[$0].path.isEmpty }) {
            let old = recipients[toStandardOutput]
            recipients[toStandardOutput] = ShareRecipient(recipient: old.recipient, label: old.label, added: old.added, path: path)
        } else {
            recipients.append(ShareRecipient(recipient: recipient.text, label: recipient.label, added: now, path: path))
        }
    }
}

/// A share's files as every command writes them, and its notes on stderr.
struct ConsoleShareOutput: ShareFileOutput {
    func save(_ bytes: [UInt8], to path: String, mode: mode_t, replacing: Bool) throws { try Output.save(bytes, to: path, mode: mode, replacing: replacing) }
    func standardOutput(_ bytes: [UInt8]) throws { try Console.out(bytes) }
    func note(_ text: String) { Console.note(text) }
    func warning(_ text: String) { Console.warning(text) }
    func message(_ error: any Error) -> String { ErrorReport.describe(error).1 }
}
