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

/// Where a client takes an access token for each request: the one it holds while it is fresh,
/// a new one from the credential chain before it expires (a long chat outlives a token).
public protocol AccessTokenSource: AnyObject {
    func current() throws -> BearerCredential
}
