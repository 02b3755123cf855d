import VaultCore

/// A Gemini method a new key can be checked with, cheapest first.
public enum KeyProbe: String, CaseIterable, Sendable {
    case listModels = "google.ai.generativelanguage.v1beta.ModelService.ListModels"
    case countTokens = "google.ai.generativelanguage.v1beta.GenerativeService.CountTokens"
    case generateContent = "google.ai.generativelanguage.v1beta.GenerativeService.GenerateContent"

    public var shortName: String { String(rawValue.split(separator: ".").last!) }
}

/// Checks that a key Google just made works, trying the probes its restrictions allow until
/// Google has propagated it or `limit` seconds have passed. Here, below both the rotation
/// workflow that asks and the Gemini client that answers, so neither imports the other.
public protocol KeyChecker {
    func verify(_ key: SecretBytes, probes: [KeyProbe], limit: Double, note: (String) -> Void) throws
}
