/// The recovery code: 160 random bits in Crockford base32, eight groups of four for reading aloud.
public enum RecoveryCode {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)
    static let characters = 32

    /// A fresh code such as `7K2M-9QXD-...`, in secret memory.
    public static func generate() -> SecretBytes {
        let random = SecretBytes.random(count: 20)
        let code = SecretBytes(count: characters + characters / 4 - 1)
        random.withUnsafeBytes { bits in
            code.withUnsafeMutableBytes { out in
                var position = 0
                for index in 0..<characters {
                    if index > 0 && index % 4 == 0 { out[position] = UInt8(ascii: "-"); position += 1 }
                    // Each character takes the next 5 bits of the 160.
                    let bit = index * 5
                    let pair = (UInt16(bits[bit / 8]) << 8) | UInt16(bit / 8 + 1 < bits.count ? bits[bit / 8 + 1] : 0)
                    let value = Int((pair >> (11 - UInt16(bit % 8))) & 0x1f)
                    out[position] = alphabet[value]
                    position += 1
                }
            }
        }
        return code
    }

    /// The canonical form of a typed code: upper case, separators dropped, O read as 0 and I or L as 1.
    /// Returns nil when what remains is not 32 base32 characters.
    public static func normalize(_ typed: SecretBytes) -> SecretBytes? {
        let canonical = SecretBytes(count: characters)
        let valid: Bool = typed.withUnsafeBytes { input in
            canonical.withUnsafeMutableBytes { out in
                var count = 0
                for var byte in input {
                    if byte == UInt8(ascii: "-") || byte == UInt8(ascii: " ") || byte == 0x0a || byte == 0x0d || byte == 0x09 { continue }
                    if byte >= 0x61 && byte <= 0x7a { byte -= 0x20 }
                    if byte == UInt8(ascii: "O") { byte = UInt8(ascii: "0") }
                    if byte == UInt8(ascii: "I") || byte == UInt8(ascii: "L") { byte = UInt8(ascii: "1") }
                    guard alphabet.contains(byte), count < characters else { return false }
                    out[count] = byte
                    count += 1
                }
                return count == characters
            }
        }
        return valid ? canonical : nil
    }
}
