import Sharing
import VaultCore

/// The kinds of sharing identity a vault may be given after it was made: a classic one for a
/// vault with none (`identity --classic`), and the post-quantum part added to a classic one
/// (`identity --upgrade`).
extension VaultAccess {
    /// What `identity --upgrade` did: whether it added the post-quantum part now, and the keys
    /// whose shares named this vault's classic recipient, now shared again to the post-quantum one.
    public struct IdentityUpgrade: Sendable {
        public let upgraded: Bool
        public let reshared: [String]
        /// The keys this vault follows, by name, with their senders' labels: their shares are
        /// still written to the classic recipient until each sender is given the new one.
        public let followed: [(name: String, sender: String)]
        /// The identity as it is now (upgraded or not).
        public let identity: SharingIdentity
    }

    /// A classic (X25519 only) identity for a vault that has none (`made` false when it has one
    /// already, which is kept as it is), and the vault's identity after.
    public func makeClassicIdentity(label: String) throws -> (made: Bool, identity: SharingIdentity) {
        let made = try !apply(.identity(label: label, relabel: false, classic: true)).replaced
        return (made, try sharingIdentity(defaultLabel: label))
    }

    /// Adds the hybrid post-quantum part to a classic identity (a vault without one gets a hybrid
    /// identity, as on first use). Every share this vault recorded for its own classic recipient
    /// is then recorded for the post-quantum one and shared again, in its files, as a rotation
    /// shares a new value (`reshare`), so no file of this vault stays open to the classic key alone.
    public func upgradeIdentity(defaultLabel: String, _ output: any ShareFileOutput) throws -> IdentityUpgrade {
        let before = try sharingIdentity(defaultLabel: defaultLabel)
        guard before.pqRecipient == nil else { return IdentityUpgrade(upgraded: false, reshared: [], followed: [], identity: before) }
        _ = try apply(.upgradeIdentity)
        let after = try sharingIdentity(defaultLabel: defaultLabel)
        guard let postQuantum = after.pqRecipient else {
            throw VaultError.cryptoFailure("the post-quantum identity was not kept")
        }
        var reshared: [String] = []
        let records = try sharingRecords().sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) })
        for (name, record) in records where record.recipients.contains(where: { $0.recipient == before.recipient }) {
            var upgraded = record
            upgraded.recipients = record.recipients.map { entry in
                entry.recipient == before.recipient ? ShareRecipient(recipient: postQuantum, label: entry.label, added: entry.added, path: entry.path) : entry
            }
            _ = try apply(.recordSharing(name: name, record: upgraded))
            reshare(name: name, what: "'\(name)' for this vault's post-quantum recipient", output)
            reshared.append(name)
        }
        let followed = records.compactMap { name, record -> (name: String, sender: String)? in
            guard record.follow != nil, case .signed(let sender)? = record.origin else { return nil }
            return (name, sender.label)
        }
        return IdentityUpgrade(upgraded: true, reshared: reshared, followed: followed, identity: after)
    }
}
