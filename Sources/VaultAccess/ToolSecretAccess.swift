import Agent
import VaultCore

/// The secrets for other tools: one by name, or what may be shown of all, through the session
/// when one is open, else from the vault opened with the passphrase.
extension VaultAccess {
    /// One secret, or nil when the vault has none by that name. Without a session the file is
    /// checked, then `beforePrompt` may refuse (no passphrase can be had), then the passphrase is asked.
    public func toolSecret(_ name: String, beforePrompt: () throws -> Void = {}) throws -> ToolSecret? {
        if let answer = try throughSession({ agent throws(AgentError) in try agent.toolSecret(name) }) { return answer }
        try checkBeforePrompt()
        try beforePrompt()
        return try openDocument().contents.toolSecret(named: name)
    }

    /// What may be shown of every secret, without their values.
    public func toolSecretSummaries() throws -> [ToolSecretSummary] {
        if let summaries = try throughSession({ agent throws(AgentError) in try agent.toolSecretSummaries() }) { return summaries }
        return try openDocument().contents.toolSecretSummaries
    }
}
