import Glibc

/// Whether a value in a config file looks like a secret: a known token shape, or a long
/// random-looking string. Used by `mcp scan`, `mcp wrap` and `doctor`.
public enum SecretShape: String, Sendable, Equatable {
    case github = "GitHub token"
    case slack = "Slack token"
    case anthropic = "Anthropic key"
    case openAI = "OpenAI key"
    case googleAuth = "Google auth key"
    case googleStandard = "Google API key"
    case aws = "AWS access key"
    case jwt = "JWT"
    case pem = "PEM block"
    case highEntropy = "random-looking value"

    /// The shape of `value`, or nil when it does not look like a secret. A reference another
    /// tool resolves (`${VAR}`, `${input:…}`, `$VAR`) is not one.
    public static func of(_ value: String) -> SecretShape? {
        let text = String(String(value.drop(while: \.isWhitespace).reversed()).drop(while: \.isWhitespace).reversed())
        guard text.count >= 8, !text.hasPrefix("$") else { return nil }
        if text.hasPrefix("-----BEGIN ") { return .pem }
        let prefixes: [(String, SecretShape)] = [
            ("ghp_", .github), ("gho_", .github), ("ghu_", .github), ("ghs_", .github), ("ghr_", .github), ("github_pat_", .github),
            ("sk-ant-", .anthropic), ("sk-", .openAI), ("AQ.", .googleAuth), ("AIza", .googleStandard), ("AKIA", .aws), ("ASIA", .aws),
        ]
        let token = bearerToken(text)
        if let match = prefixes.first(where: { token.hasPrefix($0.0) }), token.count >= 16, !token.contains(" ") { return match.1 }
        if token.count >= 16, token.hasPrefix("xox"), token.dropFirst(3).first.map({ "abprsec".contains($0) }) == true,
           token.dropFirst(4).first == "-" { return .slack }
        if isJWT(token) { return .jwt }
        return looksRandom(token) ? .highEntropy : nil
    }

    /// `Bearer X` and `token X` (an Authorization header's value) are judged by X.
    static func bearerToken(_ text: String) -> String {
        for scheme in ["Bearer ", "bearer ", "token ", "Token ", "Basic "] where text.hasPrefix(scheme) {
            return String(text.dropFirst(scheme.count))
        }
        return text
    }

    static func isJWT(_ token: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        let base64url = { (part: Substring) in !part.isEmpty && part.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" } }
        return parts.count == 3 && token.hasPrefix("eyJ") && parts.allSatisfy(base64url) && token.count >= 32
    }

    /// 20 or more characters of no spaces, letters and digits both, and at least 3.5 bits of
    /// entropy a character: an absolute path, a URL, a word or a version number is not random.
    static func looksRandom(_ token: String) -> Bool {
        guard token.count >= 20, !token.contains(" "), !token.contains("://"), !token.hasPrefix("/"), !token.hasPrefix("~"),
              token.contains(where: \.isNumber), token.contains(where: \.isLetter) else { return false }
        var counts: [Character: Int] = [:]
        for character in token { counts[character, default: 0] += 1 }
        let length = Double(token.count)
        let entropy = counts.values.reduce(0.0) { total, count in
            let share = Double(count) / length
            return total - share * log2(share)
        }
        return entropy >= 3.5
    }
}
