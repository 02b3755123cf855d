/// Why an age file could not be read, classified as the C2SP test vectors classify failures.
public struct AgeError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The header is malformed, or a stanza meant for one of our identities is.
        case header = "header failure"
        /// The header's MAC does not verify under the file key.
        case mac = "HMAC failure"
        /// The encrypted payload is truncated, reordered, tampered with or followed by data.
        case payload = "payload failure"
        /// The ASCII armor is not strict PEM of an age file.
        case armor = "armor failure"
        /// No stanza opens with the identities given.
        case noMatch = "no match"
        /// A valid feature gemvault does not read (a passphrase-encrypted file, a plugin recipient).
        case unsupported = "unsupported"
        /// An identity (a passphrase-protected ssh key) needs a passphrase that is missing or wrong.
        case wrongPassphrase = "wrong passphrase"
        /// An age plugin (`age-plugin-NAME`) is missing, refused, broke its protocol or ran out of time.
        case plugin = "plugin failure"
        /// An identity held elsewhere (the session's agent) could not be asked: nothing is known
        /// of the file, which is not damaged for it.
        case holderUnavailable = "identity holder unavailable"
    }

    public let kind: Kind
    public let detail: String

    public init(_ kind: Kind, _ detail: String) {
        self.kind = kind
        self.detail = detail
    }

    public var description: String { "\(kind.rawValue): \(detail)" }
}
