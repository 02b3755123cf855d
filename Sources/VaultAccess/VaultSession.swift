import Agent
import VaultCore

/// The commands that manage the session itself reach its agent here (`VaultAccess.session`):
/// status, lock, the PIN, completion's key names. It is this vault's agent even with
/// `--no-session`, which only keeps other commands from asking it for the vault.
public struct VaultSession: Sendable {
    let agent: AgentClient?

    /// The agent's status; `.notRunning` when none answers. Never extends the session.
    public func status() throws(AgentError) -> AgentStatus { try running().status() }

    /// Makes the agent wipe the vault from memory and exit.
    public func lock() throws(AgentError) { try running().lock() }

    /// Sets a PIN for the open session (`tries` wrong ones wipe it).
    public func setPIN(_ pin: SecretBytes, tries: Int) throws(AgentError) -> AgentStatus { try running().setPIN(pin, tries: tries) }

    public func forgetPIN() throws(AgentError) { try running().forgetPIN() }

    /// The vault's own settings, from the open session.
    public func settings() throws(AgentError) -> [String: String] { try running().settings() }

    /// Each key's name, shape and link, without a value; never extends the session.
    public func keySummary() throws(AgentError) -> [KeyShape] { try running().keySummary() }

    /// The key names for completion: a stalled agent costs `timeout` seconds at most.
    public func keyNames(timeout: Double) -> [String] {
        guard var agent else { return [] }
        agent.responseTimeout = timeout
        return (try? agent.keyNames()) ?? []
    }

    private func running() throws(AgentError) -> AgentClient {
        guard let agent else { throw .notRunning }
        return agent
    }
}

extension VaultAccess {
    /// This vault's session, for the commands that manage it (also under `--no-session`).
    public var session: VaultSession { VaultSession(agent: agentOfVault) }

    /// Each key's name, shape and link from an unlocked session (doctor's view, no use of it);
    /// nil without one. Never prompts.
    public func sessionKeySummary() -> [KeyShape]? {
        guard !noSession, exists, let agent else { return nil }
        return try? agent.keySummary()
    }

    /// One key from an unlocked session, not recorded as a use (the budget's comparison by
    /// value); nil without a session or such a key. Never prompts.
    public func sessionKey(named name: String) -> StoredKey? {
        (try? throughSession { agent throws(AgentError) in try agent.key(name, markUsed: false) }) ?? nil
    }
}
