import GoogleKeys

/// Where a key's value lives at Google: the API Keys resource that made it
/// (`projects/NUMBER/locations/global/keys/ID`) and the service account it is bound to (empty
/// for an unbound key). Recorded by `key rotate --create`, so a later rotation, `--undo` and
/// `key rm --revoke` find the key at Google without looking its string up.
public struct GoogleKeyRecord: Sendable, Equatable {
    public let resource: String
    public let serviceAccount: String

    public static let maxBytes = 512

    public init(resource: String, serviceAccount: String) {
        self.resource = resource
        self.serviceAccount = serviceAccount
    }

    /// The project part of the resource name (`projects/NUMBER`'s NUMBER).
    public var project: String? { GoogleKeyResource(resource)?.project }

    /// The key id, the last part of the resource name (the whole name when it is none).
    public var keyId: String { GoogleKeyResource(resource)?.keyId ?? resource }

    /// What a writer produces: printable ASCII without spaces, bounded, a resource of the API
    /// Keys shape.
    public var isWellFormed: Bool {
        let printable: (String) -> Bool = { $0.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f } && $0.utf8.count <= Self.maxBytes }
        return printable(resource) && (serviceAccount.isEmpty || printable(serviceAccount)) && GoogleKeyResource(resource) != nil
    }
}

/// A key's earlier value, kept so a rotation can be rolled back.
public struct RetiredSecret {
    public let secret: SecretBytes
    /// Unix seconds when it was replaced.
    public let retired: Int64
    /// Unix seconds when it became current: a rollback restores it, so the value's age shows.
    public let set: Int64
    /// Its key at Google, when gemvault knows it (payload version 5).
    public let google: GoogleKeyRecord?

    public init(secret: SecretBytes, retired: Int64, set: Int64, google: GoogleKeyRecord? = nil) {
        self.secret = secret
        self.retired = retired
        self.set = set
        self.google = google
    }
}

/// One named API key with its dates and earlier values.
public struct StoredKey {
    public let name: String
    public let secret: SecretBytes
    /// Unix seconds.
    public let created: Int64
    /// When the current value was set (stored, rotated or rolled back).
    public let updated: Int64
    /// When the agent last handed it out; 0 for never (recorded by the agent only).
    public let lastUsed: Int64
    /// Newest first, at most `VaultContents.retiredLimit`.
    public let previous: [RetiredSecret]
    /// The current value's key at Google, when gemvault knows it (payload version 5).
    public let google: GoogleKeyRecord?
    /// The share file this key follows (`key import --follow`), when one is recorded: handed
    /// out with the key so resolving it can notice a newer share without another question.
    public var followed: FollowedFile?
    /// The Secret Manager secret the value comes from (`key set --from`), handed out with the
    /// key for the same reason.
    public var link: SecretLink?

    public init(name: String, secret: SecretBytes, created: Int64, updated: Int64, lastUsed: Int64 = 0, previous: [RetiredSecret],
                google: GoogleKeyRecord? = nil) {
        self.name = name
        self.secret = secret
        self.created = created
        self.updated = updated
        self.lastUsed = lastUsed
        self.previous = previous
        self.google = google
    }
}

/// The decrypted payload: named keys, settings, and the keys of the conversation history.
///
/// The conversation key seeds the key pair conversations are sealed to. `passwd`, `recover`
/// and `rekey` replace it (`retireConversationKey`), so an old copy of the vault opens nothing
/// written afterwards; the earlier ones stay here, so every conversation stays readable.
public final class VaultContents {
    /// Version 11 adds the sharing identity's hybrid post-quantum seed, 10 a secret's Secret Manager link and sharing state, 9 the secrets for other tools (ToolSecrets.swift),
    /// 8 a linked key's rotation through Secret Manager, 7 the Secret Manager
    /// links, 6 the sharing identity and each key's sharing state, 5 each value's key at
    /// Google, 4 when each earlier value was set, 3 the earlier conversation keys, 2 each key's
    /// last use; 1 to 10 are still read.
    public static let payloadVersion: UInt8 = 11
    public static let retiredLimit = 5
    /// Each passphrase change adds one; far more than a vault's lifetime of changes.
    public static let earlierConversationKeyLimit = 1000
    static let paddingBlock = 512
    static let maxNameBytes = 128
    static let maxSecretBytes = 4096
    static let maxSettingBytes = 65536

    public private(set) var keys: [StoredKey]
    public private(set) var settings: [String: String]
    /// New conversations and turns are sealed to the key pair this seeds.
    public private(set) var conversationKey: SecretBytes
    /// The conversation keys retired by passphrase changes and rekeys, newest first: they
    /// still open what was written before.
    public private(set) var earlierConversationKeys: [SecretBytes]
    /// The vault's sharing identity; nil until `init` or the first sharing command makes it.
    public private(set) var identity: VaultIdentity?
    /// Each key's sharing state, by key name (only keys that were shared or imported).
    public private(set) var sharing: [String: KeySharing]
    /// The keys whose value lives in Secret Manager, by key name.
    public internal(set) var links: [String: SecretLink]
    /// The secrets for other tools, in byte order of their names.
    public internal(set) var toolSecrets: [ToolSecret] = []

    public init(keys: [StoredKey] = [], settings: [String: String] = [:], conversationKey: SecretBytes = .random(count: 32),
                earlierConversationKeys: [SecretBytes] = [], identity: VaultIdentity? = nil, sharing: [String: KeySharing] = [:],
                links: [String: SecretLink] = [:]) {
        self.keys = keys.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
        self.settings = settings
        self.conversationKey = conversationKey
        self.earlierConversationKeys = earlierConversationKeys
        self.identity = identity
        self.sharing = sharing
        self.links = links
    }

    /// Sets (or replaces the label of) the sharing identity.
    public func setIdentity(_ identity: VaultIdentity) throws(VaultError) {
        guard VaultIdentity.isValidLabel(identity.label) else { throw .valueTooLarge("the identity's label (1 to \(VaultIdentity.labelLimit) bytes, no control characters)") }
        self.identity = identity
    }

    /// Records a key's sharing state; an empty one removes the record. The sent serial stays as
    /// stored: only `takeNextShareSerial` moves it, so no change can set a serial that would
    /// lock followers out of the real shares after it.
    public func setSharing(_ name: String, _ record: KeySharing) throws(VaultError) {
        guard key(named: name) != nil else { throw .keyNotFound(name: name) }
        guard record.recipients.count <= KeySharing.recipientLimit else { throw .valueTooLarge("the recipients of \(name) (\(KeySharing.recipientLimit) at most)") }
        var kept = record
        kept.sentSerial = sharing[name]?.sentSerial ?? 0
        sharing[name] = kept.isEmpty ? nil : kept
    }

    /// The serial of the next share of `name` sent from this vault, recorded as sent.
    public func takeNextShareSerial(_ name: String) throws(VaultError) -> UInt64 {
        guard key(named: name) != nil else { throw .keyNotFound(name: name) }
        var record = sharing[name] ?? KeySharing()
        guard record.sentSerial + 1 < KeySharing.serialLimit else { throw .valueTooLarge("the share serial of \(name) (no serial is left)") }
        record.sentSerial += 1
        sharing[name] = record
        return record.sentSerial
    }

    /// The current conversation key, then the earlier ones.
    public var conversationKeys: [SecretBytes] { [conversationKey] + earlierConversationKeys }

    /// A new conversation key; the current one joins the earlier ones. Nothing sealed from now
    /// on opens with a copy of the vault made before.
    public func retireConversationKey() throws(VaultError) {
        guard earlierConversationKeys.count < Self.earlierConversationKeyLimit else {
            throw .valueTooLarge("the conversation keys (at most \(Self.earlierConversationKeyLimit) passphrase changes)")
        }
        earlierConversationKeys.insert(conversationKey, at: 0)
        conversationKey = .random(count: 32)
    }

    /// The key, with its Secret Manager link when it has one.
    public func key(named name: String) -> StoredKey? {
        guard var found = keys.first(where: { $0.name == name }) else { return nil }
        found.link = links[name]
        return found
    }

    /// What may be shown of every key, links included.
    public var summaries: [KeySummary] { keys.map { key in var linked = key; linked.link = links[key.name]; return linked.summary } }

    /// Stores or replaces a key; a replaced value moves to the key's history. `google` is the new
    /// value's key at Google; `replacedGoogle`, when given, is recorded for the replaced value
    /// (a first rotation that found it with a lookup).
    public func setKey(_ name: String, secret: SecretBytes, now: Int64, google: GoogleKeyRecord? = nil,
                       replacedGoogle: GoogleKeyRecord? = nil) throws(VaultError) {
        try Self.validateName(name)
        guard secret.count > 0, secret.count <= Self.maxSecretBytes else { throw .valueTooLarge("key \(name)") }
        for record in [google, replacedGoogle].compactMap({ $0 }) where !record.isWellFormed {
            throw .valueTooLarge("the Google key name of \(name)")
        }
        if let index = keys.firstIndex(where: { $0.name == name }) {
            let old = keys[index]
            let retired = RetiredSecret(secret: old.secret, retired: now, set: old.updated, google: replacedGoogle ?? old.google)
            let history = Array(([retired] + old.previous).prefix(Self.retiredLimit))
            keys[index] = StoredKey(name: name, secret: secret, created: old.created, updated: now, lastUsed: old.lastUsed, previous: history,
                                    google: google)
        } else {
            guard keys.count < Int(UInt16.max) else { throw .valueTooLarge("the vault (65535 keys at most)") }
            // Inserted in place: the keys are already in byte order.
            var low = 0, high = keys.count
            while low < high {
                let middle = (low + high) / 2
                if keys[middle].name.utf8.lexicographicallyPrecedes(name.utf8) { low = middle + 1 } else { high = middle }
            }
            let position = low
            keys.insert(StoredKey(name: name, secret: secret, created: now, updated: now, previous: [], google: google), at: position)
        }
    }

    /// Makes the previous value current again; the value it replaces goes into the history.
    /// The restored value keeps the date it was first set, so an old key still looks old to
    /// the rotation reminder and `key list`. Returns the value now current.
    @discardableResult
    public func rollBack(_ name: String, now: Int64) throws(VaultError) -> StoredKey {
        guard let index = keys.firstIndex(where: { $0.name == name }) else { throw .keyNotFound(name: name) }
        let old = keys[index]
        guard let restored = old.previous.first else { throw .noEarlierValue(name: name) }
        let history = Array(([RetiredSecret(secret: old.secret, retired: now, set: old.updated, google: old.google)] + old.previous.dropFirst())
            .prefix(Self.retiredLimit))
        keys[index] = StoredKey(name: name, secret: restored.secret, created: old.created, updated: max(old.created, restored.set),
                                lastUsed: old.lastUsed, previous: history, google: restored.google)
        return keys[index]
    }

    /// Notes when keys were last handed out (the agent's record).
    public func recordUse(_ uses: [String: Int64]) {
        for (name, time) in uses {
            guard let index = keys.firstIndex(where: { $0.name == name }), time > keys[index].lastUsed else { continue }
            let key = keys[index]
            keys[index] = StoredKey(name: name, secret: key.secret, created: key.created, updated: key.updated, lastUsed: time, previous: key.previous,
                                    google: key.google)
        }
    }

    public func removeKey(_ name: String) throws(VaultError) {
        guard let index = keys.firstIndex(where: { $0.name == name }) else { throw .keyNotFound(name: name) }
        keys.remove(at: index)
        sharing[name] = nil
        links[name] = nil
    }

    public func setSetting(_ name: String, value: String) throws(VaultError) {
        try Self.validateName(name)
        guard value.utf8.count <= Self.maxSettingBytes else { throw .valueTooLarge("setting \(name)") }
        guard settings[name] != nil || settings.count < Int(UInt16.max) else { throw .valueTooLarge("the vault (65535 settings at most)") }
        settings[name] = value
    }

    @discardableResult
    public func removeSetting(_ name: String) -> Bool { settings.removeValue(forKey: name) != nil }

    public static func validateName(_ name: String) throws(VaultError) {
        let allowed = name.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
                || byte == 0x2d || byte == 0x5f || byte == 0x2e
        }
        guard !name.isEmpty, name.utf8.count <= maxNameBytes, allowed, name.first != "-" else { throw .invalidName(name) }
    }

    // MARK: Encoding

    /// The padded plaintext payload, for the agent to hand to a client (and back).
    public func exported() throws(VaultError) -> SecretBytes { try encoded() }

    /// Contents received from the agent, checked like a vault's.
    public static func imported(_ payload: SecretBytes, source: String) throws(VaultError) -> VaultContents {
        try decode(payload, path: source)
    }

    /// The same contents decoded again from their own encoding: every value then lives in one
    /// secret buffer instead of an allocation of its own (two resident pages each, one of them
    /// locked). The agent does it after each change it saves: 1,000 keys set one at a time
    /// through it would otherwise hold about 8 MiB more.
    public func compacted(path: String) throws(VaultError) -> VaultContents {
        try Self.decode(try encoded(), path: path)
    }

    /// The padded plaintext payload, in secret memory. Layout in Docs/vault-format.md.
    func encoded() throws(VaultError) -> SecretBytes {
        var length = 1 + 32 + 2 + 2
        for key in keys {
            length += 2 + key.name.utf8.count + 2 + key.secret.count + 8 + 8 + 8 + Self.recordLength(key.google) + 1
            for old in key.previous { length += 2 + old.secret.count + 8 + 8 + Self.recordLength(old.google) }
        }
        for (name, value) in settings { length += 2 + name.utf8.count + 4 + value.utf8.count }
        length += 2 + 32 * earlierConversationKeys.count
        length += encodedSharingLength()
        length += encodedLinksLength()
        length += encodedToolSecretsLength()
        let buffer = SecretBytes(count: length + Self.paddingBlock)
        return try buffer.withUnsafeMutableBytes { raw throws(VaultError) in
            var writer = SecretWriter(buffer: raw)
            writer.append(Self.payloadVersion)
            conversationKey.withUnsafeBytes { writer.append($0) }
            writer.append(UInt16(keys.count))
            for key in keys {
                writer.appendField(key.name)
                writer.append(UInt16(key.secret.count))
                key.secret.withUnsafeBytes { writer.append($0) }
                writer.append(key.created)
                writer.append(key.updated)
                writer.append(key.lastUsed)
                writer.appendRecord(key.google)
                writer.append(UInt8(key.previous.count))
                for old in key.previous {
                    writer.append(UInt16(old.secret.count))
                    old.secret.withUnsafeBytes { writer.append($0) }
                    writer.append(old.retired)
                    writer.append(old.set)
                    writer.appendRecord(old.google)
                }
            }
            writer.append(UInt16(settings.count))
            for name in settings.keys.sorted(by: { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }) {
                writer.appendField(name)
                let value = Array(settings[name]!.utf8)
                writer.append(UInt32(value.count))
                value.withUnsafeBytes { writer.append($0) }
            }
            writer.append(UInt16(earlierConversationKeys.count))
            for earlier in earlierConversationKeys { earlier.withUnsafeBytes { writer.append($0) } }
            writeSharing(&writer)
            writeLinks(&writer)
            writeToolSecrets(&writer)
            precondition(writer.offset == length)
            let padded = try mapSodium { () throws(SodiumError) in
                try Sodium.pad(raw, unpaddedLength: length, blockSize: Self.paddingBlock)
            }
            buffer.truncate(to: padded)
            return buffer
        }
    }

    /// Parses a padded payload. Anything a writer never produces is reported as damage:
    /// bad, duplicate or unsorted names, empty or oversized values, too long a history.
    static func decode(_ payload: SecretBytes, path: String) throws(VaultError) -> VaultContents {
        func broken(_ detail: String) -> VaultError { .payloadDamaged(path: path, detail: detail) }
        do {
            return try payload.withUnsafeBytes { padded in
                guard let length = try? Sodium.unpad(padded, blockSize: paddingBlock) else { throw broken("its padding is wrong") }
                var reader = ByteReader(UnsafeRawBufferPointer(rebasing: padded[0..<length]), secretOwner: payload)
                let version = try reader.read(UInt8.self)
                guard (1...payloadVersion).contains(version) else { throw VaultError.unsupportedPayloadVersion(path: path, version: Int(version)) }
                let conversationKey = try reader.readSecret(32)
                let keys = try readKeys(&reader, version: version, broken: broken)
                let settings = try readSettings(&reader, broken: broken)
                var earlier: [SecretBytes] = []
                if version >= 3 {
                    let count = Int(try reader.read(UInt16.self))
                    guard count <= earlierConversationKeyLimit else { throw broken("\(count) earlier conversation keys; writers keep at most \(earlierConversationKeyLimit)") }
                    for _ in 0..<count { earlier.append(try reader.readSecret(32)) }
                }
                var identity: VaultIdentity?
                var sharing: [String: KeySharing] = [:]
                if version >= 6 {
                    (identity, sharing) = try readSharing(&reader, version: version, keyNames: Set(keys.map(\.name)), broken: broken)
                }
                let links = version >= 7 ? try readLinks(&reader, version: version, keyNames: Set(keys.map(\.name)), broken: broken) : [:]
                let toolSecrets = version >= 9 ? try readToolSecrets(&reader, version: version, broken: broken) : []
                let last = version >= 9 ? "secrets" : version >= 7 ? "Secret Manager links" : version >= 6 ? "sharing records" : version >= 3 ? "conversation keys" : "settings"
                guard reader.remaining == 0 else { throw broken("\(reader.remaining) unexpected bytes follow the \(last)") }
                let contents = VaultContents(keys: keys, settings: settings, conversationKey: conversationKey, earlierConversationKeys: earlier,
                                             identity: identity, sharing: sharing, links: links)
                contents.toolSecrets = toolSecrets
                return contents
            }
        } catch let error as VaultError {
            throw error
        } catch {
            throw broken("a field runs past the end, or a name is not UTF-8")
        }
    }

    /// The keys, each with its earlier values, in byte order of their names.
    private static func readKeys(_ reader: inout ByteReader, version: UInt8, broken: (String) -> VaultError) throws -> [StoredKey] {
        var keys: [StoredKey] = []
        for _ in 0..<Int(try reader.read(UInt16.self)) {
            let name = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard (try? validateName(name)) != nil else { throw broken("a key has an invalid name") }
            if let last = keys.last, !last.name.utf8.lexicographicallyPrecedes(name.utf8) {
                throw broken("key names are duplicated or not in byte order")
            }
            let secret = try reader.readSecret(Int(try reader.read(UInt16.self)))
            guard (1...maxSecretBytes).contains(secret.count) else { throw broken("key '\(name)' is empty or longer than \(maxSecretBytes) bytes") }
            let created = try reader.read(Int64.self)
            let updated = try reader.read(Int64.self)
            let lastUsed = version >= 2 ? try reader.read(Int64.self) : 0
            let google = version >= 5 ? try readRecord(&reader, broken: broken("key '\(name)' has a malformed Google key name")) : nil
            let previousCount = Int(try reader.read(UInt8.self))
            guard previousCount <= retiredLimit else { throw broken("key '\(name)' has \(previousCount) earlier values; writers keep at most \(retiredLimit)") }
            var earlier: [(secret: SecretBytes, retired: Int64, set: Int64?, google: GoogleKeyRecord?)] = []
            for _ in 0..<previousCount {
                let old = try reader.readSecret(Int(try reader.read(UInt16.self)))
                guard (1...maxSecretBytes).contains(old.count) else { throw broken("an earlier value of key '\(name)' is empty or too long") }
                let retired = try reader.read(Int64.self)
                let set = version >= 4 ? try reader.read(Int64.self) : nil
                let oldGoogle = version >= 5 ? try readRecord(&reader, broken: broken("an earlier value of key '\(name)' has a malformed Google key name")) : nil
                earlier.append((old, retired, set, oldGoogle))
            }
            // Before version 4 the set date was not kept: a value was set when the one
            // before it was replaced, and the oldest kept one no later than the key's creation.
            let previous = earlier.enumerated().map { position, old in
                RetiredSecret(secret: old.secret, retired: old.retired,
                              set: old.set ?? (position + 1 < earlier.count ? earlier[position + 1].retired : created), google: old.google)
            }
            keys.append(StoredKey(name: name, secret: secret, created: created, updated: updated, lastUsed: lastUsed, previous: previous,
                                  google: google))
        }
        return keys
    }

    /// The settings, in byte order of their names.
    private static func readSettings(_ reader: inout ByteReader, broken: (String) -> VaultError) throws -> [String: String] {
        var settings: [String: String] = [:]
        var lastSetting: String?
        for _ in 0..<Int(try reader.read(UInt16.self)) {
            let name = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard (try? validateName(name)) != nil else { throw broken("a setting has an invalid name") }
            if let lastSetting, !lastSetting.utf8.lexicographicallyPrecedes(name.utf8) {
                throw broken("setting names are duplicated or not in byte order")
            }
            lastSetting = name
            let length = Int(try reader.read(UInt32.self))
            guard length <= maxSettingBytes else { throw broken("setting '\(name)' is longer than \(maxSettingBytes) bytes") }
            settings[name] = try reader.readUTF8(length)
        }
        return settings
    }
}

extension VaultContents {
    /// A value's Google key in the payload: two u16-length ASCII texts, the resource name and
    /// the service account; both empty for none.
    static func recordLength(_ record: GoogleKeyRecord?) -> Int {
        2 + (record?.resource.utf8.count ?? 0) + 2 + (record?.serviceAccount.utf8.count ?? 0)
    }

    static func readRecord(_ reader: inout ByteReader, broken: @autoclosure () -> VaultError) throws -> GoogleKeyRecord? {
        let resource = try reader.readUTF8(Int(try reader.read(UInt16.self)))
        let account = try reader.readUTF8(Int(try reader.read(UInt16.self)))
        if resource.isEmpty && account.isEmpty { return nil }
        let record = GoogleKeyRecord(resource: resource, serviceAccount: account)
        guard record.isWellFormed else { throw broken() }
        return record
    }
}

/// Writes into a fixed secret buffer; the caller sized it exactly.
struct SecretWriter {
    let buffer: UnsafeMutableRawBufferPointer
    private(set) var offset = 0

    init(buffer: UnsafeMutableRawBufferPointer) { self.buffer = buffer }

    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        (buffer.baseAddress! + offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        offset += bytes.count
    }

    mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { append($0) }
    }

    mutating func appendRecord(_ record: GoogleKeyRecord?) {
        appendField(record?.resource ?? "")
        appendField(record?.serviceAccount ?? "")
    }

    mutating func appendField(_ text: String) {
        let bytes = Array(text.utf8)
        append(UInt16(bytes.count))
        bytes.withUnsafeBytes { append($0) }
    }
}
