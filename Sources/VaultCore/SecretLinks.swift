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

    public init(reference: String, version: UInt64, fetched: Int64) {
        self.reference = reference
        self.version = version
        self.fetched = fetched
    }

    /// What a writer produces: a reference of printable ASCII starting `gsm://`, a version.
    var isWellFormed: Bool {
        reference.hasPrefix("gsm://") && reference.utf8.count <= Self.referenceLimit
            && reference.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f } && version > 0
    }
}

extension VaultContents {
    /// Payload version 7's last section: u16 count, then per linked key (in byte order of
    /// names) its name (u16 length), the reference (u16 length), the version (u64) and the
    /// fetch time (i64).
    func encodedLinksLength() -> Int {
        2 + links.map { 2 + $0.key.utf8.count + 2 + $0.value.reference.utf8.count + 16 }.reduce(0, +)
    }

    func writeLinks(_ writer: inout SecretWriter) {
        writer.append(UInt16(links.count))
        for name in links.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            let link = links[name]!
            writer.appendField(name)
            writer.appendField(link.reference)
            writer.append(link.version)
            writer.append(link.fetched)
        }
    }

    static func readLinks(_ reader: inout ByteReader, keyNames: Set<String>, broken: (String) -> VaultError) throws -> [String: SecretLink] {
        var links: [String: SecretLink] = [:]
        var lastName: String?
        for _ in 0..<Int(try reader.read(UInt16.self)) {
            let name = try reader.readUTF8(Int(try reader.read(UInt16.self)))
            guard keyNames.contains(name) else { throw broken("a Secret Manager link is recorded for a key the vault does not hold") }
            if let lastName, !lastName.utf8.lexicographicallyPrecedes(name.utf8) { throw broken("Secret Manager links are duplicated or not in byte order") }
            lastName = name
            let link = SecretLink(reference: try reader.readUTF8(Int(try reader.read(UInt16.self))), version: try reader.read(UInt64.self),
                                  fetched: try reader.read(Int64.self))
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
