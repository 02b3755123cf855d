/// age's ASCII armor: strict PEM with the label `AGE ENCRYPTED FILE`, padded base64 in lines of 64.
enum AgeArmor {
    static let begin = Array("-----BEGIN AGE ENCRYPTED FILE-----".utf8)
    static let end = Array("-----END AGE ENCRYPTED FILE-----".utf8)
    private static let columns = 64
    // A function, not a Set: a Set<UInt8>'s first use costs a runtime type lookup on every unlock.
    private static func whitespace(_ byte: UInt8) -> Bool { byte == 32 || byte == 9 || byte == 10 || byte == 13 }

    /// Whether `file` (after leading whitespace) starts as an armored file.
    static func isArmored(_ file: [UInt8]) -> Bool {
        file.drop(while: { whitespace($0) }).starts(with: Array("-----BEGIN".utf8))
    }

    static func armored(_ binary: [UInt8]) -> [UInt8] {
        let encoded = Array(StrictBase64.encode(binary, padded: true).utf8)
        var text = begin + [10]
        var start = 0
        while start < encoded.count {
            let stop = min(start + columns, encoded.count)
            text += encoded[start..<stop] + [10]
            start = stop
        }
        return text + end + [10]
    }

    /// The binary file inside the armor: whitespace may surround the block, nothing else; every
    /// line but the last is full; CRLF line ends are accepted.
    static func binary(_ file: [UInt8]) throws(AgeError) -> [UInt8] {
        let trimmed = file.drop(while: { whitespace($0) }).reversed().drop(while: { whitespace($0) }).reversed()
        var lines = Array(trimmed).split(separator: 10, omittingEmptySubsequences: false).map { $0.last == 13 ? Array($0.dropLast()) : Array($0) }
        guard lines.first == begin else { throw AgeError(.armor, "the armor does not begin with \(String(decoding: begin, as: UTF8.self))") }
        guard lines.count >= 2, lines.last == end else { throw AgeError(.armor, "the armor does not end with \(String(decoding: end, as: UTF8.self))") }
        lines = Array(lines.dropFirst().dropLast())
        for (index, line) in lines.enumerated() {
            let isLast = index == lines.count - 1
            guard isLast ? (1...columns).contains(line.count) : line.count == columns else {
                throw AgeError(.armor, "armor line \(index + 2) is \(line.count) columns; every line but the last has \(columns)")
            }
        }
        guard let binary = StrictBase64.decode(Array(lines.joined()), padded: true) else {
            throw AgeError(.armor, "the armor's base64 is not canonical padded base64")
        }
        return binary
    }
}
