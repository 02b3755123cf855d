import VaultCore

/// A slot kind for tests only, made through the public seam alone (`SlotKind`, `SlotKey`,
/// `SealedDataKey`), as a FIDO2 or age-plugin slot would be: a 32-byte token (what a hardware
/// key would hold) derives an X25519 key pair by HKDF-SHA-256 over the slot's random id, and
/// the data key is sealed to its public key, so every rekey keeps the slot without the token.
///
/// Layout (144 bytes): kind 0xF7, token fingerprint (SHA-256, 32), id (16), X25519 public key
/// (32), sealed data key (80). Registered with `TestTokenSlot.register()`.
public struct TestTokenSlot: SlotKind, Equatable {
    public static let kindByte: UInt8 = 0xF7
    public static let name = "test-token"
    public static let placement = SlotPlacement.additional(most: 2)
    static let idBytes = 16
    static let info = Array("gemvault test token slot".utf8)

    public let fingerprint: [UInt8]
    let id: [UInt8]
    let key: SealedDataKey

    /// Makes the kind known to this process's vault parser.
    public static func register() { SlotKinds.register(TestTokenSlot.self) }

    /// A new slot for `token` holding `dataKey`.
    public static func make(dataKey: SecretBytes, token: SecretBytes) throws(VaultError) -> TestTokenSlot {
        let id = SecretBytes.random(count: idBytes).withUnsafeBytes { Array($0) }
        let publicKey = try SealedDataKey.publicKey(seed: seed(token, id: id))
        return TestTokenSlot(fingerprint: fingerprint(token), id: id, key: try SealedDataKey.seal(dataKey, to: publicKey))
    }

    public static func fingerprint(_ token: SecretBytes) -> [UInt8] { Sodium.sha256(token.withUnsafeBytes { Array($0) }) }

    static func seed(_ token: SecretBytes, id: [UInt8]) -> SecretBytes { HKDFSHA256.derive(secret: token, salt: id, info: info, length: 32) }

    public var body: [UInt8] { fingerprint + id + key.encoded }
    public var identity: [UInt8] { id }
    public var holder: [UInt8] { fingerprint }
    public var listing: SlotListing {
        SlotListing(keyType: Self.name, fingerprint: "TOKEN:" + fingerprint.prefix(8).map { String($0, radix: 16) }.joined())
    }

    public func resealed(dataKey: SecretBytes) throws(VaultError) -> TestTokenSlot? {
        TestTokenSlot(fingerprint: fingerprint, id: id, key: try key.resealed(dataKey))
    }

    public static func parse(_ reader: inout SlotReader, _ context: SlotContext) throws -> TestTokenSlot {
        TestTokenSlot(fingerprint: try reader.readBytes(32), id: try reader.readBytes(idBytes), key: try SealedDataKey.parse(&reader))
    }
}

/// What opens a test token slot: the token itself (it holds no derived state worth keeping).
public struct TestTokenKey: SlotKey {
    let token: SecretBytes

    public init(token: SecretBytes) { self.token = token }

    /// Whether `file` has a slot for this token.
    public func hasSlot(in file: VaultFile) -> Bool {
        file.slots(TestTokenSlot.self).contains { $0.fingerprint == TestTokenSlot.fingerprint(token) }
    }

    public func open(_ file: VaultFile, path: String) throws(VaultError) -> SlotOpening {
        for slot in file.slots(TestTokenSlot.self) where slot.fingerprint == TestTokenSlot.fingerprint(token) {
            if let dataKey = try slot.key.open(seed: TestTokenSlot.seed(token, id: slot.id), path: path) { return SlotOpening(dataKey: dataKey) }
        }
        throw .wrongPassphrase
    }
}
