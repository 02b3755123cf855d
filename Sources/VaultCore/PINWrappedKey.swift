/// A session's key wrapped under a PIN, for the agent alone: the wrapping key is BLAKE2b of
/// Argon2id(PIN) together with 32 random bytes that exist only here, in the agent's locked
/// memory. Without those bytes no number of PIN guesses opens it, so a copy of the agent's
/// memory is needed to guess offline, and the agent counts the online guesses.
/// Nothing of it is ever written anywhere.
public final class PINWrappedKey {
    /// 4 to 64 characters (digits allowed).
    public static let lengths = 4...64
    static let context = Array("gemvault pin v1".utf8)

    private let salt: [UInt8]
    private let agentSecret: SecretBytes
    private let kdf: KDFParameters
    private let nonce: [UInt8]
    private let wrapped: [UInt8]

    /// Wraps `sessionKey` under `pin` with a fresh salt and secret (one interactive Argon2id run).
    public init(wrapping sessionKey: VaultDocument.SessionKey, pin: SecretBytes,
                kdf: KDFParameters = KDFParameters.Preset.interactive.parameters) throws(VaultError) {
        salt = Sodium.randomBytes(Sodium.pwhashSaltBytes)
        agentSecret = SecretBytes.random(count: 32)
        self.kdf = kdf
        nonce = Sodium.randomBytes(Sodium.xchachaNonceBytes)
        let key = try Self.wrappingKey(pin: pin, salt: salt, agentSecret: agentSecret, kdf: kdf)
        let (kind, bytes): (UInt8, SecretBytes) = switch sessionKey {
        case .keyEncryptionKey(let kek): (1, kek)
        case .dataKey(let dataKey): (2, dataKey)
        }
        let plain = SecretBytes(count: 1 + bytes.count)
        plain.withUnsafeMutableBytes { out in
            out[0] = kind
            bytes.withUnsafeBytes { (out.baseAddress! + 1).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
        let additionalData = Self.context
        let nonce = nonce
        wrapped = try mapSodium { () throws(SodiumError) in
            try plain.withUnsafeBytes { raw throws(SodiumError) in try Sodium.xchachaSeal(raw, additionalData: additionalData, nonce: nonce, key: key) }
        }
    }

    /// The session key, or nil for a wrong PIN (one interactive Argon2id run either way).
    public func open(pin: SecretBytes) throws(VaultError) -> VaultDocument.SessionKey? {
        let key = try Self.wrappingKey(pin: pin, salt: salt, agentSecret: agentSecret, kdf: kdf)
        guard let plain = try? Sodium.xchachaOpen(wrapped[...], additionalData: Self.context, nonce: nonce, key: key), plain.count == 33 else { return nil }
        let kind = plain.withUnsafeBytes { $0[0] }
        let bytes = SecretBytes(slicing: plain, range: 1..<33)
        return kind == 1 ? .keyEncryptionKey(bytes) : .dataKey(bytes)
    }

    private static func wrappingKey(pin: SecretBytes, salt: [UInt8], agentSecret: SecretBytes, kdf: KDFParameters) throws(VaultError) -> SecretBytes {
        let stretched = try KeySlot.derive(pin, salt: salt, kdf: kdf, purpose: .unlocking)
        let both = SecretBytes(count: 64)
        both.withUnsafeMutableBytes { out in
            stretched.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 32) }
            agentSecret.withUnsafeBytes { (out.baseAddress! + 32).copyMemory(from: $0.baseAddress!, byteCount: 32) }
        }
        return try mapSodium { () throws(SodiumError) in try Sodium.keyedHash(context, key: both) }
    }

    /// The wrap's public parts, for tests that compare two wraps.
    var fingerprintForTests: [UInt8] { salt + nonce + wrapped }

    /// Whether `pin` has an allowed length, counted in characters.
    public static func isAllowed(_ pin: SecretBytes) -> Bool {
        let characters = pin.withUnsafeBytes { $0.filter { $0 & 0xC0 != 0x80 }.count }
        return lengths.contains(characters)
    }
}
