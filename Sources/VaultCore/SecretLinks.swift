/// A key whose value lives in Secret Manager (`key set NAME --from gsm://…`): the vault keeps
/// the reference, and the value last fetched (as the key's value, encrypted like every value)
/// with its version number and when it was fetched.
public struct SecretLink: Sendable, Equatable {
    public static let referenceLimit = 1024

    /// `gsm://projects/P/secrets/S`, or `…/versions/N` for a pinned version.
    public let reference: String
    /// The version the stored value is.
    public let version: UInt64
    /// Unix seconds of the last successful fetch.
    public let fetched: Int64
    /// The last `key rotate --create` made here through the secret, kept for its finish and
    /// for `--undo` (payload version 8).
    public var rotation: LinkedRotation?

    public init(reference: String, version: UInt64, fetched: Int64, rotation: LinkedRotation? = nil) {
        self.reference = reference
        self.version = version
        self.fetched = fetched
        self.rotation = rotation
    }

    /// What a writer produces: a reference of printable ASCII starting `gsm://`, a version.
    var isWellFormed: Bool {
        reference.hasPrefix("gsm://") && reference.utf8.count <= Self.referenceLimit
            && reference.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f } && version > 0
            && (rotation?.isWellFormed ?? true)
    }
}

/// A rotation through Secret Manager: the version it replaced, which its finish disables
/// (and `--undo` enables again), and the API key its finish deletes, once the fleet's grace
/// period is over.
public struct LinkedRotation: Sendable, Equatable {
    /// The version that was current before the rotation.
    public let previousVersion: UInt64
    /// The Google key (`projects/P/locations/global/keys/ID`) the finish deletes; empty when
    /// none (`--keep-old`, or a key Google could not find).
    public let retireKey: String
    /// Unix seconds from which the finish may run; 0 once it has run.
    public let finishAfter: Int64

    public init(previousVersion: UInt64, retireKey: String, finishAfter: Int64) {
        self.previousVersion = previousVersion
        self.retireKey = retireKey
        self.finishAfter = finishAfter
    }

    /// Whether the finish is still to run.
    public var isPending: Bool { finishAfter != 0 }

    /// The key to retire is empty or an API Keys resource name, as a value's Google key is.
    public var isWellFormed: Bool {
        previousVersion > 0 && finishAfter >= 0 && retireKey.utf8.count <= SecretLink.referenceLimit
            && (retireKey.isEmpty || GoogleKeyRecord(resource: retireKey, serviceAccount: "").isWellFormed)
    }
}

extension VaultContents {
    /// Payload version 7's last section: u16 count, then per linked key (in byte order of
    /// names) its name (u16 length), the reference (u16 length), the version (u64) and the
    /// fetch time (i64). Version 8 adds to each a u8 (1 when a rotation follows, else 0), then
    /// the rotation: the previous version (u64), the key to retire (u16 length) and the time
    /// its finish may run (i64).
    func encodedLinksLength() -> Int {
        2 + links.map { 2 + $0.key.utf8.count + 2 + $0.value.reference.utf8.count + 16 + 1
            + ($0.value.rotation.map { 8 + 2 + $0.retireKey.utf8.count + 8 } ?? 0) }.reduce(0, +)
    }

    func writeLinks(_ writer: inout SecretWriter) {
        writer.append(UInt16(links.count))
        for name in links.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let link = links[name]!
            writer.appendField(name)
            writer.appendField(link.reference)
            writer.append(link.version)
            writer.append(link.fetched)
            writer.append(UInt8(link.rotation == nil ? 0 : 1))
            if let rotation = link.rotation {
                writer.append(rotation.previousVersion)
                writer.appendField(rotation.retireKey)
                writer.append(rotation.finishAfter)
            }
        }
    }

    static func readLinks(_ reader: inout ByteReader, version payloadVersion: UInt8, keyNames: Set<String>,
                          broken: (String) -> VaultError) throws -> [String: SecretLink] {
        var links: [String: SecretLink] = [:]
        var lastName: String?
        for _ in 0..<Int(try reader.read(UInt16.self)) {
            let name = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard keyNames.contains(name) else { throw broken("a Secret Manager link is recorded for a key the vault does not hold") }
            if let lastName, !lastName.utf8.lexicographicallyPrecedes(name.utf8) { throw broken("Secret Manager links are duplicated or not in byte order") }
            lastName = name
            var link = SecretLink(reference: try reader.readUTF8(Int(try reader.read(UInt16.self))), version: try reader.read(UInt64.self),
                                  fetched: try reader.read(Int64.self))
            if payloadVersion >= 8 {
                switch try reader.read(UInt8.self) {
                case 0: break
                case 1:
                    link.rotation = LinkedRotation(previousVersion: try reader.read(UInt64.self), retireKey: try reader.readUTF8(Int(try reader.read(UInt16.self))),
                                                   finishAfter: try reader.read(Int64.self))
                default: throw broken("the Secret Manager link of '\(name)' has an unknown rotation marker")
                }
            }
            guard link.isWellFormed else { throw broken("the Secret Manager link of '\(name)' is malformed") }
            links[name] = link
        }
        return links
    }

    /// Links `name` (which must exist) to a secret, or unlinks it (nil).
    public func setLink(_ name: String, _ link: SecretLink?) throws(VaultError) {
        guard key(named: name) != nil else { throw .keyNotFound(name: name) }
        if let link, !link.isWellFormed { throw .valueTooLarge("the Secret Manager reference of \(name)") }
        links[name] = link
    }
}
