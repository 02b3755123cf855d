/// A passphrase's key-encryption key with the salt and parameters it was derived for: one
/// Argon2 run, made before it is needed so that it is never made twice.
public struct PassphraseKey: SlotKey {
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

    /// The same, a passphrase that does not open the file being `.wrongPassphrase`.
    public static func unlocking(_ file: VaultFile, with passphrase: SecretBytes) throws(VaultError) -> PassphraseKey {
        guard let key = try derive(passphrase, opening: file) else { throw .wrongPassphrase }
        return key
    }

    /// Whether this key was derived for `file`'s passphrase slot as it is now.
    public func fits(_ file: VaultFile) -> Bool {
        guard let slot = file.passphraseSlot else { return false }
        return slot.salt == salt && slot.kdf == kdf
    }

    /// Opens the passphrase slot with the key-encryption key (whatever salt it was derived for:
    /// the agent holds the bare key).
    public func open(_ file: VaultFile, path: String) throws(VaultError) -> SlotOpening {
        guard let slot = file.passphraseSlot, let dataKey = slot.unwrap(kek: kek) else { throw .wrongPassphrase }
        var opening = SlotOpening(dataKey: dataKey)
        opening.passphraseKEK = kek
        return opening
    }
}

/// A recovery code's derived key with the slot it was derived for, so `recover` runs Argon2
/// once for the code whether it opens the file once or twice.
public struct RecoveryKey: SlotKey {
    let canonicalCode: SecretBytes
    let derived: SecretBytes
    let salt: [UInt8]
    let kdf: KDFParameters

    /// The key of a file's recovery slot, or nil when the code does not open it.
    public static func derive(_ code: SecretBytes, opening file: VaultFile) throws(VaultError) -> RecoveryKey? {
        guard let canonical = RecoveryCode.normalize(code), let slot = file.recoveryCodeSlot else { return nil }
        let derived = try slot.deriveKey(from: canonical)
        guard try slot.open(derived: derived) != nil else { return nil }
        return RecoveryKey(canonicalCode: canonical, derived: derived, salt: slot.parameters.salt, kdf: slot.parameters.kdf)
    }

    /// The same, a code that does not open the file being `.wrongRecoveryCode`.
    public static func unlocking(_ file: VaultFile, with code: SecretBytes) throws(VaultError) -> RecoveryKey {
        guard let key = try derive(code, opening: file) else { throw .wrongRecoveryCode }
        return key
    }

    /// Whether this key was derived for `file`'s recovery slot as it is now.
    public func fits(_ file: VaultFile) -> Bool {
        guard let slot = file.recoveryCodeSlot else { return false }
        return slot.parameters.salt == salt && slot.parameters.kdf == kdf
    }

    public func open(_ file: VaultFile, path: String) throws(VaultError) -> SlotOpening {
        guard fits(file), let slot = file.recoveryCodeSlot, let dataKey = try slot.open(derived: derived) else { throw .wrongRecoveryCode }
        var opening = SlotOpening(dataKey: dataKey)
        opening.recoveryCode = canonicalCode
        return opening
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
    /// The warnings of the last rekey about slots it dropped (`SlotResealing.dropped`).
    public private(set) var droppedSlots: [String] = []

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
            KeySlot(try PassphraseSlot.wrap(dataKey: dataKey, kek: kek, salt: salt, kdf: kdf)),
            KeySlot(try RecoverySlot.make(dataKey: dataKey, canonicalCode: canonicalCode, kdf: recoveryKDF)),
        ]
        let file = VaultFile(vaultID: Sodium.randomBytes(VaultFile.vaultIDBytes), generation: 0, slots: slots,
                             payloadNonce: [], payloadCiphertext: [])
        let document = VaultDocument(file: file, path: path, dataKey: dataKey, contents: VaultContents())
        document.passphraseKEK = kek
        return document
    }

    /// Opens a parsed file with a key for one of its slots: the one way to open a vault.
    public static func open(_ file: VaultFile, path: String, key: some SlotKey) throws(VaultError) -> VaultDocument {
        let opening = try key.open(file, path: path)
        let document = try decrypt(file, path: path, dataKey: opening.dataKey)
        document.passphraseKEK = opening.passphraseKEK
        document.recoveryCode = opening.recoveryCode
        return document
    }

    /// The key-encryption key of the passphrase slot, when opened with the passphrase or it.
    public var keyEncryptionKey: SecretBytes? { passphraseKEK }

    /// What a session agent keeps to open the file again after other writers' saves: the
    /// passphrase slot's key-encryption key, or (opened through an ssh slot) the data key.
    /// A data key that no longer decrypts the file (another writer's rekey) is a wrong key.
    public enum SessionKey: SlotKey {
        case keyEncryptionKey(SecretBytes)
        case dataKey(SecretBytes)

        public func open(_ file: VaultFile, path: String) throws(VaultError) -> SlotOpening {
            switch self {
            case .keyEncryptionKey(let kek): return try PassphraseKey(kek: kek, salt: [], kdf: KDFParameters(opsLimit: 0, memLimit: 0)).open(file, path: path)
            case .dataKey(let dataKey):
                guard (try? Sodium.xchachaOpen(file.payloadCiphertext[...], additionalData: file.authenticatedHeader,
                                               nonce: file.payloadNonce, key: dataKey)) != nil else { throw .wrongPassphrase }
                return SlotOpening(dataKey: dataKey)
            }
        }
    }

    public var sessionKey: SessionKey { passphraseKEK.map(SessionKey.keyEncryptionKey) ?? .dataKey(dataKey) }

    /// A keyed hash of the data key, to tell later whether a key-encryption key still opens the
    /// same data key (a rekey keeps the passphrase slot's key but not the data key).
    public func dataKeyCheck() throws(VaultError) -> SecretBytes {
        try mapSodium { () throws(SodiumError) in try Sodium.keyedHash(Array("gemvault data key check".utf8), key: dataKey) }
    }

    // MARK: Slots

    /// Adds a slot of an additional kind (an ssh-agent slot), made by `make` for the data key.
    /// A second slot for the same key, or one past the kind's limit, is refused.
    public func addSlot(_ make: (SecretBytes) throws -> any SlotKind) throws {
        let slot = KeySlot(try make(dataKey))
        guard case .additional(let most) = slot.placement else { throw VaultError.slotRefused("\(slot.kindNameWithArticle) slot is not added beside the others") }
        let name = slot.kindName
        let same = file.slots.filter { $0.kindByte == slot.kindByte }
        if same.contains(where: { $0.value.holder == slot.value.holder }) {
            throw VaultError.slotRefused("the vault already has \(slot.kindNameWithArticle) slot for \(slot.listing.fingerprint ?? "that key")")
        }
        guard same.count < most else { throw VaultError.slotRefused("the vault already has \(most) \(name) slots, the most it holds") }
        guard file.additionalSlots.count < KeySlot.maxAdditionalSlots else {
            throw VaultError.slotRefused("the vault already has \(KeySlot.maxAdditionalSlots) slots beside its passphrase and recovery slots, the most it holds")
        }
        file.slots.append(slot)
    }

    /// Removes the slot at `index` (as `file.slots` orders them). The passphrase slot is never
    /// removed; the recovery slot only when `allowRecovery` (the user said `--yes`).
    public func removeSlot(at index: Int, allowRecovery: Bool) throws(VaultError) {
        guard file.slots.indices.contains(index) else { throw .slotRefused("the vault has no slot \(index + 1) (see gemvault slot list)") }
        let placement = file.slots[index].placement
        if placement == .first {
            throw .slotRefused("the passphrase slot is never removed: it is the way in that always works (gemvault passwd changes it)")
        }
        if case .second = placement, !allowRecovery {
            throw .slotRefused("removing the recovery slot leaves no way in if the passphrase is forgotten; add --yes if that is what you want")
        }
        file.slots.remove(at: index)
    }

    /// Replaces the contents with ones a client edited (through the agent).
    public func replaceContents(_ new: VaultContents) { contents = new }

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

    public var recoverySlotNeedsItsCode: Bool { file.recoverySlot?.isKind(LegacyRecoverySlot.self) == true && recoveryCode == nil }

    /// The code of a format 1 recovery slot, checked against it, so that a rekey carries
    /// the code over instead of making a new one.
    public func keepRecoveryCode(_ key: RecoveryKey) throws(VaultError) {
        guard key.fits(file), let slot = file.recoveryCodeSlot, let opened = try slot.open(derived: key.derived),
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
        var slots = [KeySlot(try PassphraseSlot.wrap(dataKey: newKey, kek: kek, salt: salt, kdf: slotKDF))]
        var newCode: SecretBytes?
        let replacement = newRecoveryCode.flatMap(RecoveryCode.normalize)
        if let recovery = try rekeyedRecoverySlot(newKey, replacement: replacement, newCode: &newCode) { slots.append(recovery) }
        // Additional slots (ssh-agent) are sealed to their public keys: the new data key needs none of their secrets.
        var dropped: [String] = []
        for slot in file.additionalSlots {
            switch try slot.value.resealing(dataKey: newKey) {
            case .kept(let resealed): slots.append(KeySlot(resealed))
            case .dropped(let warning): dropped.append(warning)
            }
        }
        // Conversations written from now on must not open with the retired passphrase either.
        try contents.retireConversationKey()
        if let replacement {
            recoveryCode = replacement
            newRecoveryCode = nil
        }
        file.slots = slots
        droppedSlots = dropped
        dataKey = newKey
        passphraseKEK = kek
        return newCode
    }

    /// The recovery slot for `newKey`: a new one for a replacement code, the sealed one
    /// resealed, a format 1 one made anew (for its code when typed, else for a new code, set in
    /// `newCode`); nil when the vault has none (removed on purpose: recovery-code makes one).
    private func rekeyedRecoverySlot(_ newKey: SecretBytes, replacement: SecretBytes?, newCode: inout SecretBytes?) throws(VaultError) -> KeySlot? {
        if let replacement {
            return KeySlot(try RecoverySlot.make(dataKey: newKey, canonicalCode: replacement, kdf: KDFParameters.Preset.interactive.parameters))
        }
        guard let recovery = file.recoverySlot else { return nil }
        if let resealed = try recovery.resealed(dataKey: newKey) { return resealed }
        let recoveryKDF = file.recoveryCodeSlot?.kdf ?? KDFParameters.Preset.interactive.parameters
        let code: SecretBytes
        if let recoveryCode { code = recoveryCode } else {
            let fresh = RecoveryCode.generate()
            newCode = fresh
            code = RecoveryCode.normalize(fresh)!
        }
        return KeySlot(try RecoverySlot.make(dataKey: newKey, canonicalCode: code, kdf: recoveryKDF))
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
