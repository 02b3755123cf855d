import GoogleKeys
import TerminalIO

/// Whether text holding something credential-shaped may be sent: asked on a terminal
/// (default no), refused otherwise, unless the user allowed it up front (--allow-secrets).
public enum SecretGate {
    public enum Verdict: Equatable {
        case send
        case declined
        /// Refused without a terminal; the text says what was found.
        case refused(String)
    }

    public static func check(_ text: String, what subject: String, interactive: Bool, allowed: Bool) -> Verdict {
        let findings = SecretScanner.findings(in: text)
        guard !findings.isEmpty, !allowed else { return .send }
        let what = "the \(subject) contains what looks like " + findings.map(\.description).joined(separator: ", ")
        guard interactive else { return .refused(what) }
        Console.warning(what)
        return TerminalQuestion.confirm("Send it to Gemini anyway?") ? .send : .declined
    }
}

/// Finds text that looks like a credential before it is sent to a model, the way GitHub's push
/// protection looks at a commit: Google API keys and the common token formats, private keys,
/// Google credential files (a service account's key file, the refresh token of gcloud's
/// application-default credentials) and gemvault's own recovery code.
public enum SecretScanner {
    public struct Finding: Sendable, Equatable {
        /// "a GitHub token"
        public let kind: String
        /// The first and last four characters only.
        public let masked: String

        public var description: String { "\(kind) (\(masked))" }
    }

    struct Shape: Sendable {
        let kind: String
        let prefixes: [String]
        /// Characters after the prefix.
        let length: ClosedRange<Int>
        let body: @Sendable (UInt8) -> Bool
    }

    static let shapes: [Shape] = [
        Shape(kind: "a GitHub token", prefixes: ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], length: 36...255, body: isAlphanumeric),
        Shape(kind: "a GitHub token", prefixes: ["github_pat_"], length: 22...255, body: isTokenCharacter),
        Shape(kind: "an OpenAI key", prefixes: ["sk-proj-", "sk-svcacct-", "sk-admin-"], length: 20...255, body: isTokenCharacter),
        Shape(kind: "an OpenAI key", prefixes: ["sk-"], length: 32...255, body: isAlphanumeric),
        Shape(kind: "an AWS access key", prefixes: ["AKIA", "ASIA"], length: 16...16, body: isUpperAlphanumeric),
        Shape(kind: "a Slack token", prefixes: ["xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xapp-"], length: 10...255, body: isTokenCharacter),
    ]

    /// Every credential-shaped thing in `text`, masked.
    public static func findings(in text: String) -> [Finding] {
        let bytes = Array(text.utf8)
        // Google's keys by their one definition: auth keys hold dots, which end other tokens.
        var found = GoogleKeyShape.keys(in: bytes).map { match in
            Finding(kind: match.kind == .auth ? "a Google auth key" : "a Google API key", masked: mask(bytes[match.range]))
        }
        found += GoogleKeyShape.accessTokens(in: bytes).map { Finding(kind: "a Google access token", masked: mask(bytes[$0])) }
        for token in tokens(in: bytes) {
            for shape in shapes {
                guard let prefix = shape.prefixes.first(where: { token.starts(with: Array($0.utf8)) }) else { continue }
                let body = token.dropFirst(prefix.utf8.count)
                if shape.length.contains(body.count) && body.allSatisfy(shape.body) {
                    found.append(Finding(kind: shape.kind, masked: mask(token)))
                    break
                }
            }
        }
        let pemHeader = text.split(whereSeparator: \.isNewline).contains { line in
            let trimmed = line.trimmingSpaces
            return trimmed.hasPrefix("-----BEGIN ") && trimmed.hasSuffix("PRIVATE KEY-----")
        }
        if pemHeader {
            found.append(Finding(kind: "a private key", masked: "-----BEGIN … PRIVATE KEY-----"))
        }
        // Credential files hold their secrets as JSON strings, where a PEM block is one line.
        if jsonStrings(named: "private_key", in: bytes).contains(where: { $0.starts(with: Array("-----BEGIN".utf8)) }) {
            found.append(Finding(kind: "a service account's private key (\"private_key\")", masked: "-----BEGIN … PRIVATE KEY-----"))
        }
        for token in jsonStrings(named: "refresh_token", in: bytes) where token.count >= 8 {
            found.append(Finding(kind: "an OAuth refresh token (\"refresh_token\", as in gcloud's credentials)", masked: mask(token)))
        }
        for token in tokens(in: bytes) where isRecoveryCode(token) {
            found.append(Finding(kind: "a gemvault recovery code", masked: mask(token)))
        }
        return found
    }

    /// Eight groups of four Crockford base32 characters, as `init` shows the recovery code.
    static func isRecoveryCode(_ token: ArraySlice<UInt8>) -> Bool {
        let groups = token.split(separator: 0x2d, omittingEmptySubsequences: false)
        let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
        return groups.count == 8 && groups.allSatisfy { group in
            group.count == 4 && group.allSatisfy { alphabet.contains($0 >= 0x61 && $0 <= 0x7a ? $0 - 0x20 : $0) }
        }
    }

    /// The string values of every `"name": "…"` in JSON-shaped text (escapes left as they are).
    static func jsonStrings(named name: String, in bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        let needle = Array("\"\(name)\"".utf8)
        var values: [ArraySlice<UInt8>] = []
        var index = 0
        while index + needle.count <= bytes.count {
            guard bytes[index..<index + needle.count].elementsEqual(needle) else { index += 1; continue }
            var cursor = index + needle.count
            index = cursor
            func skipSpace() { while cursor < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[cursor]) { cursor += 1 } }
            skipSpace()
            guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: ":") else { continue }
            cursor += 1
            skipSpace()
            guard cursor < bytes.count, bytes[cursor] == UInt8(ascii: "\"") else { continue }
            let start = cursor + 1
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: "\"") { end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1 }
            values.append(bytes[start..<min(end, bytes.count)])
            index = min(end, bytes.count)
        }
        return values
    }

    /// Maximal runs of characters that can appear in a token.
    static func tokens(in bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var result: [ArraySlice<UInt8>] = []
        var start: Int?
        for index in 0...bytes.count {
            let inside = index < bytes.count && isTokenCharacter(bytes[index])
            if inside, start == nil { start = index }
            if !inside, let first = start {
                result.append(bytes[first..<index])
                start = nil
            }
        }
        return result
    }

    static func mask(_ token: ArraySlice<UInt8>) -> String {
        String(decoding: token.prefix(4), as: UTF8.self) + "…" + String(decoding: token.suffix(4), as: UTF8.self)
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
    }

    static func isUpperAlphanumeric(_ byte: UInt8) -> Bool { (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) }

    static func isTokenCharacter(_ byte: UInt8) -> Bool { isAlphanumeric(byte) || byte == 0x2d || byte == 0x5f }
}

private extension Substring {
    var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" || text.first == "\r" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" || text.last == "\r" { text = text.dropLast() }
        return text
    }
}
