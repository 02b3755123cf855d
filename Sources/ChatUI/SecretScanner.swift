/// Finds text that looks like a credential before it is sent to a model.
public enum SecretScanner {
    /// A short description of each credential-shaped thing in `text`.
    public static func findings(in text: String) -> [String] {
        var found: [String] = []
        let bytes = Array(text.utf8)
        let prefix = Array("AIza".utf8)
        var index = 0
        while index + 39 <= bytes.count {
            if bytes[index..<index + 4].elementsEqual(prefix),
               bytes[index + 4..<index + 39].allSatisfy(isKeyCharacter) {
                found.append("a Google API key (AIza…)")
                break
            }
            index += 1
        }
        if text.contains("-----BEGIN") && text.contains("PRIVATE KEY-----") { found.append("a PEM private key") }
        return found
    }

    static func isKeyCharacter(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte == 0x2d || byte == 0x5f
    }
}
