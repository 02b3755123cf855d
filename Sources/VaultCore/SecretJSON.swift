import FoundationEssentials

/// A JSON document that may carry secrets (a token answer, a finished create operation, a
/// credential file): the values of the named fields are taken out into `SecretBytes`, and
/// the rest, with those values emptied, is an ordinary JSON text to decode. No secret is ever
/// in a Swift `String` or `Data`.
public struct SecretJSON {
    /// The document without the secrets: each taken value is the empty string here.
    public let plain: [UInt8]
    /// The taken values, JSON escapes resolved, by field name (the first occurrence wins).
    public let secrets: [String: SecretBytes]

    /// Scans `document` (UTF-8 JSON). Returns nil when it is not one well-formed JSON text's
    /// worth of strings: an unterminated string, or a bad escape inside a secret.
    public static func split(_ document: SecretBytes, secretFields: Set<String>) -> SecretJSON? {
        document.withUnsafeBytes { split($0, secretFields: secretFields) }
    }

    public static func split(_ bytes: UnsafeRawBufferPointer, secretFields: Set<String>) -> SecretJSON? {
        var plain: [UInt8] = []
        plain.reserveCapacity(bytes.count)
        var secrets: [String: SecretBytes] = [:]
        var index = 0
        /// The last string seen and whether a ':' followed it: it names the next value.
        var pendingName: String?
        var lastString: String?
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                guard let end = stringEnd(bytes, from: index) else { return nil }
                if let name = pendingName, secretFields.contains(name) {
                    guard let value = unescape(bytes, from: index + 1, to: end) else { return nil }
                    if secrets[name] == nil { secrets[name] = value }
                    plain += [UInt8(ascii: "\""), UInt8(ascii: "\"")]
                    pendingName = nil
                    lastString = nil
                } else {
                    plain += bytes[index...end]
                    // Names are plain ASCII in every document read here.
                    lastString = String(decoding: bytes[(index + 1)..<end], as: UTF8.self)
                    pendingName = nil
                }
                index = end + 1
                continue
            }
            if byte == UInt8(ascii: ":") {
                pendingName = lastString
                lastString = nil
            } else if !(byte == 0x20 || byte == 0x0a || byte == 0x0d || byte == 0x09) {
                pendingName = nil
                lastString = nil
            }
            plain.append(byte)
            index += 1
        }
        return SecretJSON(plain: plain, secrets: secrets)
    }

    /// The index of the quote that closes the string opening at `start`.
    private static func stringEnd(_ bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index
            default: index += 1
            }
        }
        return nil
    }

    /// The string's content with its escapes resolved, straight into secret memory.
    private static func unescape(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> SecretBytes? {
        let out = SecretBytes(count: max(end - start, 1))
        var length = 0
        let ok: Bool = out.withUnsafeMutableBytes { target in
            var index = start
            while index < end {
                var byte = bytes[index]
                if byte == UInt8(ascii: "\\") {
                    guard index + 1 < end else { return false }
                    index += 1
                    switch bytes[index] {
                    case UInt8(ascii: "n"): byte = 0x0a
                    case UInt8(ascii: "r"): byte = 0x0d
                    case UInt8(ascii: "t"): byte = 0x09
                    case UInt8(ascii: "b"): byte = 0x08
                    case UInt8(ascii: "f"): byte = 0x0c
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): byte = bytes[index]
                    case UInt8(ascii: "u"):
                        // Only ASCII escapes (`\u003d` for '='): secrets here are ASCII.
                        guard index + 4 < end else { return false }
                        var value: UInt32 = 0
                        for offset in 1...4 {
                            guard let digit = hexDigit(bytes[index + offset]) else { return false }
                            value = value << 4 | digit
                        }
                        guard value < 0x80 else { return false }
                        byte = UInt8(value)
                        index += 4
                    default: return false
                    }
                }
                target[length] = byte
                length += 1
                index += 1
            }
            return true
        }
        guard ok else { return nil }
        out.truncate(to: length)
        return out
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x30...0x39: UInt32(byte - 0x30)
        case 0x41...0x46: UInt32(byte - 0x41 + 10)
        case 0x61...0x66: UInt32(byte - 0x61 + 10)
        default: nil
        }
    }

    /// Decodes the plain part.
    public func decode<T: Decodable>(_ type: T.Type) -> T? {
        try? JSONDecoder().decode(type, from: Data(plain))
    }
}

/// Any JSON value, kept as it came: a key's restrictions are copied into the new key unchanged.
public indirect enum JSONValue: Codable, Sendable, Equatable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSONValue].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSONValue].self)) }
    }

    public func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

    public var isEmptyObject: Bool { if case .object(let members) = self { members.isEmpty } else { false } }

    /// An object's member; nil for anything else.
    public subscript(member: String) -> JSONValue? { if case .object(let members) = self { members[member] } else { nil } }

    public var stringValue: String? { if case .string(let value) = self { value } else { nil } }
}
