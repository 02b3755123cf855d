import VaultCore

/// Percent-encoding (RFC 3986: all but the unreserved bytes) for query parameters and form
/// bodies, into secret memory when the text is secret.
public enum PercentEncoding {
    static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
            || byte == 0x2d || byte == 0x2e || byte == 0x5f || byte == 0x7e
    }

    private static let hex = Array("0123456789ABCDEF".utf8)

    public static func encode(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            if isUnreserved(byte) { out.append(byte) } else { out += [0x25, hex[Int(byte >> 4)], hex[Int(byte & 15)]] }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parts joined into secret memory; each part is literal text or a secret to encode.
    public enum Part {
        case literal(String)
        case encoded(SecretBytes)
    }

    public static func join(_ parts: [Part]) -> SecretBytes {
        var length = 0
        for part in parts {
            switch part {
            case .literal(let text): length += text.utf8.count
            case .encoded(let secret): length += secret.withUnsafeBytes { $0.reduce(0) { $0 + (isUnreserved($1) ? 1 : 3) } }
            }
        }
        let out = SecretBytes(count: max(length, 1))
        out.withUnsafeMutableBytes { target in
            var offset = 0
            for part in parts {
                switch part {
                case .literal(let text):
                    for byte in text.utf8 { target[offset] = byte; offset += 1 }
                case .encoded(let secret):
                    secret.withUnsafeBytes { source in
                        for byte in source {
                            if isUnreserved(byte) { target[offset] = byte; offset += 1 }
                            else {
                                target[offset] = 0x25; target[offset + 1] = hex[Int(byte >> 4)]; target[offset + 2] = hex[Int(byte & 15)]
                                offset += 3
                            }
                        }
                    }
                }
            }
        }
        out.truncate(to: length)
        return out
    }
}

/// Base64url without padding (RFC 7515), for JWTs.
public enum Base64URL {
    public static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out: [UInt8] = []
        var index = 0
        while index + 2 < bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let n = UInt32(bytes[index]) << 16
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)]]
        } else if rest == 2 {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [alphabet[Int(n >> 18 & 63)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum Secret Manager sends with
/// every payload (`dataCrc32c`, a decimal string).
public enum CRC32C {
    private static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? (value >> 1) ^ 0x82F6_3B78 : value >> 1 }
        return value
    }

    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xff)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}
