import FoundationEssentials
public import GoogleKeys
public import VaultCore

/// The plaintext of a share: one JSON document naming the key, its value and where it lives at
/// Google, signed by the sender's Ed25519 key over a canonical encoding of every other field.
public struct ShareDocument {
    /// Version 2 signs the recipients too; version 1 (without them) is still read.
    public static let formatVersion = 2
    /// Serials stay below 2^53 (exact in every JSON reader); one beyond is not a writer's.
    public static let maxSerial: UInt64 = KeySharing.serialLimit

    public let version: Int

    public let name: String
    public let key: SecretBytes
    public let kind: GoogleKeyKind
    public let googleKey: GoogleKeyRecord?
    public let serial: UInt64
    /// Unix seconds.
    public let created: Int64
    public let sender: ShareSender
    /// Whom the share was written for (canonical `age1…` or `ssh-ed25519 AAAA…` texts); nil in a
    /// version 1 share, which did not say.
    public let recipients: [String]?
    public let signature: [UInt8]

    /// A share of `key` for `recipients`, signed by `signer`.
    public static func signed(name: String, key: SecretBytes, googleKey: GoogleKeyRecord?, serial: UInt64, created: Int64, recipients: [String],
                              signer: ShareSigner) throws(SharingError) -> ShareDocument {
        let sender = ShareSender(signingKey: signer.signingPublicKey, label: signer.label)
        let unsigned = ShareDocument(version: formatVersion, name: name, key: key, kind: key.googleKeyKind, googleKey: googleKey, serial: serial,
                                     created: created, sender: sender, recipients: recipients, signature: [])
        let signature = try signer.sign(unsigned.signedBytes)
        return ShareDocument(version: formatVersion, name: name, key: key, kind: unsigned.kind, googleKey: googleKey, serial: serial, created: created,
                             sender: sender, recipients: recipients, signature: signature)
    }

    /// Whether the share was written for one of `recipients`: a version 2 share names them. A
    /// version 1 share does not say, so anyone it was written for could have passed it on: it
    /// counts as written for the reader only when `pinnedSigner` (the signing key already pinned
    /// for this share's name in the reader's vault) signed it, so an existing follow keeps
    /// working until the sender upgrades (after which an older format 1 share is a replay).
    public func isWritten(forAnyOf recipients: [String], pinnedSigner: [UInt8]?) -> Bool {
        guard let listed = self.recipients else { return pinnedSigner == sender.signingKey }
        return recipients.contains(where: listed.contains)
    }

    /// What the signature covers: a context string and every other field, each length-prefixed,
    /// in the order of Docs/sharing.md.
    var signedBytes: SecretBytes {
        var text = SecretText()
        text.append("gemvault-share-v\(version)\n")
        text.appendField(name)
        text.appendField(secret: key)
        text.appendField(kind.rawValue)
        text.appendField(googleKey?.resource ?? "")
        text.appendField(googleKey?.serviceAccount ?? "")
        text.appendSignedTail(serial: serial, created: created, sender: sender, recipients: recipients)
        return text.assembled()
    }

    /// Whether the signature is the named sender's over the other fields. It says nothing of who
    /// the sender is: the importer pins the signing key.
    public var isSignatureValid: Bool { Ed25519.verify(signature, of: signedBytes, by: sender.signingKey) }

    /// The JSON document, in secret memory.
    public func encoded() -> SecretBytes {
        var text = SecretText()
        text.append("{\"gemvault_share\":\(version),\"name\":")
        text.appendJSONString(name)
        text.append(",\"key\":")
        text.appendJSONString(secret: key)
        text.append(",\"kind\":")
        text.appendJSONString(kind.rawValue)
        text.append(",\"google_key\":")
        if let googleKey {
            text.append("{\"resource\":")
            text.appendJSONString(googleKey.resource)
            text.append(",\"service_account\":")
            text.appendJSONString(googleKey.serviceAccount)
            text.append("}")
        } else {
            text.append("null")
        }
        text.appendJSONTail(serial: serial, created: created, sender: sender, recipients: recipients, signature: signature)
        return text.assembled()
    }

    private struct Wire: Decodable {
        struct Google: Decodable {
            let resource: String
            let service_account: String
        }

        struct From: Decodable {
            let label: String
            let signing_key: String
        }

        let gemvault_share: Int
        let name: String
        let kind: String
        let google_key: Google?
        let serial: UInt64
        let created: Int64
        let from: From
        let recipients: [String]?
        let signature: String
    }

    /// Reads a share document. Throws `.malformed` for anything a writer does not produce; the
    /// signature is checked by the caller (`isSignatureValid`), which decides what to say.
    public static func parse(_ plaintext: SecretBytes) throws(SharingError) -> ShareDocument {
        guard let split = SecretJSON.split(plaintext, secretFields: ["key", "secret"]) else { throw .malformed("it is not a gemvault share (not JSON)") }
        // A share of a secret for another tool is never taken as a key (SecretShareDocument).
        guard fieldCount("gemvault_secret_share", in: split.plain) == 0, split.secrets["secret"] == nil else {
            throw .malformed("it is a share of a secret for another tool, not of a Gemini key")
        }
        guard let key = split.secrets["key"], key.count > 0 else { throw .malformed("it is not a gemvault share (no key field)") }
        guard key.isHeaderSafe else { throw .malformed("its key is not one line of printable text") }
        guard let wire = split.decode(Wire.self) else { throw .malformed("its fields are missing or of the wrong type") }
        // SecretJSON takes the first "key" at any depth: a share must have exactly one, at the top.
        guard fieldCount("key", in: split.plain) == 1 else { throw .malformed("it has more than one key field") }
        guard (1..<maxSerial).contains(wire.serial) else { throw .malformed("its serial is out of range") }
        guard (1...formatVersion).contains(wire.gemvault_share) else {
            throw .malformed("it is share format \(wire.gemvault_share); this gemvault reads 1 to \(formatVersion)")
        }
        // Version 2 names its recipients, each as a writer writes it; version 1 names none.
        if wire.gemvault_share == 1 {
            guard wire.recipients == nil else { throw .malformed("a version 1 share names no recipients") }
        } else {
            guard let recipients = wire.recipients, (1...KeySharing.recipientLimit).contains(recipients.count),
                  recipients.allSatisfy({ (try? RecipientList.parse($0, origin: "").text) == $0 }) else {
                throw .malformed("its recipients are missing or malformed")
            }
        }
        guard (try? VaultContents.validateName(wire.name)) != nil else { throw .malformed("its key name is not a valid name") }
        guard let kind = GoogleKeyKind(rawValue: wire.kind), kind == key.googleKeyKind else { throw .malformed("its kind does not match its key") }
        let googleKey = wire.google_key.map { GoogleKeyRecord(resource: $0.resource, serviceAccount: $0.service_account) }
        guard googleKey?.isWellFormed ?? true else { throw .malformed("its Google key name is malformed") }
        guard let signingKey = Sodium.bytes(base64: wire.from.signing_key), signingKey.count == Ed25519.publicKeyBytes,
              let signature = Sodium.bytes(base64: wire.signature), signature.count == Ed25519.signatureBytes,
              VaultIdentity.isValidLabel(wire.from.label) else {
            // A label is shown on the importer's terminal: one with controls is not a writer's.
            throw .malformed("its sender or signature is malformed")
        }
        return ShareDocument(version: wire.gemvault_share, name: wire.name, key: key, kind: kind, googleKey: googleKey, serial: wire.serial,
                             created: wire.created, sender: ShareSender(signingKey: signingKey, label: wire.from.label), recipients: wire.recipients,
                             signature: signature)
    }
}

/// How many times `name` appears as a member name (`"name"`, white space, `:`) in JSON text.
func fieldCount(_ name: String, in json: [UInt8]) -> Int {
    let quoted = Array("\"\(name)\"".utf8)
    var count = 0
    var index = 0
    while index + quoted.count <= json.count {
        if json[index..<(index + quoted.count)].elementsEqual(quoted) {
            var after = index + quoted.count
            while after < json.count, [0x20, 0x09, 0x0a, 0x0d].contains(json[after]) { after += 1 }
            if after < json.count, json[after] == UInt8(ascii: ":") { count += 1 }
            index = after
        } else {
            index += 1
        }
    }
    return count
}

/// What an age file held: a signed gemvault share, or just a key (a plain `age -r` file).
public enum SharePlaintext {
    case share(ShareDocument)
    case bareKey(SecretBytes)

    /// A plaintext starting with `{` must be a share; anything else must be one line of key.
    public static func read(_ plaintext: SecretBytes) throws(SharingError) -> SharePlaintext {
        let first = plaintext.withUnsafeBytes { $0.first { !($0 == 0x20 || $0 == 0x0a || $0 == 0x0d || $0 == 0x09) } }
        if first == UInt8(ascii: "{") { return .share(try ShareDocument.parse(plaintext)) }
        guard let key = plaintext.singleLineCredential(), key.count > 0, key.count <= 4096 else {
            throw .malformed("it holds neither a gemvault share nor a single line of key")
        }
        return .bareKey(key)
    }
}
