/// JSON with comments and trailing commas (JSONC: VS Code's and Zed's settings), parsed into a
/// tree that records where each value lies in the bytes. `mcp wrap` edits byte ranges of the
/// file through it, so every byte it does not mean to change stays as it was.
public indirect enum JSONCValue: Equatable, Sendable {
    case object([JSONMember], span: Range<Int>)
    case array([JSONCValue], span: Range<Int>)
    case string(String, span: Range<Int>)
    /// A number, true, false or null, as written.
    case scalar(String, span: Range<Int>)

    public var span: Range<Int> {
        switch self {
        case .object(_, let span), .array(_, let span), .string(_, let span), .scalar(_, let span): span
        }
    }

    public var members: [JSONMember]? { if case .object(let members, _) = self { members } else { nil } }
    public var elements: [JSONCValue]? { if case .array(let elements, _) = self { elements } else { nil } }
    public var text: String? { if case .string(let text, _) = self { text } else { nil } }

    /// The last member named `key` (JSON's own rule for duplicates is loose; the last one wins in every client).
    public subscript(key: String) -> JSONCValue? { members?.last { $0.key == key }?.value }
}

public struct JSONMember: Equatable, Sendable {
    public let key: String
    /// From the key's opening quote to the value's end.
    public let span: Range<Int>
    public let value: JSONCValue
}

public struct JSONCError: Error, Equatable, Sendable {
    public let offset: Int
    public let reason: String
}

public struct JSONCParser {
    private let bytes: [UInt8]
    private var position = 0
    private var depth = 0
    static let depthLimit = 256

    public static func parse(_ bytes: [UInt8]) throws(JSONCError) -> JSONCValue {
        var parser = JSONCParser(bytes: bytes)
        parser.skipBlank()
        // A UTF-8 byte order mark is allowed before it.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { parser.position = 3; parser.skipBlank() }
        let value = try parser.value()
        parser.skipBlank()
        guard parser.position == bytes.count else { throw parser.failure("text after the end of the document") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

    private func failure(_ reason: String) -> JSONCError { JSONCError(offset: position, reason: reason) }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    /// White space, `// …` and `/* … */`.
    private mutating func skipBlank() {
        while let byte = current {
            if byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d { position += 1; continue }
            guard byte == 0x2f, position + 1 < bytes.count else { return }
            if bytes[position + 1] == 0x2f {
                while let next = current, next != 0x0a { position += 1; _ = next }
            } else if bytes[position + 1] == 0x2a {
                position += 2
                while position + 1 < bytes.count, !(bytes[position] == 0x2a && bytes[position + 1] == 0x2f) { position += 1 }
                position = min(position + 2, bytes.count)
            } else {
                return
            }
        }
    }

    private mutating func value() throws(JSONCError) -> JSONCValue {
        guard let byte = current else { throw failure("the document ends where a value should be") }
        switch byte {
        case UInt8(ascii: "{"): return try container(object: true)
        case UInt8(ascii: "["): return try container(object: false)
        case UInt8(ascii: "\""):
            let start = position
            let text = try string()
            return .string(text, span: start..<position)
        default:
            let start = position
            while let next = current, !(next == 0x2c || next == 0x7d || next == 0x5d || next == 0x2f || next <= 0x20) { position += 1 }
            let word = String(decoding: bytes[start..<position], as: UTF8.self)
            guard !word.isEmpty, word == "true" || word == "false" || word == "null" || Double(word) != nil else {
                throw JSONCError(offset: start, reason: "not a JSON value")
            }
            return .scalar(word, span: start..<position)
        }
    }

    private mutating func container(object: Bool) throws(JSONCError) -> JSONCValue {
        let start = position
        depth += 1
        guard depth <= Self.depthLimit else { throw failure("nested too deeply") }
        defer { depth -= 1 }
        position += 1
        var members: [JSONMember] = []
        var elements: [JSONCValue] = []
        let close = object ? UInt8(ascii: "}") : UInt8(ascii: "]")
        while true {
            skipBlank()
            if current == close { position += 1; break }
            if object {
                guard current == UInt8(ascii: "\"") else { throw failure("a member name should be here") }
                let keyStart = position
                let key = try string()
                skipBlank()
                guard current == UInt8(ascii: ":") else { throw failure("':' should follow a member name") }
                position += 1
                skipBlank()
                let value = try value()
                members.append(JSONMember(key: key, span: keyStart..<value.span.upperBound, value: value))
            } else {
                elements.append(try value())
            }
            skipBlank()
            if current == UInt8(ascii: ",") { position += 1; continue }
            guard current == close else { throw failure("',' or the end of the \(object ? "object" : "array") should be here") }
        }
        return object ? .object(members, span: start..<position) : .array(elements, span: start..<position)
    }

    /// A string with its escapes decoded; the position ends after its closing quote.
    private mutating func string() throws(JSONCError) -> String {
        position += 1
        var decoded: [UInt8] = []
        while let byte = current {
            position += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: decoded, as: UTF8.self) else { throw failure("a string is not UTF-8") }
                return text
            case UInt8(ascii: "\\"):
                try escape(into: &decoded)
            case 0..<0x20:
                throw failure("a control character in a string")
            default:
                decoded.append(byte)
            }
        }
        throw failure("a string is not closed")
    }

    private mutating func escape(into decoded: inout [UInt8]) throws(JSONCError) {
        guard let byte = current else { throw failure("a string is not closed") }
        position += 1
        let simple: [UInt8: UInt8] = [0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09]
        if let plain = simple[byte] { decoded.append(plain); return }
        guard byte == UInt8(ascii: "u") else { throw failure("an unknown escape in a string") }
        var scalar = try hex4()
        if (0xD800..<0xDC00).contains(scalar), current == 0x5c, position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "u") {
            position += 2
            let low = try hex4()
            guard (0xDC00..<0xE000).contains(low) else { throw failure("a broken surrogate pair") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw failure("a broken surrogate pair") }
        decoded += Array(String(Character(unicode)).utf8)
    }

    private mutating func hex4() throws(JSONCError) -> UInt32 {
        guard position + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[position..<position + 4], as: UTF8.self), radix: 16) else {
            throw failure("a \\u escape needs four hex digits")
        }
        position += 4
        return value
    }
}

/// JSON text for a value gemvault writes into a config file.
public enum JSONText {
    public static func string(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20: out += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count) + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
