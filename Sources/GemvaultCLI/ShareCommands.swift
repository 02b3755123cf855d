import AgeFormat
import Glibc
import GoogleAuth
import GoogleKeys
import Sharing
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

let shareCommands: [CommandSpec] = [
    CommandSpec(path: ["identity"], arguments: "", argumentRange: 0...0,
                summary: "print this vault's age recipient and signing-key fingerprint, for others to share keys with you",
                options: [.label, .json],
                details: """
                The identity is made with the vault (or on first use): an X25519 key, whose age1… recipient others encrypt shares to, and an Ed25519 key that signs the shares you send. Both secret keys stay in the vault; a session's agent uses them without handing them out.
                --label sets the name your shares carry (default user@host). Docs/sharing.md explains sharing.
                """,
                run: ShareCommand.identity),
    CommandSpec(path: ["key", "share"], arguments: "NAME", argumentRange: 1...1,
                summary: "encrypt a key to recipients as a signed age file, or list who it was shared with",
                options: [.to, .recipientsFile, .armor, .output, .overwrite, .mode, .list, .revokeRecipient, .noRotate, .allowInsecureEndpoint, .json],
                details: """
                RECIPIENT is an age1… recipient (see 'gemvault identity'), an ssh-ed25519 public key line, or a .pub file holding one; -R FILE is age's recipients file (one a line, # comments). A recipient that is none of these is refused (exit 64) before anything is written.
                The output is a standard age file (armored with --armor) that 'age -d' reads with the recipient's identity or ~/.ssh/id_ed25519; inside is the key as a JSON document signed by this vault. -o writes it atomically with mode 0644 (--mode 600 keeps it private), never over a link, and replaces an existing file only with --force.
                The vault records each recipient and file: a later share of the key includes everyone recorded and rewrites every recorded file with a higher serial. --list shows them.
                --revoke RECIPIENT drops a recipient and rotates the key at Google (as key rotate --create does; Docs/rotation.md), which shares the new key with the others: a recipient saw the key, so only a new key takes it back. Google may accept the old key for about 25 minutes more. Without a Google credential, or for a key not made at Google, it refuses (exit 1) unless --no-rotate, which only drops the recipient.
                """,
                run: ShareCommand.share),
    CommandSpec(path: ["key", "import"], arguments: "FILE [NAME]", argumentRange: 1...2,
                summary: "store a key shared with you (a gemvault share, or a plain age file holding a key)",
                options: [.identityFile, .yesStore, .noVerifyImport, .follow, .acceptNewSender, .allowInsecureEndpoint, .json],
                details: """
                The file is decrypted with this vault's identity, or with -i (an age identity file, or an ssh-ed25519 private key, whose passphrase is asked on the terminal if it has one). FILE may be - for stdin.
                Before storing, it shows the key's name, masked value, kind and Google key, and who signed it. On a terminal it asks; without one it needs --yes. The key is checked with Gemini (listing models) unless --no-verify.
                The first signed import of a name pins its sender's signing key: a later share of that name from another key, an unsigned one, or one with a lower serial (a replay) is refused (exit 4) unless --accept-new-sender.
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
    static var defaultLabel: String { CurrentUser.name + "@" + CurrentUser.host }
    /// The longest share or identity file read: a share is a few hundred bytes.
    static let fileLimit = 1 << 20

    // MARK: identity

    struct IdentityReport: Encodable {
        let recipient: String
        /// The Ed25519 public key, base64, as shares carry it in `from.signing_key`.
        let signing_key: String
        let fingerprint: String
        let label: String
    }

    static func identity(_ call: Invocation) throws {
        let vault = call.context.vault
        try vault.checkBeforePrompt()
        var identity = try vault.sharingIdentity(defaultLabel: defaultLabel)
        if let label = call.value(.label) {
            guard VaultIdentity.isValidLabel(label) else {
                throw UsageError("--label takes 1 to \(VaultIdentity.labelLimit) bytes of text without control characters", command: call.command)
            }
            if label != identity.label {
                _ = try vault.apply(.identity(label: label, relabel: true))
                identity = try vault.sharingIdentity(defaultLabel: defaultLabel)
            }
        }
        if call.flag(.json) {
            try Output.json(IdentityReport(recipient: identity.recipient, signing_key: Sodium.base64(identity.signingPublicKey),
                                           fingerprint: identity.fingerprint, label: identity.label), schema: .identity)
        } else {
            try Console.out(EscapeNeutralizer.neutralize(Output.table([["recipient", identity.recipient], ["signing key", identity.fingerprint],
                                                                       ["label", identity.label]])))
        }
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
        let mode = try fileMode(call)
        let output = call.value(.output).map { ProcessIdentity.absolutePath(ProcessIdentity.expandingTilde($0)) }
        // Without recipients, the share goes again to everyone recorded, in the files recorded.
        let toStandardOutput = output == nil && !given.isEmpty
        if toStandardOutput, !call.flag(.armor), Terminal.isTerminal(1) {
            throw UsageError("refusing to write a binary age file to the terminal", command: call.command)
        }
        if let output, !call.flag(.overwrite), FileStatus.of(link: output) != nil {
            throw CommandFailure(.failure, "\(output) exists; nothing was written", hint: "--force replaces it")
        }
        let vault = call.context.vault
        try vault.checkBeforePrompt()
        let identity = try vault.sharingIdentity(defaultLabel: defaultLabel)
        guard let key = try vault.key(name, markUsed: false) else { throw VaultError.keyNotFound(name: name) }
        let google = try vault.keySummaries().first { $0.name == name }?.google
        var record = try vault.sharingRecords()[name] ?? KeySharing()
        guard !given.isEmpty || !record.recipients.isEmpty else {
            throw UsageError("name at least one recipient with --to or -R ('\(name)' has not been shared yet)", command: call.command)
        }
        let now = Output.now()
        for recipient in given { record.add(recipient, path: output, now: now) }
        guard record.recipients.count <= KeySharing.recipientLimit else {
            throw UsageError("a key can be shared with at most \(KeySharing.recipientLimit) recipients", command: call.command)
        }
        guard record.sentSerial < ShareDocument.maxSerial else { throw CommandFailure(.failure, "'\(name)' has been shared \(record.sentSerial) times; no serial is left") }
        record.sentSerial += 1
        let written = try writeShares(name: name, key: key.secret, google: google, record: record, identity: identity, now: now,
                                      output: output.map { (path: $0, armor: call.flag(.armor), mode: mode, replacing: call.flag(.overwrite)) },
                                      toStandardOutput: toStandardOutput ? call.flag(.armor) : nil)
        _ = try vault.apply(.recordSharing(name: name, record: record))
        let everyone = record.recipientCount == 1 ? "1 recipient" : "\(record.recipientCount) recipients"
        Console.note("shared '\(name)' (serial \(record.sentSerial)) with \(everyone)" + (written.isEmpty ? "" : ": wrote " + written.joined(separator: ", ")))
    }

    /// Writes the share of `record.serial` to every recipient: to `output` (or stdout), and over
    /// every other file the record names. Returns the files written.
    static func writeShares(name: String, key: SecretBytes, google: GoogleKeyRecord?, record: KeySharing, identity: SharingIdentity, now: Int64,
                            output: (path: String, armor: Bool, mode: mode_t, replacing: Bool)?, toStandardOutput armor: Bool?) throws -> [String] {
        var seen: Set<String> = []
        let everyone = try record.recipients.filter { seen.insert($0.recipient).inserted }
            .map { try RecipientList.parse($0.recipient, origin: "the recorded recipient \($0.recipient)").recipient }
        let document = try ShareDocument.signed(name: name, key: key, googleKey: google, serial: record.sentSerial, created: now, identity: identity)
        let plaintext = document.encoded()
        var written: [String] = []
        if let armor {
            try Console.out(try AgeFile.encrypt(plaintext, to: everyone, armor: armor))
        }
        if let output {
            try Output.save(try AgeFile.encrypt(plaintext, to: everyone, armor: output.armor), to: output.path, mode: output.mode, replacing: output.replacing)
            written.append(output.path)
        }
        // Files written before are followed by their readers: they get the new serial, in the form they had.
        for path in Set(record.recipients.map(\.path)).subtracting(["", output?.path ?? ""]).sorted() {
            let existing = FileStatus.of(link: path)
            guard existing?.kind == .regular else {
                Console.warning("\(path), where '\(name)' was shared before, is not a regular file now; it was not rewritten")
                continue
            }
            let armored = (try? InputFile.read(path, limit: fileLimit)).map(AgeFile.isArmored) ?? false
            do {
                try Output.save(try AgeFile.encrypt(plaintext, to: everyone, armor: armored), to: path, mode: (existing!.permissions & 0o777) == 0o600 ? 0o600 : 0o644,
                         replacing: true)
                written.append(path)
            } catch let failure as CommandFailure {
                Console.warning(failure.message + "; the share there was not updated")
            }
        }
        return written
    }

    /// After a rotation stored a new value: the next share goes to every recorded recipient,
    /// in their files, before the old key is deleted at Google, so followers have the new key
    /// first. A failure is warned about, never the rotation's end.
    static func reshareAfterRotation(_ vault: VaultAccess, name: String) {
        do {
            guard var record = try vault.sharingRecords()[name], !record.recipients.isEmpty else { return }
            guard let key = try vault.key(name, markUsed: false) else { return }
            let identity = try vault.sharingIdentity(defaultLabel: defaultLabel)
            let google = try vault.keySummaries().first { $0.name == name }?.google
            guard record.sentSerial < ShareDocument.maxSerial else { throw CommandFailure(.failure, "no serial is left for '\(name)'") }
            record.sentSerial += 1
            let written = try writeShares(name: name, key: key.secret, google: google, record: record, identity: identity, now: Output.now(),
                                          output: nil, toStandardOutput: nil)
            _ = try vault.apply(.recordSharing(name: name, record: record))
            let files = written.isEmpty ? "no file recorded (shared to stdout): share it again by hand" : "wrote " + written.joined(separator: ", ")
            Console.note("shared the new value of '\(name)' (serial \(record.sentSerial)) with its \(record.recipientCount) recipient\(record.recipientCount == 1 ? "" : "s"): \(files)")
        } catch {
            let (_, message, _) = ErrorReport.describe(error)
            Console.warning("the new value of '\(name)' was not shared with its recipients (\(message)); 'gemvault key share \(name)' does it")
        }
    }

    /// `--to` values and `-R` files, parsed; the first bad one is a usage error naming it.
    static func recipients(_ call: Invocation) throws -> [NamedRecipient] {
        var all: [NamedRecipient] = []
        for value in call.values(.to) {
            if value.hasPrefix("age1") || value.hasPrefix("ssh-") {
                all.append(try RecipientList.parse(value, origin: "--to"))
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

    /// A recipients file's text. A private key named by mistake (the file beside the .pub) is
    /// wiped and refused before it becomes a String.
    private static func readText(_ path: String, what: String) throws -> String {
        var bytes: [UInt8]
        do throws(InputFile.Failure) {
            bytes = try InputFile.read(ProcessIdentity.expandingTilde(path), limit: 64 << 10)
        } catch .notFound {
            throw SharingError.badRecipient("\(what) \(path): not an age1… recipient, an ssh-ed25519 key line, or a file")
        } catch {
            throw SharingError.badRecipient("\(what) \(path): \(error.reason)")
        }
        let secretMarkers = [Array("PRIVATE KEY".utf8), Array("AGE-SECRET-KEY-".utf8)]
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
        let target = value.hasPrefix("age1") || value.hasPrefix("ssh-") ? try RecipientList.parse(value, origin: "--revoke")
            : try RecipientList.parseFile(try readText(value, what: "--revoke"), path: value).first ?? { throw SharingError.badRecipient("\(value): holds no recipient") }()
        let vault = call.context.vault
        try vault.checkBeforePrompt()
        var record = try vault.sharingRecords()[name] ?? KeySharing()
        guard let index = record.recipients.firstIndex(where: { $0.recipient == target.text }) else {
            throw CommandFailure(.failure, "\(target.text) is not a recipient of '\(name)'", hint: "'gemvault key share \(name) --list' shows them")
        }
        let dropped = record.recipients[index]
        let shown = dropped.label.isEmpty ? dropped.recipient : "\(dropped.label) (\(dropped.recipient))"
        let keep = "use --no-rotate to drop the recipient alone (the key they hold keeps working)"
        let before = try vault.keySummaries().first { $0.name == name }
        if !call.flag(.noRotate) {
            guard before?.kind == .auth else {
                throw CommandFailure(.failure, "'\(name)' is not a Google auth key, so gemvault cannot rotate it at Google to take it back from \(shown); nothing changed",
                                     hint: "make a new key where it was made and run 'gemvault key rotate \(name)' with it (the others get it), or \(keep)")
            }
            let settings = try GoogleRotation.settings(call, vault: try vault.settings())
            do throws(GoogleError) {
                _ = try GoogleRotation.credentials(call, settings).source()
            } catch {
                throw CommandFailure(.failure, "\(shown) cannot be revoked without rotating '\(name)' at Google: \(error.message); nothing changed", hint: keep)
            }
        }
        let recorded = record
        record.recipients.removeAll { $0.recipient == dropped.recipient }
        _ = try vault.apply(.recordSharing(name: name, record: record))
        if call.flag(.noRotate) {
            Console.warning("dropped \(shown) from the recipients of '\(name)', but the key they hold still works: only a new key takes it back ('gemvault key rotate --create \(name)')")
            return
        }
        Console.note("dropped \(shown) from the recipients of '\(name)'; rotating it at Google")
        var options = ["--create": ""]
        if call.flag(.allowInsecureEndpoint) { options["--allow-insecure-endpoint"] = "" }
        let rotate = Invocation(command: rotationCommands.first { $0.path == ["key", "rotate"] }!, positionals: [name],
                                options: ParsedOptions(byName: options), context: call.context)
        do {
            try GoogleRotation.create(rotate, name: name)
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
        Console.warning("\(shown) no longer receives '\(name)'; the key they hold may still work at Google for up to about 25 minutes (Google's delete lag)")
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
