/// "Did you mean …?" for a mistyped command, subcommand or option.
public enum Suggestion {
    /// The candidate closest to `word` by edit distance (transpositions count once), when it
    /// is close enough to be a typo.
    public static func nearest(_ word: String, among candidates: [String]) -> String? {
        if let meant = synonyms[word], candidates.contains(meant) { return meant }
        let scored = candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= max(2, min(3, $0.0.count / 3)) && $0.1 < $0.0.count }
        return scored.min { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }?.0
    }

    /// Words other tools use for the same thing.
    static let synonyms = ["show": "get", "print": "get", "cat": "get", "ls": "list", "delete": "rm", "remove": "rm",
                           "add": "set", "put": "set", "new": "init", "create": "init"]

    /// Optimal string alignment distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1) }
            }
        }
        return table[a.count][b.count]
    }
}
