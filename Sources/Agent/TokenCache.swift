import SystemIO
import VaultCore

/// Google access tokens for `auth` = `google`, kept for the session only: each command of a
/// CI job or a shell asks the agent before the credential chain, so one exchange serves many
/// commands. A token is handed out only while it has more than five minutes left.
extension AgentServer {
    static let tokenMargin: Int64 = 300
    static let maxTokens = 16

    func tokenOperation(_ operation: AgentProtocol.Operation, _ request: AgentMessage) -> AgentMessage {
        guard let key = request.text(.cacheKey), !key.isEmpty else {
            return Self.error(.badRequest, "a token request names its credential")
        }
        let now = Clock.now()
        tokenCache = tokenCache.filter { $0.value.expiresAt - Self.tokenMargin > now }
        if operation == .takeToken {
            guard let held = tokenCache[key] else { return Self.error(.noSuchKey, "no token held for that credential") }
            var answer = AgentMessage(code: 0)
            answer.add(.keyValue, secret: held.token)
            answer.add(.expiresAt, number: held.expiresAt)
            return answer
        }
        guard let token = request.secret(.keyValue), token.isHeaderSafe, let expiresAt = request.number(.expiresAt), expiresAt - Self.tokenMargin > now else {
            return Self.error(.badRequest, "a token to keep is one header-safe line with more than five minutes left")
        }
        if tokenCache[key] == nil, tokenCache.count >= Self.maxTokens { return Self.error(.failed, "the session keeps \(Self.maxTokens) tokens at most") }
        tokenCache[key] = (token, expiresAt)
        return AgentMessage(code: 0)
    }
}

extension AgentClient {
    /// The token the session keeps for `key` and its expiry (Unix seconds), if any.
    public func takeToken(_ key: String) throws(AgentError) -> (token: SecretBytes, expiresAt: Int64)? {
        var message = AgentMessage(code: AgentProtocol.Operation.takeToken.rawValue)
        message.add(.cacheKey, text: key)
        let answer: AgentMessage
        do { answer = try request(message) } catch {
            if case .noSuchKey = error { return nil }
            throw error
        }
        guard let token = answer.secret(.keyValue), let expiresAt = answer.number(.expiresAt) else { return nil }
        return (token, expiresAt)
    }

    public func putToken(_ key: String, _ token: SecretBytes, expiresAt: Int64) throws(AgentError) {
        var message = AgentMessage(code: AgentProtocol.Operation.putToken.rawValue)
        message.add(.cacheKey, text: key)
        message.add(.keyValue, secret: token)
        message.add(.expiresAt, number: expiresAt)
        _ = try request(message)
    }
}
