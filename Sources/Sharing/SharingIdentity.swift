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

/// A vault's identity in the forms sharing uses: the age identity and recipient, the signing
/// key. Its secrets are either here (the vault opened with the passphrase) or in the session
/// agent, which is only asked to agree, and to build and sign the next share of a key itself.
public struct SharingIdentity: Sendable {
    public let age: any AgeIdentity
    public let recipientKey: X25519Recipient
    public let label: String
    public let signingPublicKey: [UInt8]
    /// Nil for the agent's identity: the agent signs only shares it builds (`VaultContents.signNextShare`).
    private let signer: (@Sendable (SecretBytes) throws -> [UInt8])?

    /// The identity of a vault opened in this process.
    public init(_ identity: VaultIdentity) throws(SharingError) {
        let age: X25519Identity
        let pair: (publicKey: [UInt8], secretKey: SecretBytes)
        do {
            age = try X25519Identity(secret: identity.agreementSecret)
            pair = try Ed25519.keyPair(seed: identity.signingSeed)
        } catch {
            throw .signing
        }
        self.age = age
        recipientKey = age.recipient
        label = identity.label
        signingPublicKey = pair.publicKey
        signer = { message in try Ed25519.sign(message, secretKey: pair.secretKey) }
    }

    /// The identity held by a session agent: its public halves, and the agreement it may be asked for.
    public init(agreementKey: [UInt8], signingKey: [UInt8], label: String,
                agree: @escaping @Sendable ([[UInt8]]) throws(PrimitiveError) -> [SecretBytes?]) {
        recipientKey = X25519Recipient(publicKey: agreementKey)
        age = DelegatedX25519Identity(recipient: recipientKey, agree: agree)
        self.label = label
        signingPublicKey = signingKey
        signer = nil
    }

    /// `age1…`: what others encrypt shares to.
    public var recipient: String { recipientKey.text }

    /// The signing key's fingerprint as ssh-keygen -l writes one: `SHA256:` and unpadded base64.
    public var fingerprint: String { Self.fingerprint(of: signingPublicKey) }

    public static func fingerprint(of signingKey: [UInt8]) -> String {
        var base64 = Sodium.base64(Sodium.sha256(signingKey))
        while base64.last == "=" { base64.removeLast() }
        return "SHA256:" + base64
    }

    func sign(_ message: SecretBytes) throws(SharingError) -> [UInt8] {
        guard let signer else { throw .signing }
        do { return try signer(message) } catch { throw .signing }
    }
}
