import VaultCore

extension MCPWrapPlan {
    /// What `--dry-run` prints: the changed lines, old with `-` and new with `+`, between the
    /// lines both share, with every secret-shaped value shown masked, moved or not.
    public var diff: String {
        let header = "--- \(snapshot.file.path)\n+++ \(snapshot.file.path) (wrapped)\n"
        // Unparsed, its secrets could not be found to mask: nothing of it is shown.
        guard let rewrittenRoot = try? JSONCParser.parse(rewritten) else { return header + "(the rewritten file does not parse; not shown)\n" }
        let old = Self.lines(Self.secretsMasked(snapshot.bytes, snapshot.root)), new = Self.lines(Self.secretsMasked(rewritten, rewrittenRoot))
        var prefix = 0
        while prefix < min(old.count, new.count), old[prefix] == new[prefix] { prefix += 1 }
        var suffix = 0
        while suffix < min(old.count, new.count) - prefix, old[old.count - 1 - suffix] == new[new.count - 1 - suffix] { suffix += 1 }
        var out = header + "@@ line \(prefix + 1) @@\n"
        out += old[prefix..<(old.count - suffix)].map { "-" + $0 + "\n" }.joined()
        out += new[prefix..<(new.count - suffix)].map { "+" + $0 + "\n" }.joined()
        return out
    }

    static func lines(_ bytes: [UInt8]) -> [String] {
        String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// `bytes` (parsed as `root`) with every secret-shaped string of its servers (environment and
    /// headers) replaced, by its byte range, with its masked form: however the JSON spells a
    /// value (`\/`, `\u…`), none reaches the screen.
    static func secretsMasked(_ bytes: [UInt8], _ root: JSONCValue) -> [UInt8] {
        let spans = MCPServer.all(in: root).flatMap { server in
            (server.environment + server.headers).compactMap { member -> (Range<Int>, String)? in
                guard let text = member.value.text, SecretShape.of(text) != nil else { return nil }
                return (member.value.span, SecretBytes(utf8: text).masked)
            }
        }
        var masked = bytes
        for (span, shown) in spans.sorted(by: { $0.0.lowerBound > $1.0.lowerBound }) where span.upperBound <= masked.count {
            masked.replaceSubrange(span, with: Array(JSONText.string(shown).utf8))
        }
        return masked
    }
}

extension String {
    /// Every occurrence of `target` replaced, without Foundation.
    func replacingAll(_ target: String, with replacement: String) -> String {
        guard !target.isEmpty else { return self }
        var result = "", rest = Substring(self)
        while let range = rest.firstRange(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}
