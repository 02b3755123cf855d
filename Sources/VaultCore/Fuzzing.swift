/// What the fuzzers (Fuzz/) and the corpus replay tests drive: bytes from anywhere, through
/// the same parsers a vault file and a decrypted payload go through. Each check returns the
/// property the input broke, or nil; a crash or a hang is a finding too.
public enum VaultFuzzing {
    public static func vaultFile(_ bytes: [UInt8]) -> String? {
        guard let file = try? VaultFile.parse(bytes, path: "fuzz") else { return nil }
        guard let again = try? VaultFile.parse(file.encoded(), path: "fuzz") else { return "a vault that parses does not parse once encoded again" }
        return again == file ? nil : "a vault changes when encoded and parsed again"
    }

    /// A decrypted, padded payload: the part only the passphrase's holder can write.
    public static func payload(_ bytes: [UInt8]) -> String? {
        guard let contents = try? VaultContents.imported(SecretBytes(copying: bytes), source: "fuzz") else { return nil }
        guard let encoded = try? contents.exported(), let again = try? VaultContents.imported(encoded, source: "fuzz") else {
            return "a payload that decodes does not decode once encoded again"
        }
        let same = again.keys.map(\.name) == contents.keys.map(\.name) && again.settings == contents.settings
            && again.conversationKey.isEqual(to: contents.conversationKey)
            && again.earlierConversationKeys.count == contents.earlierConversationKeys.count
            && zip(again.earlierConversationKeys, contents.earlierConversationKeys).allSatisfy { $0.isEqual(to: $1) }
            && zip(again.keys, contents.keys).allSatisfy { $0.secret.isEqual(to: $1.secret) && $0.previous.count == $1.previous.count }
        return same ? nil : "a payload changes when encoded and decoded again"
    }
}
