/// An unlocked vault: its slots, the data key, and the decrypted contents.
///
/// The data key never changes for the life of a vault (until a rekey); `passwd` and
/// `recover` only rewrap it, and every save re-encrypts the payload with a fresh nonce.
public final class VaultDocument {
    public private(set) var file: VaultFile
    private let dataKey: SecretBytes
    public let contents: VaultContents

    private init(file: VaultFile, dataKey: SecretBytes, contents: VaultContents) {
        self.file = file
        self.dataKey = dataKey
        self.contents = contents
    }

    /// A new vault with a passphrase slot and a recovery slot. The recovery slot always uses
    /// the interactive preset: the code carries 160 bits of entropy, so cost adds nothing.
    public static func create(passphrase: SecretBytes, recoveryCode: SecretBytes, kdf: KDFParameters,
                              recoveryKDF: KDFParameters = KDFParameters.Preset.interactive.parameters) throws(VaultError) -> VaultDocument {
        guard let canonicalCode = RecoveryCode.normalize(recoveryCode) else { throw .wrongRecoveryCode }
        let dataKey = SecretBytes.random(count: Sodium.xchachaKeyBytes)
        let slots = [
            try KeySlot.seal(dataKey: dataKey, kind: .passphrase, secret: passphrase, kdf: kdf),
            try KeySlot.seal(dataKey: dataKey, kind: .recovery, secret: canonicalCode, kdf: recoveryKDF),
        ]
        let file = VaultFile(generation: 0, slots: slots, payloadNonce: [], payloadCiphertext: [])
        return VaultDocument(file: file, dataKey: dataKey, contents: VaultContents())
    }

    /// Opens a parsed file with the passphrase.
    public static func open(_ file: VaultFile, path: String, passphrase: SecretBytes) throws(VaultError) -> VaultDocument {
        for slot in file.slots where slot.kind == .passphrase {
            if let dataKey = try slot.unwrap(with: passphrase) {
                return try decrypt(file, path: path, dataKey: dataKey)
            }
        }
        throw .wrongPassphrase
    }

    /// Opens a parsed file with the recovery code.
    public static func open(_ file: VaultFile, path: String, recoveryCode: SecretBytes) throws(VaultError) -> VaultDocument {
        guard let canonical = RecoveryCode.normalize(recoveryCode) else { throw .wrongRecoveryCode }
        for slot in file.slots where slot.kind == .recovery {
            if let dataKey = try slot.unwrap(with: canonical) {
                return try decrypt(file, path: path, dataKey: dataKey)
            }
        }
        throw .wrongRecoveryCode
    }

    private static func decrypt(_ file: VaultFile, path: String, dataKey: SecretBytes) throws(VaultError) -> VaultDocument {
        // The checksum matched and a slot opened, so a failure here is deliberate tampering.
        guard let payload = try? Sodium.xchachaOpen(file.payloadCiphertext[...], additionalData: file.authenticatedHeader,
                                                     nonce: file.payloadNonce, key: dataKey) else {
            throw .tampered(path: path)
        }
        let contents = try VaultContents.decode(payload, path: path)
        return VaultDocument(file: file, dataKey: dataKey, contents: contents)
    }

    /// Rewraps the data key for a new passphrase, keeping the slot's KDF cost unless one is given.
    public func replacePassphrase(with passphrase: SecretBytes, kdf: KDFParameters? = nil) throws(VaultError) {
        guard let index = file.slots.firstIndex(where: { $0.kind == .passphrase }) else { throw .wrongPassphrase }
        file.slots[index] = try KeySlot.seal(dataKey: dataKey, kind: .passphrase, secret: passphrase,
                                             kdf: kdf ?? file.slots[index].kdf)
    }

    /// The file's bytes for the next save: generation plus one, a fresh nonce, the current contents.
    public func sealed() throws(VaultError) -> [UInt8] {
        let payload = try contents.encoded()
        file.generation += 1
        file.payloadNonce = Sodium.randomBytes(Sodium.xchachaNonceBytes)
        file.payloadCiphertext = [UInt8](repeating: 0, count: payload.count + Sodium.xchachaTagBytes)
        let header = file.authenticatedHeader
        let nonce = file.payloadNonce
        file.payloadCiphertext = try mapSodium { () throws(SodiumError) in
            try payload.withUnsafeBytes { raw throws(SodiumError) in
                try Sodium.xchachaSeal(raw, additionalData: header, nonce: nonce, key: dataKey)
            }
        }
        return file.encoded()
    }
}
