import Synchronization

/// One kind of key slot, as age's stanza types: the byte that starts it in the file, how its
/// bytes read and write, what `slot list` shows of it, and how it takes a new data key. What
/// opens it is a `SlotKey` of its own (age's identity). The kinds a vault may hold are the
/// ones in `SlotKinds`: the passphrase, recovery and ssh-agent kinds, and any registered.
public protocol SlotKind: Sendable {
    /// The slot's first byte in the file.
    static var kindByte: UInt8 { get }
    /// As `slot list` and errors name it ("ssh-agent"); `slot add NAME` adds one.
    static var name: String { get }
    /// The name with its article, as messages use it ("an ssh-agent").
    static var nameWithArticle: String { get }
    static var placement: SlotPlacement { get }
    /// Reads the rest of a slot, its kind byte read. A short read is reported by the caller.
    static func parse(_ reader: inout SlotReader, _ context: SlotContext) throws -> Self
    /// The slot's bytes after its kind byte.
    var body: [UInt8] { get }
    /// What tells this slot from others of its kind across rekeys (a salt, a challenge).
    var identity: [UInt8] { get }
    /// What a second slot of the kind may not repeat (an ssh slot's key fingerprint).
    var holder: [UInt8] { get }
    var listing: SlotListing { get }
    /// The same slot holding `dataKey`; nil for a slot that cannot take one without its
    /// secret (the passphrase and format 1 recovery slots, which the rekey makes anew).
    func resealed(dataKey: SecretBytes) throws(VaultError) -> Self?
    /// What a rekey does with the slot (one beside the passphrase and recovery slots): kept,
    /// resealed; or dropped, with a warning, when it cannot take the new data key here though
    /// nothing is wrong with it (an age plugin missing), so the passphrase and the recovery
    /// code keep working on their own. By default `resealed`, which must succeed.
    func resealing(dataKey: SecretBytes) throws(VaultError) -> SlotResealing
}

/// A slot after a rekey: resealed to the new data key, or dropped with the warning that says so.
public enum SlotResealing: Sendable {
    case kept(any SlotKind)
    case dropped(warning: String)
}

extension SlotKind {
    public static var nameWithArticle: String { "a " + name }

    public func resealing(dataKey: SecretBytes) throws(VaultError) -> SlotResealing {
        guard let resealed = try resealed(dataKey: dataKey) else { throw VaultError.slotRefused("the \(Self.name) slot cannot follow a new data key") }
        return .kept(resealed)
    }
}

/// Where a kind of slot may stand in a vault's list of slots.
public enum SlotPlacement: Sendable, Equatable {
    /// First, always: the passphrase slot.
    case first
    /// Second, one at most, in files of this format or later: a recovery slot.
    case second(sinceFormat: UInt16)
    /// After the first, in format 3: at most `most` of the kind, and
    /// `KeySlot.maxAdditionalSlots` of all such kinds. Every rekey keeps them (`resealed`).
    case additional(most: Int)
}

/// A slot's bytes being read: little-endian integers and byte strings, failing (not trapping)
/// past the end of the header.
public struct SlotReader {
    var bytes: ByteReader

    public mutating func read<T: FixedWidthInteger>(_ type: T.Type) throws -> T { try bytes.read(type) }
    public mutating func readBytes(_ count: Int) throws -> [UInt8] { try bytes.readBytes(count) }
}

/// Where a slot is being read, for its errors and its KDF bounds.
public struct SlotContext {
    public let index: Int
    public let path: String
    public let policy: KDFPolicy

    /// A damaged-slot error naming this slot.
    public func damaged(_ detail: String) -> VaultError { .slotsDamaged(path: path, detail: "key slot \(index + 1) \(detail)") }
}

/// What `slot list` and `inspect` show of a slot beside its kind.
public struct SlotListing: Sendable, Equatable {
    public var keyType: String?
    /// The key's fingerprint as its tools write it; `slot rm` takes it.
    public var fingerprint: String?
    /// When the slot was added (Unix seconds).
    public var added: Int64?
    public var kdf: KDFParameters?

    public init(keyType: String? = nil, fingerprint: String? = nil, added: Int64? = nil, kdf: KDFParameters? = nil) {
        self.keyType = keyType
        self.fingerprint = fingerprint
        self.added = added
        self.kdf = kdf
    }
}

/// One slot of a vault file, of any kind.
public struct KeySlot: Equatable, Sendable {
    public let value: any SlotKind

    public init(_ value: any SlotKind) { self.value = value }

    public var kindByte: UInt8 { type(of: value).kindByte }
    public var kindName: String { type(of: value).name }
    public var kindNameWithArticle: String { type(of: value).nameWithArticle }
    public var placement: SlotPlacement { type(of: value).placement }
    public var identity: [UInt8] { value.identity }
    public var listing: SlotListing { value.listing }
    public func isKind<T: SlotKind>(_: T.Type) -> Bool { value is T }
    public func `as`<T: SlotKind>(_: T.Type) -> T? { value as? T }
    var isAdditional: Bool { if case .additional = placement { true } else { false } }

    var encoded: [UInt8] { [kindByte] + value.body }

    func resealed(dataKey: SecretBytes) throws(VaultError) -> KeySlot? { try value.resealed(dataKey: dataKey).map(KeySlot.init) }

    public static func == (left: KeySlot, right: KeySlot) -> Bool { left.encoded == right.encoded }

    /// At most this many slots beside the passphrase and recovery slots (format 3).
    public static let maxAdditionalSlots = 8
    /// The most bytes one of them may take, its kind byte included, whatever its kind: the
    /// largest, an age slot, takes 12,301 (`AgeSlot.maximumBytes`). `VaultFile.maximumSize`
    /// follows from it, so a kind larger than this needs the bound raised.
    public static let maxAdditionalSlotBytes = 16 << 10
}

/// The slot kinds this gemvault reads and writes, by kind byte.
public enum SlotKinds {
    /// A list, not a `[UInt8: …]`: a handful of kinds, and a dictionary's first use makes the
    /// Swift runtime look its type up, which cost every unlock more than the search (Docs/performance.md).
    private struct Kinds: @unchecked Sendable { var list: [any SlotKind.Type] }
    private static let registered = Mutex(Kinds(list: builtIn))
    static let builtIn: [any SlotKind.Type] = [PassphraseSlot.self, LegacyRecoverySlot.self, RecoverySlot.self, SSHAgentSlot.self]

    /// Adds a kind (a test's, or one a build adds). A kind byte is one kind's only.
    public static func register(_ kind: any SlotKind.Type) {
        registered.withLock { kinds in
            if let known = kinds.list.first(where: { $0.kindByte == kind.kindByte }) {
                precondition(known == kind, "slot kind byte \(kind.kindByte) is \(known.name)'s already")
                return
            }
            kinds.list.append(kind)
        }
    }

    public static func kind(byte: UInt8) -> (any SlotKind.Type)? { registered.withLock { $0.list.first { $0.kindByte == byte } } }

    public static func kind(named name: String) -> (any SlotKind.Type)? { all.first { $0.name == name } }

    /// In kind byte order.
    public static var all: [any SlotKind.Type] { registered.withLock { $0.list.sorted { $0.kindByte < $1.kindByte } } }
}

/// What opens one kind of slot, derived from its secret: a passphrase's key, a recovery
/// code's key, an ssh-agent signature's key pair, a session's key (age's identity).
public protocol SlotKey {
    /// Opens the slot of `file` this key was derived for; throws the wrong-secret error when it
    /// opens nothing, `.tampered` when it should have.
    func open(_ file: VaultFile, path: String) throws(VaultError) -> SlotOpening
    /// Whether the slot is still the one this key was derived for (another writer's passwd
    /// makes a new salt): when not, the secret is derived again.
    func fits(_ file: VaultFile) -> Bool
}

extension SlotKey {
    public func fits(_ file: VaultFile) -> Bool { true }
}

/// A slot opened: the data key, and what lets a rekey carry the built-in slots over.
public struct SlotOpening {
    let dataKey: SecretBytes
    /// The passphrase slot's key-encryption key, when it opened that slot.
    var passphraseKEK: SecretBytes?
    /// The canonical recovery code, when it opened the recovery slot.
    var recoveryCode: SecretBytes?

    public init(dataKey: SecretBytes) { self.dataKey = dataKey }
}

/// The data key sealed (crypto_box_seal) to an X25519 public key: the recovery and ssh-agent
/// slots, and any kind whose secret derives a key pair. Any writer can seal a new data key to
/// the public key, so every rekey keeps such a slot without its secret.
public struct SealedDataKey: Equatable, Sendable {
    public static let bytes = Sodium.boxPublicKeyBytes + KeySlot.sealedKeyBytes
    public let publicKey: [UInt8]
    public let sealed: [UInt8]

    /// `dataKey` sealed to `publicKey`.
    public static func seal(_ dataKey: SecretBytes, to publicKey: [UInt8]) throws(VaultError) -> SealedDataKey {
        SealedDataKey(publicKey: publicKey, sealed: try mapSodium { () throws(SodiumError) in try Sodium.seal(dataKey, to: publicKey) })
    }

    /// The public key of the pair `seed` derives.
    public static func publicKey(seed: SecretBytes) throws(VaultError) -> [UInt8] {
        try mapSodium { () throws(SodiumError) in try Sodium.boxKeyPair(seed: seed).publicKey }
    }

    /// Public key, then sealed box.
    public static func parse(_ reader: inout SlotReader) throws -> SealedDataKey {
        SealedDataKey(publicKey: try reader.readBytes(Sodium.boxPublicKeyBytes), sealed: try reader.readBytes(KeySlot.sealedKeyBytes))
    }

    public var encoded: [UInt8] { publicKey + sealed }

    /// The same public key with `dataKey` sealed to it.
    public func resealed(_ dataKey: SecretBytes) throws(VaultError) -> SealedDataKey { try Self.seal(dataKey, to: publicKey) }

    /// The data key, when `seed` derives this public key's pair; nil for another seed. A box
    /// that the right pair cannot open was altered: `.tampered`.
    public func open(seed: SecretBytes, path: String) throws(VaultError) -> SecretBytes? {
        let pair = try mapSodium { () throws(SodiumError) in try Sodium.boxKeyPair(seed: seed) }
        return try open(publicKey: pair.publicKey, secretKey: pair.secretKey, path: path)
    }

    func open(publicKey: [UInt8], secretKey: SecretBytes, path: String) throws(VaultError) -> SecretBytes? {
        guard publicKey == self.publicKey else { return nil }
        guard let key = try? Sodium.openSealed(sealed, publicKey: publicKey, secretKey: secretKey) else { throw .tampered(path: path) }
        return key
    }

    /// The data key, or nil for another pair or a box that does not open (the recovery slot's rule).
    func openIfSealed(publicKey: [UInt8], secretKey: SecretBytes) -> SecretBytes? {
        guard publicKey == self.publicKey else { return nil }
        return try? Sodium.openSealed(sealed, publicKey: publicKey, secretKey: secretKey)
    }
}
