/// A passphrase's key-encryption key with the salt and parameters it was derived for: one
/// Argon2 run, made before it is needed so that it is never made twice.
public struct PassphraseKey {
    public let kek: SecretBytes
    public let salt: [UInt8]
    public let kdf: KDFParameters

    /// A fresh salt, and the key derived for it.
    public static func derive(_ passphrase: SecretBytes, kdf: KDFParameters) throws(VaultError) -> PassphraseKey {
        let salt = Sodium.randomBytes(Sodium.pwhashSaltBytes)
        return PassphraseKey(kek: try KeySlot.derive(passphrase, salt: salt, kdf: kdf), salt: salt, kdf: kdf)
    }

    /// The key of a file's passphrase slot, or nil when the passphrase does not open it.
    public static func derive(_ passphrase: SecretBytes, opening file: VaultFile) throws(VaultError) -> PassphraseKey? {
        guard let slot = file.passphraseSlot else { return nil }
        let kek = try slot.deriveKey(from: passphrase)
        guard slot.unwrap(kek: kek) != nil else { return nil }
        return PassphraseKey(kek: kek, salt: slot.salt, kdf: slot.kdf)
    }

    /// Whether this key was derived for `file`'s passphrase slot as it is now.
    public func fits(_ file: VaultFile) -> Bool {
        guard let slot = file.passphraseSlot else { return false }
        return slot.salt == salt && slot.kdf == kdf
    }
}

/// A recovery code's derived key with the slot it was derived for, so `recover` runs Argon2
/// once for the code whether it opens the file once or twice.
public struct RecoveryKey {
    let canonicalCode: SecretBytes
    let derived: SecretBytes
    let salt: [UInt8]
    let kdf: KDFParameters

    /// The key of a file's recovery slot, or nil when the code does not open it.
    public static func derive(_ code: SecretBytes, opening file: VaultFile) throws(VaultError) -> RecoveryKey? {
        guard let canonical = RecoveryCode.normalize(code), let slot = file.recoverySlot else { return nil }
        let derived = try slot.deriveKey(from: canonical)
        guard try slot.openRecovery(derived: derived) != nil else { return nil }
        return RecoveryKey(canonicalCode: canonical, derived: derived, salt: slot.salt, kdf: slot.kdf)
    }

    /// Whether this key was derived for `file`'s recovery slot as it is now.
    public func fits(_ file: VaultFile) -> Bool {
        guard let slot = file.recoverySlot else { return false }
        return slot.salt == salt && slot.kdf == kdf
    }
}

/// An unlocked vault: its slots, the data key, and the decrypted contents.
///
/// Ordinary saves keep the data key and re-encrypt the payload with a fresh nonce.
/// `rekey` (passwd, recover, rekey) replaces the data key, so the old passphrase and every
/// old copy of the file open nothing written afterwards.
public final class VaultDocument {
    public private(set) var file: VaultFile
    public let path: String
    private var dataKey: SecretBytes
    public private(set) var contents: VaultContents
    /// The passphrase slot's key-encryption key, when it was opened with the passphrase:
    /// a rekey rewraps the new data key under it without another Argon2 run.
    private var passphraseKEK: SecretBytes?
    /// The canonical recovery code, when it was opened with it.
    private var recoveryCode: SecretBytes?

    private init(file: VaultFile, path: String, dataKey: SecretBytes, contents: VaultContents) {
        self.file = file
        self.path = path
        self.dataKey = dataKey
        self.contents = contents
    }

    /// A new vault with a passphrase slot and a recovery slot. The recovery slot always uses
    /// the interactive preset: the code carries 160 bits of entropy, so cost adds nothing.
    public static func create(path: String, passphrase: SecretBytes, recoveryCode: SecretBytes, kdf: KDFParameters,
                              recoveryKDF: KDFParameters = KDFParameters.Preset.interactive.parameters) throws(VaultError) -> VaultDocument {
        guard let canonicalCode = RecoveryCode.normalize(recoveryCode) else { throw .wrongRecoveryCode }
        let dataKey = SecretBytes.random(count: Sodium.xchachaKeyBytes)
        let salt = Sodium.randomBytes(Sodium.pwhashSaltBytes)
        let kek = try KeySlot.derive(passphrase, salt: salt, kdf: kdf)
        let slots = [
            try KeySlot.wrap(dataKey: dataKey, kind: .passphrase, kek: kek, salt: salt, kdf: kdf),
            try KeySlot.recovery(dataKey: dataKey, canonicalCode: canonicalCode, kdf: recoveryKDF),
        ]
        let file = VaultFile(vaultID: Sodium.randomBytes(VaultFile.vaultIDBytes), generation: 0, slots: slots,
                             payloadNonce: [], payloadCiphertext: [])
        let document = VaultDocument(file: file, path: path, dataKey: dataKey, contents: VaultContents())
        document.passphraseKEK = kek
        return document
    }

    /// Opens a parsed file with the passphrase; only the passphrase slot is tried.
    public static func open(_ file: VaultFile, path: String, passphrase: SecretBytes) throws(VaultError) -> VaultDocument {
        guard let slot = file.passphraseSlot else { throw .wrongPassphrase }
        let kek = try slot.deriveKey(from: passphrase)
        guard let dataKey = slot.unwrap(kek: kek) else { throw .wrongPassphrase }
        let document = try decrypt(file, path: path, dataKey: dataKey)
        document.passphraseKEK = kek
        return document
    }

    /// Opens a parsed file with the passphrase slot's key-encryption key (the agent's way:
    /// it never sees the passphrase, and never runs Argon2).
    public static func open(_ file: VaultFile, path: String, kek: SecretBytes) throws(VaultError) -> VaultDocument {
        guard let slot = file.passphraseSlot, let dataKey = slot.unwrap(kek: kek) else { throw .wrongPassphrase }
        let document = try decrypt(file, path: path, dataKey: dataKey)
        document.passphraseKEK = kek
        return document
    }

    /// The key-encryption key of the passphrase slot, when opened with the passphrase or it.
    public var keyEncryptionKey: SecretBytes? { passphraseKEK }

    /// Opens a parsed file through an ssh slot whose signature was checked (`SSHSlotOpener`).
    public static func open(_ file: VaultFile, path: String, ssh opener: SSHSlotOpener) throws(VaultError) -> VaultDocument {
        guard let dataKey = opener.dataKey(in: file) else {
            // The key pair is the slot's, so a box that does not open was altered.
            if file.sshSlots.contains(where: { $0.salt == opener.challenge && $0.nonceOrPublicKey == opener.publicKey }) { throw .tampered(path: path) }
            throw .wrongPassphrase
        }
        return try decrypt(file, path: path, dataKey: dataKey)
    }

    /// What a session agent keeps to open the file again after other writers' saves: the
    /// passphrase slot's key-encryption key, or (opened through an ssh slot) the data key.
    public enum SessionKey {
        case keyEncryptionKey(SecretBytes)
        case dataKey(SecretBytes)
    }

    public var sessionKey: SessionKey { passphraseKEK.map(SessionKey.keyEncryptionKey) ?? .dataKey(dataKey) }

    /// A keyed hash of the data key, to tell later whether a key-encryption key still opens the
    /// same data key (a rekey keeps the passphrase slot's key but not the data key).
    public func dataKeyCheck() throws(VaultError) -> SecretBytes {
        try mapSodium { () throws(SodiumError) in try Sodium.keyedHash(Array("gemvault data key check".utf8), key: dataKey) }
    }

    /// Opens a parsed file with a session's key. A data key that no longer decrypts the file
    /// (another writer's rekey) is reported as a wrong key.
    public static func open(_ file: VaultFile, path: String, sessionKey: SessionKey) throws(VaultError) -> VaultDocument {
        switch sessionKey {
        case .keyEncryptionKey(let kek): return try open(file, path: path, kek: kek)
        case .dataKey(let dataKey):
            guard (try? Sodium.xchachaOpen(file.payloadCiphertext[...], additionalData: file.authenticatedHeader,
                                           nonce: file.payloadNonce, key: dataKey)) != nil else { throw .wrongPassphrase }
            return try decrypt(file, path: path, dataKey: dataKey)
        }
    }

    // MARK: ssh-agent slots

    /// Adds an ssh slot for `key`, from the agent's signature of `KeySlot.sshMessage(challenge:)`.
    public func addSSHSlot(key: SSHSlotKey, challenge: [UInt8], signature: SecretBytes) throws(VaultError) {
        if file.sshSlots.contains(where: { $0.sshKey?.fingerprint == key.fingerprint }) {
            throw .slotRefused("the vault already has an ssh-agent slot for \(key.fingerprintText)")
        }
        guard file.sshSlots.count < KeySlot.maxSSHSlots else {
            throw .slotRefused("the vault already has \(KeySlot.maxSSHSlots) ssh-agent slots, the most it holds")
        }
        file.slots.append(try KeySlot.ssh(dataKey: dataKey, key: key, challenge: challenge, signature: signature))
    }

    /// Removes the slot at `index` (as `file.slots` orders them). The passphrase slot is never
    /// removed; the recovery slot only when `allowRecovery` (the user said `--yes`).
    public func removeSlot(at index: Int, allowRecovery: Bool) throws(VaultError) {
        guard file.slots.indices.contains(index) else { throw .slotRefused("the vault has no slot \(index + 1) (see gemvault slot list)") }
        let kind = file.slots[index].kind
        if kind == .passphrase {
            throw .slotRefused("the passphrase slot is never removed: it is the way in that always works (gemvault passwd changes it)")
        }
        if kind.isRecovery && !allowRecovery {
            throw .slotRefused("removing the recovery slot leaves no way in if the passphrase is forgotten; add --yes if that is what you want")
        }
        file.slots.remove(at: index)
    }

    /// Replaces the contents with ones a client edited (through the agent).
    public func replaceContents(_ new: VaultContents) { contents = new }

    /// Opens a parsed file with the recovery code; only the recovery slot is tried.
    public static func open(_ file: VaultFile, path: String, recoveryCode: SecretBytes) throws(VaultError) -> VaultDocument {
        guard let canonical = RecoveryCode.normalize(recoveryCode), let slot = file.recoverySlot,
              let dataKey = try slot.openRecovery(canonicalCode: canonical) else { throw .wrongRecoveryCode }
        let document = try decrypt(file, path: path, dataKey: dataKey)
        document.recoveryCode = canonical
        return document
    }

    /// Opens a parsed file with a recovery code's key derived before (see `RecoveryKey`).
    public static func open(_ file: VaultFile, path: String, recoveryKey: RecoveryKey) throws(VaultError) -> VaultDocument {
        guard recoveryKey.fits(file), let slot = file.recoverySlot,
              let dataKey = try slot.openRecovery(derived: recoveryKey.derived) else { throw .wrongRecoveryCode }
        let document = try decrypt(file, path: path, dataKey: dataKey)
        document.recoveryCode = recoveryKey.canonicalCode
        return document
    }

    /// Whether the vault's recovery slot is of format 1, which cannot follow a new data key
    /// unless its code is at hand (`keepRecoveryCode`).
    /// Set by `replaceRecoveryCode`: the next rekey makes a new recovery slot for a new code.
    private var newRecoveryCode: SecretBytes?

    /// The next `rekey` replaces the recovery code with a new one, so the old code opens
    /// nothing written afterwards. Returns the new code, as the user should write it down.
    public func replaceRecoveryCode() -> SecretBytes {
        let fresh = RecoveryCode.generate()
        newRecoveryCode = fresh
        return fresh
    }

    public var recoverySlotNeedsItsCode: Bool { file.recoverySlot?.kind == .legacyRecovery && recoveryCode == nil }

    /// The code of a format 1 recovery slot, checked against it, so that a rekey carries
    /// the code over instead of making a new one.
    public func keepRecoveryCode(_ key: RecoveryKey) throws(VaultError) {
        guard key.fits(file), let slot = file.recoverySlot, let opened = try slot.openRecovery(derived: key.derived),
              opened.isEqual(to: dataKey) else { throw .wrongRecoveryCode }
        recoveryCode = key.canonicalCode
    }

    private static func decrypt(_ file: VaultFile, path: String, dataKey: SecretBytes) throws(VaultError) -> VaultDocument {
        // The checksum matched and a slot opened, so a failure here is deliberate tampering.
        guard let payload = try? Sodium.xchachaOpen(file.payloadCiphertext[...], additionalData: file.authenticatedHeader,
                                                     nonce: file.payloadNonce, key: dataKey) else {
            throw .tampered(path: path)
        }
        let contents = try VaultContents.decode(payload, path: path)
        return VaultDocument(file: file, path: path, dataKey: dataKey, contents: contents)
    }

    /// Puts the vault under a new random data key. The passphrase slot is rewrapped (under a
    /// new passphrase when one is given); the recovery slot is resealed to its public key.
    /// A format 1 recovery slot cannot be resealed without its code: when the code is not at
    /// hand, a new one replaces it and is returned, to be shown to the user.
    public func rekey(newPassphrase: SecretBytes? = nil, kdf: KDFParameters? = nil) throws(VaultError) -> SecretBytes? {
        guard let passphraseSlot = file.passphraseSlot else { throw .wrongPassphrase }
        let derived = try newPassphrase.map { secret throws(VaultError) in try PassphraseKey.derive(secret, kdf: kdf ?? passphraseSlot.kdf) }
        return try rekey(newPassphraseKey: derived, kdf: kdf)
    }

    /// The same, with the new passphrase's key already derived (outside the vault's lock, so
    /// the Argon2 run holds up no other writer).
    public func rekey(newPassphraseKey: PassphraseKey?, kdf: KDFParameters? = nil) throws(VaultError) -> SecretBytes? {
        guard let passphraseSlot = file.passphraseSlot else { throw .wrongPassphrase }
        let newKey = SecretBytes.random(count: Sodium.xchachaKeyBytes)
        var slotKDF = kdf ?? passphraseSlot.kdf
        var salt = passphraseSlot.salt
        var kek: SecretBytes
        if let newPassphraseKey {
            salt = newPassphraseKey.salt
            slotKDF = newPassphraseKey.kdf
            kek = newPassphraseKey.kek
        } else if let passphraseKEK, slotKDF == passphraseSlot.kdf {
            kek = passphraseKEK
        } else {
            throw .wrongPassphrase
        }
        var slots = [try KeySlot.wrap(dataKey: newKey, kind: .passphrase, kek: kek, salt: salt, kdf: slotKDF)]
        var newCode: SecretBytes?
        let recoveryKDF = file.recoverySlot?.kdf ?? KDFParameters.Preset.interactive.parameters
        let replacement = newRecoveryCode.flatMap(RecoveryCode.normalize)
        switch file.recoverySlot?.kind {
        case _ where replacement != nil:
            slots.append(try KeySlot.recovery(dataKey: newKey, canonicalCode: replacement!, kdf: KDFParameters.Preset.interactive.parameters))
        case .recovery?:
            slots.append(try file.recoverySlot!.resealed(dataKey: newKey))
        case .legacyRecovery?:
            let code: SecretBytes
            if let recoveryCode { code = recoveryCode } else {
                let fresh = RecoveryCode.generate()
                newCode = fresh
                code = RecoveryCode.normalize(fresh)!
            }
            slots.append(try KeySlot.recovery(dataKey: newKey, canonicalCode: code, kdf: recoveryKDF))
        case .passphrase?, .sshAgent?, nil:
            // No recovery slot: it was removed on purpose (slot rm --yes); recovery-code makes one.
            break
        }
        // ssh slots are sealed to their public keys: the new data key needs no ssh-agent.
        for slot in file.sshSlots { slots.append(try slot.resealed(dataKey: newKey)) }
        // Conversations written from now on must not open with the retired passphrase either.
        try contents.retireConversationKey()
        if let replacement {
            recoveryCode = replacement
            newRecoveryCode = nil
        }
        file.slots = slots
        dataKey = newKey
        passphraseKEK = kek
        return newCode
    }

    /// The file's bytes for the next save: a generation above both the file's and
    /// `minimumGeneration`, a fresh nonce, the current contents. A format 1 vault is written
    /// as format 2 with a new vault id.
    public func sealed(minimumGeneration: UInt64 = 0) throws(VaultError) -> [UInt8] {
        if file.formatVersion != file.versionToWrite || file.vaultID == nil {
            file.formatVersion = file.versionToWrite
            if file.vaultID == nil { file.vaultID = Sodium.randomBytes(VaultFile.vaultIDBytes) }
        }
        let payload = try contents.encoded()
        // Refused here rather than written and then refused by every reader.
        guard payload.count + Sodium.xchachaTagBytes <= VaultFile.maxPayload else { throw .valueTooLarge("the vault (its contents may take 16 MiB)") }
        file.generation = max(file.generation, minimumGeneration) + 1
        file.payloadNonce = Sodium.randomBytes(Sodium.xchachaNonceBytes)
        file.payloadCiphertext = [UInt8](repeating: 0, count: payload.count + Sodium.xchachaTagBytes)
        let header = file.authenticatedHeader
        let nonce = file.payloadNonce
        let key = dataKey
        file.payloadCiphertext = try mapSodium { () throws(SodiumError) in
            try payload.withUnsafeBytes { raw throws(SodiumError) in
                try Sodium.xchachaSeal(raw, additionalData: header, nonce: nonce, key: key)
            }
        }
        return file.encoded()
    }
}
