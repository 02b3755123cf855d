/// age's own recipient kinds past X25519's `age1…`: the hybrid post-quantum `age1pq1…` and the
/// tagged hardware `age1tag1…` and `age1tagpq1…`. Their HRPs are age's, never a plugin's: the
/// one table the plugin names, the recipient parser and the slot listing read.
public struct NativeRecipientKind: Sendable {
    /// The Bech32 HRP (`age1pq`); a recipient starts with it and `1`.
    public let hrp: String
    /// The stanza type age writes for it.
    public let stanzaType: String
    /// The key it holds, as a person reads it.
    public let key: String
    /// The recipient of a text with this HRP; nil for a malformed one.
    public let parse: @Sendable (String) -> (any AgeRecipient)?

    public static let all: [NativeRecipientKind] = [
        NativeRecipientKind(hrp: Labels.hybridRecipientHRP, stanzaType: Labels.hybridStanza, key: "ML-KEM-768 + X25519") { HybridRecipient(parsing: $0) },
        NativeRecipientKind(hrp: Labels.hybridTagRecipientHRP, stanzaType: Labels.hybridTagStanza, key: "ML-KEM-768 + P-256") { MLKEM768P256TagRecipient(parsing: $0) },
        NativeRecipientKind(hrp: Labels.tagRecipientHRP, stanzaType: Labels.tagStanza, key: "P-256") { P256TagRecipient(parsing: $0) },
    ]

    /// The kind whose HRP is `hrp` (lowercase); nil for X25519's and a plugin's.
    public static func named(_ hrp: String) -> NativeRecipientKind? { all.first { $0.hrp == hrp } }

    /// The kind a recipient text starts with (in any case); nil for any other text.
    public static func of(_ text: String) -> NativeRecipientKind? {
        let lowered = text.prefix(16).lowercased()
        return all.first { lowered.hasPrefix($0.hrp + "1") }
    }
}
