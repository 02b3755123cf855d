import AgeFormat
import Sharing
import SystemIO
import VaultCore

/// What looking at a followed share file found.
public enum FollowOutcome {
    /// The file is as last read, or holds the share already imported.
    case unchanged
    /// Nothing is at the path now; the stored key stays.
    case missing(path: String)
    /// A newer share from the pinned sender, now stored.
    case imported(key: SecretBytes, serial: UInt64, sender: String)
    /// The file changed but fails a check; the stored key stays. The reason says which.
    case refused(String)
}

extension FollowedFile {
    /// The file as fstat saw it when it was read.
    public init(path: String, status: FileStatus) {
        self.init(path: path, device: status.device, inode: status.inode, size: UInt64(max(0, status.size)),
                  modified: Int64(status.modifiedExactly * 1_000_000_000))
    }

    /// Whether something at `path` differs from the file last read (device, inode, size or
    /// modification time): a cheap stat, done each time the key is resolved.
    public var hasChanged: Bool {
        guard let status = FileStatus.of(path) else { return false }
        return FollowedFile(path: path, status: status) != self
    }
}

extension VaultAccess {
    /// The most a followed share file may hold: a share is a few hundred bytes.
    static let followedFileLimit = 1 << 20

    /// Looks at `name`'s followed share file and, when it changed, imports it if it is a newer
    /// share signed by the pinned sender. The file is recorded as read either way, so a bad
    /// file is reported once, not at every use.
    public func syncFollowed(_ name: String) throws -> FollowOutcome {
        guard let record = try sharingRecords()[name], let follow = record.follow else { return .unchanged }
        guard FileStatus.of(follow.path) != nil else { return .missing(path: follow.path) }
        guard follow.hasChanged else { return .unchanged }
        let contents: InputFile.Contents
        do throws(InputFile.Failure) {
            contents = try InputFile.readWithStatus(follow.path, limit: Self.followedFileLimit)
        } catch {
            // What is there now is noted as seen, so it is reported once, not at every use.
            if let seen = FileStatus.of(link: follow.path) {
                var noted = record
                noted.follow = FollowedFile(path: follow.path, status: seen)
                _ = try apply(.recordSharing(name: name, record: noted))
            }
            return .refused("cannot read \(follow.path): \(error.reason)")
        }
        var updated = record
        updated.follow = FollowedFile(path: follow.path, status: contents.status)
        switch try checkedShare(contents.bytes, name: name, record: record) {
        case .success(let share) where share.serial == record.serial:
            _ = try apply(.recordSharing(name: name, record: updated))
            return .unchanged
        case .success(let share):
            updated.serial = share.serial
            // The sender's word for the key's Google name is shown, never kept: a rotation here
            // must not delete at Google whatever a share claims (it looks the key up instead).
            _ = try apply(.importKey(name: name, secret: share.key, now: Clock.now(), google: nil, record: updated))
            return .imported(key: share.key, serial: share.serial, sender: share.sender.label)
        case .failure(let refusal):
            _ = try apply(.recordSharing(name: name, record: updated))
            return .refused(refusal.reason + "; the stored key stays")
        }
    }

    struct Refusal: Error {
        let reason: String
    }

    /// The share in a followed file, when it is one this key may take: signed by the pinned
    /// sender, with a serial no lower than the one imported.
    private func checkedShare(_ bytes: [UInt8], name: String, record: KeySharing) throws -> Result<ShareDocument, Refusal> {
        guard case .signed(let pinned)? = record.origin else { return .failure(Refusal(reason: "the key was imported unsigned, so no share can be followed")) }
        let identity = try sharingIdentity(defaultLabel: "gemvault")
        let plaintext: SecretBytes
        do {
            plaintext = try AgeFile.decrypt(bytes, with: identity.ages)
        } catch {
            return .failure(Refusal(reason: "the file is not a share this vault can open (\(error))"))
        }
        guard case .share(let share)? = try? SharePlaintext.read(plaintext) else {
            return .failure(Refusal(reason: "the file holds no signed gemvault share"))
        }
        // Another share of the same sender (of another key, re-encrypted to this vault) must not
        // replace this one: the file follows one name.
        guard share.name == name else {
            return .failure(Refusal(reason: "the share is of '\(share.name)', not of '\(name)'"))
        }
        guard share.isSignatureValid, share.sender.signingKey == pinned.signingKey else {
            return .failure(Refusal(reason: "the share is not signed by the pinned sender \(SharingIdentity.fingerprint(of: pinned.signingKey)) (\(pinned.label))"))
        }
        // A recipient it was written for may have passed it on (to this vault, after a revocation).
        // A format 1 share does not say; from the pinned sender, of this name, it is taken.
        guard share.isWritten(forAnyOf: identity.recipients, pinnedSigner: pinned.signingKey) else {
            return .failure(Refusal(reason: "the share was signed for other recipients, not for this vault (someone it was written for passed it on)"))
        }
        guard share.serial >= record.serial else {
            return .failure(Refusal(reason: "the share has serial \(share.serial), older than serial \(record.serial) already imported (a replay)"))
        }
        return .success(share)
    }
}
