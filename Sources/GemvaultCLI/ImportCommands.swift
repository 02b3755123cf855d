import AgeFormat
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
        let vault = call.context.vault
        let contents = try readShare(path)
        let identities = try call.values(.identityFile).flatMap(loadIdentities)
        let plaintext: SecretBytes
        if identities.isEmpty {
            try vault.checkBeforePrompt()
            plaintext = try AgeFile.decrypt(contents.bytes, with: [try vault.sharingIdentity(defaultLabel: defaultLabel).age])
        } else {
            plaintext = try AgeFile.decrypt(contents.bytes, with: identities)
        }
        let shared = try SharePlaintext.read(plaintext)
        let document: ShareDocument?
        let key: SecretBytes
        switch shared {
        case .share(let share):
            guard share.isSignatureValid else {
                throw CommandFailure(.damaged, "the share's signature does not verify: it was changed after it was made, or it was not signed by the key it names; nothing was stored")
            }
            document = share
            key = share.key
        case .bareKey(let bare):
            document = nil
            key = bare
        }
        guard let name = explicitName ?? document?.name else {
            throw UsageError("this age file holds a key but no name: give one, as in 'gemvault key import \(path) NAME'", command: call.command)
        }
        try vault.checkBeforePrompt()
        let existing = try vault.sharingRecords()[name]
        let origin: KeySharing.Origin = document.map { .signed($0.sender) } ?? .unsigned
        try checkSender(origin, document: document, existing: existing, name: name, accept: call.flag(.acceptNewSender))
        // What --follow needs is known now: refused before anything is asked or checked.
        if call.flag(.follow) {
            guard let document else { throw UsageError("--follow needs a signed share: a plain age file's next version could not be checked", command: call.command) }
            guard document.name == name else {
                throw UsageError("--follow keeps the share's own name: import it as '\(document.name)', or without --follow", command: call.command)
            }
        }

        let fingerprint = document.map { SharingIdentity.fingerprint(of: $0.sender.signingKey) }
        var shown = ["name        \(name)" + (explicitName != nil && document != nil && document!.name != name ? " (shared as '\(document!.name)')" : ""),
                     "key         \(key.masked) (\(key.googleKeyKind.label))",
                     "google key  \(document?.googleKey?.resource ?? "-")"]
        if let document, let fingerprint {
            shown.append("from        \(document.sender.label), signing key \(fingerprint) (signed, serial \(document.serial))")
        } else {
            shown.append("from        unsigned: a plain age file says nothing of who made it")
        }
        let replacing = try vault.keySummaries().contains { $0.name == name }
        if replacing { shown.append("replaces    the key '\(name)' in this vault (its value goes to the key's history)") }
        // The sender's label and the names come from someone else's file: shown, never obeyed.
        Console.err(Output.fitted(EscapeNeutralizer.neutralize(shown.joined(separator: "\n")), indent: 12) + "\n")
        if !call.flag(.yesStore) {
            guard TerminalQuestion.available else {
                throw UsageError("key import asks before it stores a key; without a terminal to ask on, it needs --yes", command: call.command)
            }
            guard TerminalQuestion.confirm("Store it as '\(name)'?") else { throw CommandFailure(.failure, "nothing was stored") }
        }
        if !call.flag(.noVerifyImport) {
            try RotationCommand.verify(key, call, vaultSettings: try? vault.settings(), origin: "the imported key",
                                       replaceHint: "ask the sender for a working key; nothing was stored")
        }
        var record = existing ?? KeySharing()
        record.serial = document?.serial ?? record.serial
        record.origin = origin
        if call.flag(.follow) {
            record.follow = FollowedFile(path: ProcessIdentity.absolutePath(ProcessIdentity.expandingTilde(path)), status: contents.status)
        }
        // The share's Google key name is shown above, never kept: a later rotation here looks the
        // key up at Google instead of deleting whatever the sender named.
        _ = try vault.apply(.importKey(name: name, secret: key, now: Output.now(), google: nil, record: record))
        Console.note("stored '\(name)'" + (document == nil ? " (unsigned)" : " from \(document!.sender.label)") + (call.flag(.noVerifyImport) ? ", not checked with Gemini" : ""))
        if call.flag(.json) {
            try Output.json(ImportReport(name: name, masked: key.masked, kind: key.googleKeyKind, google_key: document?.googleKey?.resource, signed: document != nil,
                                         sender: document?.sender.label, fingerprint: fingerprint, serial: document?.serial,
                                         verified: !call.flag(.noVerifyImport), followed: record.follow?.path), schema: .keyImport)
        }
    }

    /// What `key list` and `key which` say of a key's sharing: who it went to, who sent it.
    static func summary(_ record: KeySharing?) -> String? {
        guard let record else { return nil }
        var parts: [String] = []
        if !record.recipients.isEmpty { parts.append("shared with \(record.recipientCount) recipient\(record.recipientCount == 1 ? "" : "s")") }
        switch record.origin {
        case .signed(let sender)?: parts.append("from \(sender.label) (\(SharingIdentity.fingerprint(of: sender.signingKey)))")
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

    /// The pinning rule: the first signed import of a name pins its sender; after that, another
    /// signer, an unsigned file, or a lower serial is refused unless the user accepts a new sender.
    static func checkSender(_ origin: KeySharing.Origin, document: ShareDocument?, existing: KeySharing?, name: String, accept: Bool) throws {
        guard case .signed(let pinned)? = existing?.origin else { return }
        let pinnedText = "\(SharingIdentity.fingerprint(of: pinned.signingKey)) (\(pinned.label))"
        let hint = "if the sender really changed their vault, run the import again with --accept-new-sender"
        switch origin {
        case .signed(let sender) where sender.signingKey == pinned.signingKey:
            if let document, let existing, document.serial < existing.serial {
                throw CommandFailure(.damaged, "this share of '\(name)' has serial \(document.serial), older than serial \(existing.serial) already imported: an old share was replayed; nothing was stored")
            }
        case .signed(let sender):
            guard accept else {
                throw CommandFailure(.damaged, "'\(name)' came from signing key \(pinnedText), but this share is signed by \(SharingIdentity.fingerprint(of: sender.signingKey)) (\(sender.label)); nothing was stored",
                                     hint: hint)
            }
        case .unsigned:
            guard accept else {
                throw CommandFailure(.damaged, "'\(name)' came signed by \(pinnedText), but this file is unsigned; nothing was stored", hint: hint)
            }
        }
    }

    private static func readShare(_ path: String) throws -> InputFile.Contents {
        do throws(InputFile.Failure) {
            return try InputFile.readWithStatus(path == "-" ? "/dev/stdin" : ProcessIdentity.expandingTilde(path), limit: fileLimit)
        } catch {
            throw CommandFailure(.failure, "cannot read the share \(path): \(error.reason)")
        }
    }

    /// The identities in an `-i` file: age's identity file (`AGE-SECRET-KEY-1…` lines, `#`
    /// comments), or an OpenSSH ed25519 private key (its passphrase asked on the terminal).
    static func loadIdentities(_ path: String) throws -> [any AgeIdentity] {
        let text: SecretBytes
        do throws(InputFile.Failure) {
            var bytes = try InputFile.read(ProcessIdentity.expandingTilde(path), limit: 64 << 10)
            text = SecretBytes(taking: &bytes)
        } catch {
            throw CommandFailure(.failure, "cannot read the identity \(path): \(error.reason)")
        }
        if SSHEd25519Identity.isOpenSSHPrivateKey(text) {
            do {
                return [try openSSHIdentity(text, path: path)]
            } catch let error as AgeError where error.kind == .header {
                // The key file is what is damaged, not the share.
                throw CommandFailure(.damaged, "the ssh key \(path) is damaged (\(error.detail)); nothing was stored")
            } catch let error as AgeError where error.kind == .unsupported {
                throw CommandFailure(.failure, "the ssh key \(path) cannot be used: \(error.detail); nothing was stored")
            }
        }
        var identities: [any AgeIdentity] = []
        var lineStart = 0
        try text.withUnsafeBytes { raw in
            for index in 0...raw.count where index == raw.count || raw[index] == 10 {
                let line = SecretBytes(copying: UnsafeRawBufferPointer(rebasing: raw[lineStart..<index])).trimmingWhitespace()
                lineStart = index + 1
                let isComment = line.withUnsafeBytes { $0.first == UInt8(ascii: "#") }
                if line.count == 0 || isComment { continue }
                guard let identity = X25519Identity(parsing: line) else {
                    throw UsageError("\(path) is neither an age identity file (AGE-SECRET-KEY-1… lines) nor an OpenSSH ed25519 private key")
                }
                identities.append(identity)
            }
        }
        guard !identities.isEmpty else { throw UsageError("\(path) holds no identity") }
        return identities
    }

    /// An ssh key as an identity; a protected one gets three tries at its passphrase, as ssh gives.
    private static func openSSHIdentity(_ text: SecretBytes, path: String) throws -> SSHEd25519Identity {
        guard try SSHEd25519Identity.needsPassphrase(text) else { return try SSHEd25519Identity(openSSHPrivateKey: text) }
        guard SecretInput.hasTerminal else {
            throw CommandFailure(.failure, "the ssh key \(path) is protected by a passphrase, and there is no terminal to ask it on; nothing was stored",
                                 hint: "run the command on a terminal, or give an age identity file with -i")
        }
        for attempt in 1...3 {
            let passphrase = try SecretInput.read(from: .terminal, prompt: "Passphrase for the ssh key \(path): ")
            let opened = Result { () throws(AgeError) in try SSHEd25519Identity(openSSHPrivateKey: text, passphrase: passphrase) }
            if case .failure(let error) = opened, error.kind == .wrongPassphrase {
                if attempt < 3 { Console.warning("wrong passphrase for the ssh key; try again") }
                continue
            }
            return try opened.get()
        }
        throw CommandFailure(.wrongSecret, "wrong passphrase for the ssh key \(path); nothing was stored")
    }
}
