public import VaultCore

extension VaultContents {
    /// The most files one share writes: one per recipient, and one for all of them.
    public static let shareGroupLimit = KeySharing.recipientLimit + 1

    /// The next share of `name`, built from what this vault holds: the key's value and its Google
    /// key, the serial after the last one sent (recorded here, so the caller saves the contents),
    /// and one document per group of recipients, each naming its group and signed by this
    /// vault's identity. The one place a share is signed: the agent signs nothing a caller built.
    public func signNextShare(of name: String, for groups: [[String]], now: Int64) throws -> (serial: UInt64, documents: [ShareDocument]) {
        guard let stored = key(named: name) else { throw VaultError.keyNotFound(name: name) }
        let signer = try shareSigner(for: groups)
        let serial = (sharing[name]?.sentSerial ?? 0) + 1
        let documents = try groups.map { group throws(SharingError) in
            try ShareDocument.signed(name: name, key: stored.secret, googleKey: stored.google, serial: serial, created: now, recipients: group,
                                     signer: signer)
        }
        // Recorded once every document is signed: a failure leaves the contents as they were.
        guard try takeNextShareSerial(name) == serial else { throw VaultError.cryptoFailure("the share serial moved") }
        return (serial, documents)
    }

    /// The next share of the secret for other tools `name`, as `signNextShare` for a key: built
    /// from this vault's value, its serial recorded here, one signed document per group.
    public func signNextSecretShare(of name: String, for groups: [[String]], now: Int64) throws -> (serial: UInt64, documents: [SecretShareDocument]) {
        guard let stored = toolSecret(named: name) else { throw VaultError.secretNotFound(name: name) }
        let signer = try shareSigner(for: groups)
        let serial = stored.sharing.sentSerial + 1
        let documents = try groups.map { group throws(SharingError) in
            try SecretShareDocument.signed(name: name, secret: stored.value, serial: serial, created: now, recipients: group, signer: signer)
        }
        guard try takeNextSecretShareSerial(name) == serial else { throw VaultError.cryptoFailure("the share serial moved") }
        return (serial, documents)
    }

    /// This vault's signing key and label, once the recipient groups are checked: 1 to
    /// `shareGroupLimit` groups of 1 to `recipientLimit` canonical recipients each.
    private func shareSigner(for groups: [[String]]) throws -> ShareSigner {
        guard let identity else { throw SharingError.malformed("the vault has no sharing identity yet") }
        guard !groups.isEmpty, groups.count <= Self.shareGroupLimit,
              groups.allSatisfy({ (1...KeySharing.recipientLimit).contains($0.count) }),
              groups.joined().allSatisfy({ (try? RecipientList.parse($0, origin: "").text) == $0 }) else {
            throw SharingError.badRecipient("a share's recipients are missing or malformed")
        }
        return try ShareSigner(identity)
    }
}
