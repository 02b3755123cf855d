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
    /// `--pq-only` and classic recipients among those named: each, as a person reads it.
    case notPostQuantum([String])
}

/// A vault's identity in the forms sharing uses: the age identities and recipients (X25519, and
/// the hybrid post-quantum one when the vault has it), the signing key. Its secrets are either
/// here (the vault opened with the passphrase) or in the session agent, which is only asked to
/// agree, to decapsulate, and to build and sign the next share of a key itself.
public struct SharingIdentity: Sendable {
    /// The X25519 identity.
    public let age: any AgeIdentity
    public let recipientKey: X25519Recipient
    /// The hybrid post-quantum identity (`age1pq1…`); nil for a classic vault.
    public let hybrid: (any AgeIdentity)?
    public let hybridRecipient: HybridRecipient?
    public let label: String
    public let signingPublicKey: [UInt8]
    /// Nil for the agent's identity: the agent signs only shares it builds (`VaultContents.signNextShare`).
    public let signer: ShareSigner?

    /// The identity of a vault opened in this process.
    public init(_ identity: VaultIdentity) throws(SharingError) {
        let age: X25519Identity
        let hybrid: HybridIdentity?
        let signer = try ShareSigner(identity)
        do {
            age = try X25519Identity(secret: identity.agreementSecret)
            hybrid = try identity.hybridSeed.map { seed throws(AgeError) in try HybridIdentity(seed: seed) }
        } catch {
            throw .signing
        }
        self.age = age
        recipientKey = age.recipient
        self.hybrid = hybrid
        hybridRecipient = hybrid?.recipient
        label = identity.label
        signingPublicKey = signer.signingPublicKey
        self.signer = signer
    }

    /// The identity held by a session agent: its public halves, and the agreement and
    /// decapsulation it may be asked for. A hybrid key the agent sent that is not one is refused.
    public init(agreementKey: [UInt8], signingKey: [UInt8], hybridKey: [UInt8]?, label: String,
                agree: @escaping @Sendable ([[UInt8]]) throws(AgeError) -> [SecretBytes?],
                decapsulate: @escaping @Sendable ([[UInt8]]) throws(AgeError) -> [SecretBytes?]) throws(SharingError) {
        recipientKey = X25519Recipient(publicKey: agreementKey)
        age = DelegatedX25519Identity(recipient: recipientKey, agree: agree)
        if let hybridKey {
            guard let recipient = HybridRecipient(publicKey: hybridKey) else { throw .malformed("the session's post-quantum recipient is not an ML-KEM-768 + X25519 key") }
            hybridRecipient = recipient
            hybrid = DelegatedHybridIdentity(recipient: recipient, decapsulate: decapsulate)
        } else {
            hybridRecipient = nil
            hybrid = nil
        }
        self.label = label
        signingPublicKey = signingKey
        signer = nil
    }

    /// `age1…`: the X25519 recipient, what others encrypted shares to before post-quantum ones.
    public var recipient: String { recipientKey.text }

    /// `age1pq1…`: the hybrid post-quantum recipient, what others should encrypt shares to; nil for a classic vault.
    public var pqRecipient: String? { hybridRecipient?.text }

    /// Every identity a share to this vault may be opened with: the post-quantum one first.
    public var ages: [any AgeIdentity] { (hybrid.map { [$0] } ?? []) + [age] }

    /// Every recipient of this vault, as shares name them: the post-quantum one first.
    public var recipients: [String] { (pqRecipient.map { [$0] } ?? []) + [recipient] }

    /// The signing key's fingerprint as ssh-keygen -l writes one: `SHA256:` and unpadded base64.
    public var fingerprint: String { Self.fingerprint(of: signingPublicKey) }

    public static func fingerprint(of signingKey: [UInt8]) -> String {
        var base64 = Sodium.base64(Sodium.sha256(signingKey))
        while base64.last == "=" { base64.removeLast() }
        return "SHA256:" + base64
    }
}

/// A vault's signing key and label, all a share's signer needs: built without the age identities
/// (the hybrid one's expansion costs an ML-KEM key generation).
public struct ShareSigner: Sendable {
    public let label: String
    public let signingPublicKey: [UInt8]
    private let secretKey: SecretBytes

    public init(_ identity: VaultIdentity) throws(SharingError) {
        do {
            (signingPublicKey, secretKey) = try Ed25519.keyPair(seed: identity.signingSeed)
        } catch {
            throw .signing
        }
        label = identity.label
    }

    func sign(_ message: SecretBytes) throws(SharingError) -> [UInt8] {
        do { return try Ed25519.sign(message, secretKey: secretKey) } catch { throw .signing }
    }
}
