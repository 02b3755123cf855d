import Agent
import Conversations
import GeminiClient
import Rendering
import Settings
import SSHAgent
import ToolSecrets
import VaultCore

/// Every parser that reads bytes another party controls, by the name its fuzzer and its seed
/// corpus go by (Fuzz/Corpus/NAME). Each returns the property an input broke, or nil.
public enum FuzzHarnesses {
    public static let all: [(name: String, check: @Sendable ([UInt8]) -> String?)] = [
        ("vault", { bytes in
            // The first byte picks the file as stored, or a decrypted payload.
            guard let mode = bytes.first else { return nil }
            let rest = Array(bytes.dropFirst())
            return mode & 1 == 0 ? VaultFuzzing.vaultFile(rest) : VaultFuzzing.payload(rest)
        }),
        ("history", HistoryFuzzing.check),
        ("sse", StreamFuzzing.check),
        ("agent", AgentFuzzing.check),
        ("config", ConfigFuzzing.check),
        ("markdown", MarkdownFuzzing.check),
        ("ssh-agent", SSHAgentFuzzing.check),
        ("mcp-config", MCPConfigFuzzing.check),
    ]

    public static func named(_ name: String) -> (@Sendable ([UInt8]) -> String?)? {
        all.first { $0.name == name }?.check
    }
}
