import VaultCore

/// An OAuth access token to send, and the project a user's credential bills (`x-goog-user-project`).
public struct BearerCredential {
    public let token: SecretBytes
    public let userProject: String?

    public init(token: SecretBytes, userProject: String?) {
        self.token = token
        self.userProject = userProject
    }
}

/// No token could be had now (a refresh refused, STS unreachable), worded for a person.
public struct TokenUnavailable: Error, Sendable {
    public let message: String
    public let hint: String?
    /// Nothing answered: worth another try later (exit 7), not a refusal (exit 6).
    public let network: Bool

    public init(message: String, hint: String?, network: Bool) {
        self.message = message
        self.hint = hint
        self.network = network
    }
}

/// Where a client takes an access token for each request: the one it holds while it is fresh,
/// a new one from the credential chain before it expires (a long chat outlives a token).
public protocol AccessTokenSource: AnyObject {
    func current() throws(TokenUnavailable) -> BearerCredential
}
