import AgeFormat
import Glibc
import Sharing
import SystemIO
import VaultCore

/// Where a share's files go and what is said about them, supplied by the command: the one
/// way it saves a file, standard output, its notes, and how it words an error.
public protocol ShareFileOutput {
    func save(_ bytes: [UInt8], to path: String, mode: mode_t, replacing: Bool) throws
    func standardOutput(_ bytes: [UInt8]) throws
    func note(_ text: String)
    func warning(_ text: String)
    /// The error as the command words it.
    func message(_ error: any Error) -> String
}

/// A file a share writes besides the recorded ones (nil path: standard output).
public struct NewShareFile: Sendable {
    public let path: String?
    public let recipients: [String]
    public let armor: Bool
    public let mode: mode_t
    public let replacing: Bool

    public init(path: String?, recipients: [String], armor: Bool, mode: mode_t, replacing: Bool) {
        self.path = path
        self.recipients = recipients
        self.armor = armor
        self.mode = mode
        self.replacing = replacing
    }
}

/// Writing a share's files: each to its own recipients, the recorded ones rewritten in the form
/// they had, all with one serial the vault (or its session's agent) signs.
extension VaultAccess {
    /// Signs the next share of `name` and writes it to `new` and over every file `record` names
    /// (other than those), each encrypted to and naming its own recipients. Every file is wrapped
    /// before any is written, so `strength` (age's post-quantum rule) judges a plugin recipient
    /// by the labels it gave: a refusal writes nothing. Returns the serial and the files written.
    public func writeShares(name: String, record: KeySharing, new: [NewShareFile], strength: ShareStrength? = nil,
                            _ output: any ShareFileOutput) throws -> (serial: UInt64, written: [String]) {
        let newPaths = Set(new.compactMap(\.path))
        let recorded = record.files.filter { !newPaths.contains($0.path) }
        let signed = try signNextShare(of: name, for: new.map(\.recipients) + recorded.map(\.recipients))
        let newFiles = try zip(new, signed.documents).map { file, plaintext in try Self.wrap(plaintext, to: file.recipients, armor: file.armor) }
        // Files written before are followed by their readers: they get the new serial, in the form they had.
        var followed: [(path: String, mode: mode_t, file: WrappedShare)] = []
        for (file, plaintext) in zip(recorded, signed.documents.dropFirst(new.count)) {
            guard let existing = FileStatus.of(link: file.path), existing.kind == .regular else {
                output.warning("\(file.path), where '\(name)' was shared before, is not a regular file now; it was not rewritten")
                continue
            }
            let armored = (try? InputFile.read(file.path, limit: Self.followedFileLimit)).map(AgeFile.isArmored) ?? false
            followed.append((file.path, (existing.permissions & 0o777) == 0o600 ? 0o600 : 0o644, try Self.wrap(plaintext, to: file.recipients, armor: armored)))
        }
        if let strength, let warning = try strength.check(wrapped: (newFiles + followed.map(\.file)).flatMap(\.recipients)) {
            output.warning(warning)
        }
        var written: [String] = []
        for (file, wrapped) in zip(new, newFiles) {
            guard let path = file.path else {
                try output.standardOutput(wrapped.bytes)
                continue
            }
            try output.save(wrapped.bytes, to: path, mode: file.mode, replacing: file.replacing)
            written.append(path)
        }
        for file in followed {
            do {
                try output.save(file.file.bytes, to: file.path, mode: file.mode, replacing: true)
                written.append(file.path)
            } catch {
                output.warning(output.message(error) + "; the share there was not updated")
            }
        }
        return (signed.serial, written)
    }

    /// One share file encrypted, with the recipients as wrapped (a plugin's labels known now).
    struct WrappedShare {
        let bytes: [UInt8]
        let recipients: [any AgeRecipient]
    }

    static func wrap(_ plaintext: SecretBytes, to recipients: [String], armor: Bool) throws -> WrappedShare {
        let parsed = try parsed(recipients)
        return WrappedShare(bytes: try AgeFile.encrypt(plaintext, to: parsed, armor: armor), recipients: parsed)
    }

    private static func parsed(_ recipients: [String]) throws -> [any AgeRecipient] {
        try recipients.map { try RecipientList.parse($0, origin: "the recorded recipient \($0)").recipient }
    }

    /// After a rotation stored a new value: the next share goes to every recorded recipient,
    /// in their files, before the old key is deleted at Google, so followers have the new key
    /// first. A failure is warned about, never the rotation's end.
    public func reshareAfterRotation(name: String, _ output: any ShareFileOutput) {
        reshare(name: name, what: "the new value of '\(name)'", output)
    }

    /// The next share of `name` to every recorded recipient, in their files (after a rotation, or
    /// `identity --upgrade` changed the recipients recorded); `what` is what the notes say was
    /// shared. A failure is warned about, never the caller's end.
    public func reshare(name: String, what: String, _ output: any ShareFileOutput) {
        do {
            guard let record = try sharingRecords()[name], !record.recipients.isEmpty else { return }
            guard !record.files.isEmpty else {
                output.note("'\(name)' was shared to stdout only: share \(what) again by hand ('gemvault key share \(name) --to …')")
                return
            }
            let (serial, written) = try writeShares(name: name, record: record, new: [], output)
            let files = written.isEmpty ? "no file was written" : "wrote " + written.joined(separator: ", ")
            output.note("shared \(what) (serial \(serial)) with its \(record.recipientCount) recipient\(record.recipientCount == 1 ? "" : "s"): \(files)")
        } catch {
            output.warning("\(what) was not shared with its recipients (\(output.message(error))); 'gemvault key share \(name)' does it")
        }
    }

    /// Removes the files only `dropped` recipients had, once they no longer receive the key: the
    /// file a follower reads is gone rather than left with the last key they may use.
    public static func removeShareFiles(of dropped: [ShareRecipient], keeping record: KeySharing, _ output: any ShareFileOutput) {
        let kept = Set(record.recipients.map(\.path))
        for path in Set(dropped.map(\.path)).subtracting(kept).subtracting([""]).sorted() {
            guard let status = FileStatus.of(link: path), status.kind == .regular, status.owner == CurrentUser.id else {
                if FileStatus.of(link: path) != nil { output.warning("\(path) is not a file of yours now; it was left alone") }
                continue
            }
            if unlink(path) == 0 {
                output.note("removed \(path), the revoked recipient's share file")
            } else {
                output.warning("could not remove \(path): \(String(cString: strerror(errno)))")
            }
        }
    }
}
