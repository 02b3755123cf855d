import AgeFormat
import AgePlugins
import GoogleKeys
import Sharing
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

/// `key import` and `key sync`: taking keys others shared, checking who sent them.
extension ShareCommand {
    // MARK: key import

    struct ImportReport: Encodable {
        let name: String
        let masked: String
        let kind: GoogleKeyKind
        @Nullable var google_key: String?
        let signed: Bool
        @Nullable var sender: String?
        @Nullable var fingerprint: String?
        @Nullable var serial: UInt64?
        let verified: Bool
        @Nullable var followed: String?
    }

    static func importShare(_ call: Invocation) throws {
        let path = call.positionals[0]
        let explicitName = call.positionals.count > 1 ? call.positionals[1] : nil
        if let explicitName { try VaultContents.validateName(explicitName) }
        if call.flag(.follow), path == "-" || path.hasPrefix("/dev/") || path.hasPrefix("/proc/") {
            throw UsageError("--follow needs a file, not stdin or a descriptor", command: call.command)
        }
        if call.flag(.follow), call.flag(.acceptUnlisted) {
            throw UsageError("--follow takes only shares written for this vault: a followed file's next share is checked the same way", command: call.command)
        }
        let vault = call.context.vault
        let (document, key, status, mine) = try openShare(call, path: path)
        guard let name = explicitName ?? document?.name else {
            throw UsageError("this age file holds a key but no name", command: call.command, fix: "give one: gemvault key import \(path) NAME")
        }
        try vault.checkBeforePrompt()
        let records = try vault.sharingRecords()
        let existing = records[name]
        let origin: KeySharing.Origin = document.map { .signed($0.sender) } ?? .unsigned
        let checked = try checkBeforeAsking(call, document: document, origin: origin, name: name, existing: existing, records: records, mine: mine)
        let replacing = try vault.keySummaries().contains { $0.name == name }
        try show(document, key: key, name: name, explicitName: explicitName, replacing: replacing)
        // A key no sender is pinned for (the user's own, or one imported unsigned) is replaced only when asked for.
        try confirm(call, name: name, resetting: checked.resetting, lookAlike: checked.lookAlike, replacingUnpinned: replacing && ImportChecks.pinnedSender(existing) == nil)
        if !call.flag(.noVerifyImport) {
            try RotationCommand.verify(key, call, vaultSettings: try? vault.settings(), origin: "the imported key",
                                       replaceHint: "ask the sender for a working key; nothing was stored")
        }
        var record = existing ?? KeySharing()
        record.serial = document?.serial ?? record.serial
        if case .signed(let pinned)? = record.origin, case .signed(let sender) = origin, pinned.signingKey != sender.signingKey { record.serialReset = nil }
        record.origin = origin
        if checked.resetting { record.serialReset = Output.now() }
        if call.flag(.follow), let status {
            record.follow = FollowedFile(path: ProcessIdentity.absolutePath(ProcessIdentity.expandingTilde(path)), status: status)
        }
        // The share's Google key name is shown above, never kept: a later rotation here looks the
        // key up at Google instead of deleting whatever the sender named.
        _ = try vault.apply(.importKey(name: name, secret: key, now: Output.now(), google: nil, record: record))
        Console.note("stored '\(name)'" + (document == nil ? " (unsigned)" : " from \(document!.sender.label)") + (call.flag(.noVerifyImport) ? ", not checked with Gemini" : ""))
        try DefaultKeyOffer.afterStoring(name, call.context, assumeYes: call.flag(.yesStore))
        if call.flag(.json) {
            let fingerprint = document.map { SharingIdentity.fingerprint(of: $0.sender.signingKey) }
            try Output.json(ImportReport(name: name, masked: key.masked, kind: key.googleKeyKind, google_key: document?.googleKey?.resource, signed: document != nil,
                                         sender: document?.sender.label, fingerprint: fingerprint, serial: document?.serial,
                                         verified: !call.flag(.noVerifyImport), followed: record.follow?.path), schema: .keyImport)
        }
    }

    /// The share at `path` opened with this vault's identity (or the -i ones): its signed
    /// document (nil for a plain age file), the key, the file's status (nil for stdin), and the
    /// recipients of the identities it was opened with.
    private static func openShare(_ call: Invocation, path: String) throws -> (ShareDocument?, SecretBytes, FileStatus?, [String]) {
        let contents = try readShare(path)
        var identities = try call.values(.identityFile).flatMap(loadIdentities)
        if identities.isEmpty {
            try call.context.vault.checkBeforePrompt()
            identities = try call.context.vault.sharingIdentity(defaultLabel: defaultLabel).ages
        }
        switch try SharePlaintext.read(try AgeFile.decrypt(contents.bytes, with: identities)) {
        case .share(let share):
            guard share.isSignatureValid else {
                throw CommandFailure(.damaged, "the share's signature does not verify: it was changed after it was made, or it was not signed by the key it names; nothing was stored")
            }
            return (share, share.key, contents.status, AgePluginUnwrap.recipients(of: identities))
        case .bareKey(let bare):
            return (nil, bare, contents.status, [])
        }
    }

    /// What the importer is shown before anything is stored, on stderr.
    private static func show(_ document: ShareDocument?, key: SecretBytes, name: String, explicitName: String?, replacing: Bool) throws {
        var shown = ["name        \(name)" + (explicitName != nil && document != nil && document!.name != name ? " (shared as '\(document!.name)')" : ""),
                     "key         \(key.masked) (\(key.googleKeyKind.label))",
                     "google key  \(document?.googleKey?.resource ?? "-")"]
        if let document {
            shown.append("from        \(document.sender.label), signing key \(SharingIdentity.fingerprint(of: document.sender.signingKey)) (signed, serial \(document.serial))")
            if let recipients = document.recipients {
                shown.append("for         \(recipients.count == 1 ? recipients[0] : "\(recipients.count) recipients: " + recipients.joined(separator: ", "))")
            } else {
                shown.append("for         not said (a share of format 1)")
            }
        } else {
            shown.append("from        unsigned: a plain age file says nothing of who made it")
        }
        if replacing { shown.append("replaces    the key '\(name)' in this vault (its value goes to the key's history)") }
        // The sender's label and the names come from someone else's file: shown, never obeyed.
        Console.err(Output.fitted(EscapeNeutralizer.neutralize(shown.joined(separator: "\n")), indent: 12) + "\n")
    }

    /// What is refused before anything is shown or asked: another sender than the pinned one, a
    /// share not written for this vault, what --follow cannot take. Returns whether the import
    /// resets the serial, and the trusted sender a signed share's label passes for, if any.
    private static func checkBeforeAsking(_ call: Invocation, document: ShareDocument?, origin: KeySharing.Origin, name: String, existing: KeySharing?,
                                          records: [String: KeySharing], mine: [String]) throws -> (resetting: Bool, lookAlike: ShareSender?) {
        if let document {
            let pinned = document.name == name ? ImportChecks.pinnedSender(existing)?.signingKey : nil
            if let taken = try ImportChecks.checkRecipients(document, mine: mine, pinnedSigner: pinned, accept: call.flag(.acceptUnlisted), follow: call.flag(.follow)) {
                Console.warning(taken)
            }
        }
        let resetting = try ImportChecks.checkSender(origin, document: document, existing: existing, name: name, accept: call.flag(.acceptNewSender),
                                        resetSerial: call.flag(.resetSerial))
        // What --follow needs is known now: refused before anything is asked or checked.
        if call.flag(.follow) {
            guard let document else { throw UsageError("--follow needs a signed share: a plain age file's next version could not be checked", command: call.command,
                                                              fix: "import it without --follow, or ask the sender for a signed share (gemvault key share)") }
            guard document.name == name else {
                throw UsageError("--follow keeps the share's own name: import it as '\(document.name)', or without --follow", command: call.command)
            }
        }
        guard let document, ImportChecks.pinnedSender(existing) == nil else { return (resetting, nil) }
        if !VaultIdentity.isPlainLabel(document.sender.label) {
            Console.warning("the sender's label '\(visible(document.sender.label))' has characters a label made now may not have (beyond printable ASCII, or spaces at an end): "
                            + "such a label can be made to look like another's")
        }
        return (resetting, ImportChecks.lookAlikeSender(document.sender, records: records))
    }

    /// A label with everything beyond printable ASCII written as `\u{…}`, so what hides in it shows.
    static func visible(_ label: String) -> String {
        label.unicodeScalars.map { (0x20...0x7e).contains($0.value) ? String($0) : "\\u{\(String($0.value, radix: 16, uppercase: true))}" }.joined()
    }

    /// The question before storing: on a terminal it is asked (always, for a serial reset, a
    /// look-alike sender, or a key no sender is pinned for being replaced); without one, --yes
    /// answers it, but a look-alike needs --accept-new-sender and such a replacement --replace.
    private static func confirm(_ call: Invocation, name: String, resetting: Bool, lookAlike: ShareSender?, replacingUnpinned: Bool) throws {
        if let lookAlike {
            Console.warning("the label '\(visible(lookAlike.label))' belongs to another signing key you trust (\(SharingIdentity.fingerprint(of: lookAlike.signingKey))), "
                            + "or looks like it: this share may come from someone posing as them")
        }
        let unacceptedLookAlike = lookAlike != nil && !call.flag(.acceptNewSender)
        let unaskedReplace = replacingUnpinned && !call.flag(.replaceKey)
        let mustAsk = resetting || unacceptedLookAlike || unaskedReplace
        guard !call.flag(.yesStore) || mustAsk else { return }
        guard TerminalQuestion.available else {
            if unacceptedLookAlike {
                throw CommandFailure(.damaged, "the share comes from a signing key that is not the one its label belongs to; nothing was stored",
                                     hint: "if this sender is who they say, run the import again with --accept-new-sender")
            }
            if unaskedReplace {
                throw UsageError("'\(name)' is already in this vault and came from no pinned sender (a key of your own, or one imported unsigned); "
                                 + "key import replaces it only when asked on a terminal", command: call.command,
                                 fix: "pass --replace to replace it (its value goes to the key's history), or import the share under another NAME")
            }
            guard call.flag(.yesStore) else {
                throw UsageError("key import asks before it stores a key, and there is no terminal to ask on", command: call.command,
                                 fix: "pass --yes to store it without asking")
            }
            return
        }
        let question = resetting ? "Take this older serial and reset what '\(name)' accepts from its sender?"
            : unaskedReplace ? "Replace your key '\(name)' with this one?" : "Store it as '\(name)'?"
        guard TerminalQuestion.confirm(question) else { throw CommandFailure(.failure, "nothing was stored") }
    }

    /// What `key list` and `key which` say of a key's sharing: who it went to, who sent it.
    static func summary(_ record: KeySharing?) -> String? {
        guard let record else { return nil }
        var parts: [String] = []
        if !record.recipients.isEmpty { parts.append("shared with \(record.recipientCount) recipient\(record.recipientCount == 1 ? "" : "s")") }
        switch record.origin {
        case .signed(let sender)?:
            parts.append("from \(sender.label) (\(SharingIdentity.fingerprint(of: sender.signingKey))), serial \(record.serial)"
                         + (record.serialReset.map { ", reset on \(Output.localDate($0))" } ?? ""))
        case .unsigned?: parts.append("imported unsigned")
        case nil: break
        }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    // MARK: key sync

    static func sync(_ call: Invocation) throws {
        let vault = call.context.vault
        try vault.checkBeforePrompt()
        let records = try vault.sharingRecords()
        var names = records.filter { $0.value.follow != nil }.map(\.key).sorted()
        if let name = call.positionals.first {
            try VaultContents.validateName(name)
            guard records[name]?.follow != nil else {
                throw CommandFailure(.failure, "'\(name)' follows no share file", hint: "'gemvault key import FILE --follow' makes a key follow its share file")
            }
            names = [name]
        }
        guard !names.isEmpty else {
            Console.note("no key follows a share file")
            return
        }
        var refused = 0
        for name in names {
            let line: String
            switch try vault.syncFollowed(name) {
            case .unchanged: line = "\(name): unchanged (serial \(records[name]!.serial))"
            case .missing(let path): line = "\(name): \(path) is gone; the stored key stays"
            case .imported(_, let serial, let sender): line = "\(name): took serial \(serial) from \(sender)"
            case .refused(let reason):
                refused += 1
                line = "\(name): not taken: \(reason)"
            }
            try Console.out(EscapeNeutralizer.neutralize(line) + "\n")
        }
        if refused > 0 { throw CommandFailure(.damaged, "\(refused) followed share file\(refused == 1 ? "" : "s") failed a check (above)") }
    }

    /// The share's bytes, and the file's status (nil for standard input, read whatever it is:
    /// a pipe, a file, a terminal) with the same bound.
    static func readShare(_ path: String) throws -> (bytes: [UInt8], status: FileStatus?) {
        if path == "-" {
            do throws(FileDescriptor.ReadFailure) {
                return (try FileDescriptor.standardInput.readAll(limit: fileLimit), nil)
            } catch .tooLarge {
                throw CommandFailure(.failure, "cannot read the share from standard input: it has more than the \(fileLimit) bytes a share may have")
            } catch .failed(let error) {
                throw CommandFailure(.failure, "cannot read the share from standard input: \(error.reason)")
            }
        }
        do throws(InputFile.Failure) {
            let contents = try InputFile.readWithStatus(ProcessIdentity.expandingTilde(path), limit: fileLimit)
            return (contents.bytes, contents.status)
        } catch {
            throw CommandFailure(.failure, "cannot read the share \(path): \(error.reason)")
        }
    }

    /// The identities in an `-i` file: age's identity file (`AGE-SECRET-KEY-1…` and `AGE-SECRET-KEY-PQ-1…` lines, `#`
    /// comments), or an OpenSSH ed25519 private key (its passphrase asked on the terminal).
    static func loadIdentities(_ path: String) throws -> [any AgeIdentity] {
        let text: SecretBytes
        do throws(InputFile.Failure) {
            var bytes = try InputFile.read(ProcessIdentity.expandingTilde(path), limit: 64 << 10)
            text = SecretBytes(taking: &bytes)
        } catch {
            throw CommandFailure(.failure, "cannot read the identity \(path): \(error.reason)")
        }
        return try identities(in: text, path: path)
    }

    /// The identities in an identity file's text, read from `path` (IdentityFile parses them).
    static func identities(in text: SecretBytes, path: String) throws -> [any AgeIdentity] {
        try IdentityFile.identities(in: text, path: path) { attempt in try sshKeyPassphrase(path: path, attempt: attempt) }
    }

    /// A protected ssh key's passphrase, asked on the terminal (three tries, as ssh gives).
    static func sshKeyPassphrase(path: String, attempt: Int) throws -> SecretBytes {
        guard SecretInput.hasTerminal else {
            throw CommandFailure(.failure, "the ssh key \(path) is protected by a passphrase, and there is no terminal to ask it on; nothing was stored",
                                 hint: "run the command on a terminal, or give an age identity file with -i")
        }
        if attempt > 1 { Console.warning("wrong passphrase for the ssh key; try again") }
        return try SecretInput.read(from: .terminal, prompt: "Passphrase for the ssh key \(path): ")
    }
}
