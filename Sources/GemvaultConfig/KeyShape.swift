import VaultCore

extension SecretBytes {
    /// Whether the value looks like a Gemini API key: `AIza` followed by 35 URL-safe base64 characters.
    public var looksLikeGeminiKey: Bool {
        withUnsafeBytes { bytes in
            guard bytes.count == 39, bytes.starts(with: Array("AIza".utf8)) else { return false }
            return bytes.dropFirst(4).allSatisfy { byte in
                (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte == 0x2d || byte == 0x5f
            }
        }
    }
}
