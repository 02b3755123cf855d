/// What kind of Google credential a value is. Since September 2026 the Gemini API accepts
/// only auth keys; standard keys are refused (../Docs/configuration.md, "Two kinds of key").
public enum GoogleKeyKind: String, Sendable, CaseIterable, Encodable {
    /// `AQ.…`: bound to a service account, made by AI Studio since 2026.
    case auth
    /// `AIza…`: retired by Google for the Gemini API.
    case standard
    /// Neither shape (a proxy's token, a test value, a typo).
    case other

    /// Google no longer accepts this kind for the Gemini API.
    public var isRetired: Bool { self == .standard }

    /// "auth", "standard (retired)", "other": for tables.
    public var label: String { isRetired ? "standard (retired)" : rawValue }
}

/// The one definition of Google's credential shapes: input checks, the prompt scanner,
/// redaction, doctor and the key listings all ask here.
public enum GoogleKeyShape {
    public static let authPrefix = Array("AQ.".utf8)
    /// Every auth key seen so far has 53 characters; Google documents no length, so anything
    /// from 40 up is taken as one (the upper bound only keeps a scan of a huge token cheap).
    public static let authLength: ClosedRange<Int> = 40...512
    public static let standardPrefix = Array("AIza".utf8)
    /// `AIza` and 35 more.
    public static let standardLength = 39
    /// OAuth access tokens (`ya29.…`), which a Google credential can be exchanged for.
    public static let accessTokenPrefix = Array("ya29.".utf8)

    /// The kind of a whole value (already trimmed). Reads the bytes in place: a key is
    /// never copied into ordinary memory to be classified.
    public static func kind<Bytes: BidirectionalCollection<UInt8>>(of value: Bytes) -> GoogleKeyKind {
        if isStandardKey(value) { return .standard }
        if isAuthKey(value) { return .auth }
        return .other
    }

    /// The kind a value of no known shape was meant to be, when it starts like one but is
    /// shorter: a paste cut short. Nil otherwise.
    public static func cutShortKind<Bytes: BidirectionalCollection<UInt8>>(of value: Bytes) -> GoogleKeyKind? {
        if value.starts(with: authPrefix), value.count < authLength.lowerBound { return .auth }
        if value.starts(with: standardPrefix), value.count < standardLength { return .standard }
        return nil
    }

    /// A found credential: where it is in the text, and what it is.
    public struct Match: Sendable, Equatable {
        public let range: Range<Int>
        public let kind: GoogleKeyKind
    }

    /// Every whole auth or standard key inside `text`, starting at a word boundary.
    public static func keys(in text: [UInt8]) -> [Match] {
        var found: [Match] = []
        var index = 0
        while index < text.count {
            guard startsWord(text, at: index) else { index += 1; continue }
            if hasPrefix(text, standardPrefix, at: index) {
                let end = index + standardLength
                if end <= text.count, isStandardKey(text[index..<end]), end == text.count || !isURLSafe(text[end]) {
                    found.append(Match(range: index..<end, kind: .standard))
                    index = end
                    continue
                }
            }
            if hasPrefix(text, authPrefix, at: index) {
                let end = tokenEnd(text, from: index + authPrefix.count)
                if isAuthKey(text[index..<end]) {
                    found.append(Match(range: index..<end, kind: .auth))
                    index = end
                    continue
                }
            }
            index += 1
        }
        return found
    }

    /// Every OAuth access token (`ya29.` and at least 20 more characters) inside `text`.
    public static func accessTokens(in text: [UInt8]) -> [Range<Int>] {
        var found: [Range<Int>] = []
        var index = 0
        while index < text.count {
            if startsWord(text, at: index), hasPrefix(text, accessTokenPrefix, at: index) {
                let end = tokenEnd(text, from: index + accessTokenPrefix.count)
                if end - index - accessTokenPrefix.count >= 20 {
                    found.append(index..<end)
                    index = end
                    continue
                }
            }
            index += 1
        }
        return found
    }

    /// Where text holds anything that may be a Google credential or a piece of one: a word
    /// that starts with a key's or a token's prefix followed by at least `minimumBody`
    /// URL-safe characters. Wider than `keys(in:)` on purpose: servers quote keys in part,
    /// and hiding a harmless word costs less than showing a key.
    public static func credentialRanges(in text: [UInt8], minimumBody: Int) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var index = 0
        while index < text.count {
            guard startsWord(text, at: index),
                  let prefix = [standardPrefix, authPrefix, accessTokenPrefix].first(where: { hasPrefix(text, $0, at: index) }) else {
                index += 1
                continue
            }
            let bodyStart = index + prefix.count
            var bodyEnd = bodyStart
            while bodyEnd < text.count, isURLSafe(text[bodyEnd]) { bodyEnd += 1 }
            guard bodyEnd - bodyStart >= minimumBody else { index += 1; continue }
            let end = tokenEnd(text, from: bodyStart)
            ranges.append(index..<end)
            index = end
        }
        return ranges
    }

    /// `text` with every `credentialRanges` match replaced by `replacement`.
    public static func redacting(_ text: [UInt8], minimumBody: Int, replacement: [UInt8]) -> [UInt8]? {
        let ranges = credentialRanges(in: text, minimumBody: minimumBody)
        guard !ranges.isEmpty else { return nil }
        var result: [UInt8] = []
        result.reserveCapacity(text.count)
        var next = 0
        for range in ranges {
            result += text[next..<range.lowerBound]
            result += replacement
            next = range.upperBound
        }
        result += text[next...]
        return result
    }

    // MARK: Pieces

    static func isStandardKey<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Bool {
        bytes.count == standardLength && bytes.starts(with: standardPrefix) && bytes.dropFirst(standardPrefix.count).allSatisfy(isURLSafe)
    }

    /// `AQ.`, then URL-safe characters with single dots inside (never at the end).
    static func isAuthKey<Bytes: BidirectionalCollection<UInt8>>(_ bytes: Bytes) -> Bool {
        guard authLength.contains(bytes.count), bytes.starts(with: authPrefix) else { return false }
        let body = bytes.dropFirst(authPrefix.count)
        guard let first = body.first, let last = body.last, isURLSafe(first), isURLSafe(last) else { return false }
        var previousWasDot = false
        for byte in body {
            if byte == UInt8(ascii: ".") {
                if previousWasDot { return false }
                previousWasDot = true
            } else if isURLSafe(byte) {
                previousWasDot = false
            } else {
                return false
            }
        }
        return true
    }

    /// `A–Z a–z 0–9 - _`
    public static func isURLSafe(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x2D || byte == 0x5F
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool { isURLSafe(byte) && byte != 0x2D && byte != 0x5F }

    /// A prefix counts only where a word starts: `xAIza…` is not a key, `key=AIza…` is.
    static func startsWord(_ text: [UInt8], at index: Int) -> Bool { index == 0 || !isAlphanumeric(text[index - 1]) }

    static func hasPrefix(_ text: [UInt8], _ prefix: [UInt8], at index: Int) -> Bool {
        index + prefix.count <= text.count && text[index..<index + prefix.count].elementsEqual(prefix)
    }

    /// The end of a run of URL-safe characters and inner dots from `start`; a dot that ends a
    /// sentence is not part of the token.
    static func tokenEnd(_ text: [UInt8], from start: Int) -> Int {
        var end = start
        while end < text.count, isURLSafe(text[end]) || text[end] == UInt8(ascii: ".") { end += 1 }
        while end > start, text[end - 1] == UInt8(ascii: ".") { end -= 1 }
        return end
    }
}
