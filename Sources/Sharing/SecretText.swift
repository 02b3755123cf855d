import VaultCore

/// Text that may hold a secret, assembled from plain parts and secret ones straight into
/// secret memory: a share's JSON and its signed bytes carry the key.
struct SecretText {
    private enum Part {
        case plain([UInt8])
        case secret(SecretBytes)
    }

    private var parts: [Part] = []

    mutating func append(_ text: String) { parts.append(.plain(Array(text.utf8))) }
    mutating func append(secret: SecretBytes) { parts.append(.secret(secret)) }

    /// `text` as a JSON string, quotes included.
    mutating func appendJSONString(_ text: String) { parts.append(.plain(JSONString.quoted(Array(text.utf8)))) }

    /// A secret as a JSON string, escaped in secret memory.
    mutating func appendJSONString(secret: SecretBytes) {
        let escaped = secret.withUnsafeBytes { raw in
            let length = raw.reduce(2) { $0 + JSONString.escapedLength(of: $1) }
            let out = SecretBytes(count: length)
            out.withUnsafeMutableBytes { target in
                var index = 0
                target[index] = UInt8(ascii: "\"")
                index += 1
                for byte in raw { index = JSONString.writeEscaped(byte, into: target, at: index) }
                target[index] = UInt8(ascii: "\"")
            }
            return out
        }
        parts.append(.secret(escaped))
    }

    /// A length-prefixed field (u32, big-endian) for signed bytes: no two field lists encode alike.
    mutating func appendField(_ text: String) { appendField(bytes: Array(text.utf8)) }

    mutating func appendField(bytes: [UInt8]) {
        parts.append(.plain(Self.lengthPrefix(bytes.count) + bytes))
    }

    mutating func appendField(secret: SecretBytes) {
        parts.append(.plain(Self.lengthPrefix(secret.count)))
        parts.append(.secret(secret))
    }

    private static func lengthPrefix(_ count: Int) -> [UInt8] {
        let length = UInt32(count)
        return [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)]
    }

    func assembled() -> SecretBytes {
        let length = parts.reduce(0) { total, part in
            switch part {
            case .plain(let bytes): total + bytes.count
            case .secret(let secret): total + secret.count
            }
        }
        let out = SecretBytes(count: length)
        out.withUnsafeMutableBytes { target in
            var offset = 0
            for part in parts {
                switch part {
                case .plain(let bytes):
                    bytes.withUnsafeBytes { if $0.count > 0 { (target.baseAddress! + offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
                    offset += bytes.count
                case .secret(let secret):
                    secret.withUnsafeBytes { if $0.count > 0 { (target.baseAddress! + offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
                    offset += secret.count
                }
            }
        }
        return out
    }
}

/// JSON string escaping (RFC 8259 §7): quotes, backslashes and control characters.
enum JSONString {
    static func escapedLength(of byte: UInt8) -> Int {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): 2
        case 0..<0x20, 0x7f: 6
        default: 1
        }
    }

    /// Writes `byte` escaped at `index`; returns the index after it.
    static func writeEscaped(_ byte: UInt8, into target: UnsafeMutableRawBufferPointer, at index: Int) -> Int {
        let hex = Array("0123456789abcdef".utf8)
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"):
            target[index] = UInt8(ascii: "\\")
            target[index + 1] = byte
            return index + 2
        case 0..<0x20, 0x7f:
            for (offset, character) in Array("\\u00".utf8).enumerated() { target[index + offset] = character }
            target[index + 4] = hex[Int(byte >> 4)]
            target[index + 5] = hex[Int(byte & 15)]
            return index + 6
        default:
            target[index] = byte
            return index + 1
        }
    }

    static func quoted(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: bytes.reduce(2) { $0 + escapedLength(of: $1) })
        out.withUnsafeMutableBytes { target in
            var index = 0
            target[index] = UInt8(ascii: "\"")
            index += 1
            for byte in bytes { index = writeEscaped(byte, into: target, at: index) }
            target[index] = UInt8(ascii: "\"")
        }
        return out
    }
}

extension SecretText {
    /// The fields every share signs after its own: serial, time, the sender and, when listed,
    /// the recipients (a count, then each).
    mutating func appendSignedTail(serial: UInt64, created: Int64, sender: ShareSender, recipients: [String]?) {
        appendField(String(serial))
        appendField(String(created))
        appendField(sender.label)
        appendField(bytes: sender.signingKey)
        if let recipients {
            appendField(String(recipients.count))
            for recipient in recipients { appendField(recipient) }
        }
    }

    /// The JSON every share ends with: serial, time, sender, the recipients when listed, the
    /// signature, the closing brace and a newline.
    mutating func appendJSONTail(serial: UInt64, created: Int64, sender: ShareSender, recipients: [String]?, signature: [UInt8]) {
        append(",\"serial\":\(serial),\"created\":\(created),\"from\":{\"label\":")
        appendJSONString(sender.label)
        append(",\"signing_key\":")
        appendJSONString(Sodium.base64(sender.signingKey))
        append("}")
        if let recipients {
            append(",\"recipients\":[")
            for (index, recipient) in recipients.enumerated() {
                if index > 0 { append(",") }
                appendJSONString(recipient)
            }
            append("]")
        }
        append(",\"signature\":")
        appendJSONString(Sodium.base64(signature))
        append("}\n")
    }
}
