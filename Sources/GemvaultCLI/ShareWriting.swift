import AgeFormat
import Glibc
import Sharing
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

/// Writing a share's files: each to its own recipients, the recorded ones rewritten in the form
/// they had, all with one serial the vault (or its session's agent) signs.
extension ShareCommand {
    /// A file this command writes besides the recorded ones (nil path: stdout).
    struct NewFile {
        let path: String?
        let recipients: [String]
        let armor: Bool
        let mode: mode_t
        let replacing: Bool
    }

    /// Signs the next share of `name` and writes it to `new` and over every file `record` names
    /// (other than those), each encrypted to and naming its own recipients. Returns the serial
    /// and the files written.
    static func writeShares(_ vault: VaultAccess, name: String, record: KeySharing, new: [NewFile]) throws -> (serial: UInt64, written: [String]) {
        let newPaths = Set(new.compactMap(\.path))
        let recorded = record.files.filter { !newPaths.contains($0.path) }
        let signed = try vault.signNextShare(of: name, for: new.map(\.recipients) + recorded.map(\.recipients))
        var written: [String] = []
        for (file, plaintext) in zip(new, signed.documents) {
            let encrypted = try AgeFile.encrypt(plaintext, to: try parsed(file.recipients), armor: file.armor)
            guard let path = file.path else {
                try Console.out(encrypted)
                continue
            }
            try Output.save(encrypted, to: path, mode: file.mode, replacing: file.replacing)
            written.append(path)
        }
        // Files written before are followed by their readers: they get the new serial, in the form they had.
        for (file, plaintext) in zip(recorded, signed.documents.dropFirst(new.count)) {
            let existing = FileStatus.of(link: file.path)
            guard existing?.kind == .regular else {
                Console.warning("\(file.path), where '\(name)' was shared before, is not a regular file now; it was not rewritten")
                continue
            }
            let armored = (try? InputFile.read(file.path, limit: fileLimit)).map(AgeFile.isArmored) ?? false
            do {
                try Output.save(try AgeFile.encrypt(plaintext, to: try parsed(file.recipients), armor: armored), to: file.path,
                                mode: (existing!.permissions & 0o777) == 0o600 ? 0o600 : 0o644, replacing: true)
                written.append(file.path)
            } catch let failure as CommandFailure {
                Console.warning(failure.message + "; the share there was not updated")
            }
        }
        return (signed.serial, written)
    }

    private static func parsed(_ recipients: [String]) throws -> [any AgeRecipient] {
        try recipients.map { try RecipientList.parse($0, origin: "the recorded recipient \($0)").recipient }
    }

    /// After a rotation stored a new value: the next share goes to every recorded recipient,
    /// in their files, before the old key is deleted at Google, so followers have the new key
    /// first. A failure is warned about, never the rotation's end.
    static func reshareAfterRotation(_ vault: VaultAccess, name: String) {
        do {
            guard let record = try vault.sharingRecords()[name], !record.recipients.isEmpty else { return }
            guard !record.files.isEmpty else {
                Console.note("'\(name)' was shared to stdout only: share its new value again by hand ('gemvault key share \(name) --to …')")
                return
            }
            let (serial, written) = try writeShares(vault, name: name, record: record, new: [])
            let files = written.isEmpty ? "no file was written" : "wrote " + written.joined(separator: ", ")
            Console.note("shared the new value of '\(name)' (serial \(serial)) with its \(record.recipientCount) recipient\(record.recipientCount == 1 ? "" : "s"): \(files)")
        } catch {
            let (_, message, _) = ErrorReport.describe(error)
            Console.warning("the new value of '\(name)' was not shared with its recipients (\(message)); 'gemvault key share \(name)' does it")
        }
    }

    /// Removes the files only `dropped` recipients had, once they no longer receive the key: the
    /// file a follower reads is gone rather than left with the last key they may use.
    static func removeFiles(of dropped: [ShareRecipient], keeping record: KeySharing) {
        let kept = Set(record.recipients.map(\.path))
        for path in Set(dropped.map(\.path)).subtracting(kept).subtracting([""]).sorted() {
            guard let status = FileStatus.of(link: path), status.kind == .regular, status.owner == CurrentUser.id else {
                if FileStatus.of(link: path) != nil { Console.warning("\(path) is not a file of yours now; it was left alone") }
                continue
            }
            if unlink(path) == 0 {
                Console.note("removed \(path), the revoked recipient's share file")
            } else {
                Console.warning("could not remove \(path): \(String(cString: strerror(errno)))")
            }
        }
    }
}
