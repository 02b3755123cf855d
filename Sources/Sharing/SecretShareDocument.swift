import FoundationEssentials
public import VaultCore

/// The plaintext of a share of a secret for another tool (not a Gemini key): its own JSON
/// member (`gemvault_secret_share`), its own value field (`secret`) and its own signature
/// context, so that neither kind of share can be read, or its signature checked, as the other.
/// The signer, serial and recipients follow a key share's rules (ShareDocument).
public struct SecretShareDocument {
    public static let formatVersion = 1
    static let context = "gemvault-secret-share-v1\n"

    public let name: String
    public let secret: SecretBytes
    public let serial: UInt64
    /// Unix seconds.
    public let created: Int64
    public let sender: ShareSender
    /// Whom the share was written for (canonical `age1…` or `ssh-ed25519 AAAA…` texts).
    public let recipients: [String]
    public let signature: [UInt8]

    /// A share of `secret` for `recipients`, signed by `signer`.
    public static func signed(name: String, secret: SecretBytes, serial: UInt64, created: Int64, recipients: [String],
                              signer: ShareSigner) throws(SharingError) -> SecretShareDocument {
        let sender = ShareSender(signingKey: signer.signingPublicKey, label: signer.label)
        let unsigned = SecretShareDocument(name: name, secret: secret, serial: serial, created: created, sender: sender, recipients: recipients, signature: [])
        return SecretShareDocument(name: name, secret: secret, serial: serial, created: created, sender: sender, recipients: recipients,
                                   signature: try signer.sign(unsigned.signedBytes))
    }

    /// Whether one of `mine` is among the recipients it was signed for.
    public func isWritten(forAnyOf mine: [String]) -> Bool { mine.contains(where: recipients.contains) }

    /// A context unlike a key share's, then every other field, each length-prefixed.
    var signedBytes: SecretBytes {
        var text = SecretText()
        text.append(Self.context)
        text.appendField(name)
        text.appendField(secret: secret)
        text.appendSignedTail(serial: serial, created: created, sender: sender, recipients: recipients)
        return text.assembled()
    }

    public var isSignatureValid: Bool { Ed25519.verify(signature, of: signedBytes, by: sender.signingKey) }

    /// The JSON document, in secret memory.
    public func encoded() -> SecretBytes {
        var text = SecretText()
        text.append("{\"gemvault_secret_share\":\(Self.formatVersion),\"name\":")
        text.appendJSONString(name)
        text.append(",\"secret\":")
        text.appendJSONString(secret: secret)
        text.appendJSONTail(serial: serial, created: created, sender: sender, recipients: recipients, signature: signature)
        return text.assembled()
    }

    private struct Wire: Decodable {
        struct From: Decodable {
            let label: String
            let signing_key: String
        }

        let gemvault_secret_share: Int
        let name: String
        let serial: UInt64
        let created: Int64
        let from: From
        let recipients: [String]
        let signature: String
    }

    /// Reads a share of a secret. A key share (`gemvault_share`, a `key` field) is refused as
    /// such; anything else a writer does not produce is `.malformed`. The caller checks the signature.
    public static func parse(_ plaintext: SecretBytes) throws(SharingError) -> SecretShareDocument {
        guard let split = SecretJSON.split(plaintext, secretFields: ["secret", "key"]) else { throw .malformed("it is not a gemvault share (not JSON)") }
        guard fieldCount("gemvault_share", in: split.plain) == 0, split.secrets["key"] == nil else {
            throw .malformed("it is a share of a Gemini key, not of a secret: import it with 'gemvault key import'")
        }
        guard let secret = split.secrets["secret"], fieldCount("secret", in: split.plain) == 1 else {
            throw .malformed("it is not a gemvault share of a secret (no single secret field)")
        }
        guard ToolSecret.problem(with: secret, multiline: true) == nil else { throw .malformed("its secret is not printable text of 1 to 65536 bytes") }
        guard let wire = split.decode(Wire.self) else { throw .malformed("its fields are missing or of the wrong type") }
        guard wire.gemvault_secret_share == formatVersion else {
            throw .malformed("it is secret share format \(wire.gemvault_secret_share); this gemvault reads \(formatVersion)")
        }
        guard (1..<KeySharing.serialLimit).contains(wire.serial) else { throw .malformed("its serial is out of range") }
        guard (1...KeySharing.recipientLimit).contains(wire.recipients.count),
              wire.recipients.allSatisfy({ (try? RecipientList.parse($0, origin: "").text) == $0 }) else {
            throw .malformed("its recipients are missing or malformed")
        }
        guard (try? VaultContents.validateName(wire.name)) != nil else { throw .malformed("its secret name is not a valid name") }
        guard let signingKey = Sodium.bytes(base64: wire.from.signing_key), signingKey.count == Ed25519.publicKeyBytes,
              let signature = Sodium.bytes(base64: wire.signature), signature.count == Ed25519.signatureBytes,
              VaultIdentity.isValidLabel(wire.from.label) else {
            throw .malformed("its sender or signature is malformed")
        }
        return SecretShareDocument(name: wire.name, secret: secret, serial: wire.serial, created: wire.created,
                                   sender: ShareSender(signingKey: signingKey, label: wire.from.label), recipients: wire.recipients, signature: signature)
    }
}
