public import AgeFormat
public import VaultCore

/// Why sharing or importing failed, before any exit code is chosen (the CLI maps it once).
public enum SharingError: Error, Equatable, Sendable {
    /// A recipient that is not `age1…`, `ssh-ed25519 …` or a readable `.pub` file; names the input.
    case badRecipient(String)
    /// A share file that is not what a writer produces.
    case malformed(String)
    /// The age layer refused the file.
    case age(AgeError)
    case signing
}

/// A vault's identity in the forms sharing uses: the age identity and recipient, the signing key.
public struct SharingIdentity {
    public let age: X25519Identity
    public let label: String
    public let signingPublicKey: [UInt8]
    private let signingSecretKey: SecretBytes

    public init(_ identity: VaultIdentity) throws(SharingError) {
        do {
            age = try X25519Identity(secret: identity.agreementSecret)
            (signingPublicKey, signingSecretKey) = try Ed25519.keyPair(seed: identity.signingSeed)
        } catch {
            throw .signing
        }
        label = identity.label
    }

    /// `age1…`: what others encrypt shares to.
    public var recipient: String { age.recipient.text }

    /// The signing key's fingerprint as ssh-keygen -l writes one: `SHA256:` and unpadded base64.
    public var fingerprint: String { Self.fingerprint(of: signingPublicKey) }

    public static func fingerprint(of signingKey: [UInt8]) -> String {
        var base64 = Sodium.base64(Sodium.sha256(signingKey))
        while base64.last == "=" { base64.removeLast() }
        return "SHA256:" + base64
    }

    func sign(_ message: SecretBytes) throws(SharingError) -> [UInt8] {
        do { return try Ed25519.sign(message, secretKey: signingSecretKey) } catch { throw .signing }
    }
}
