/// The layout of the JSON gemvault writes for people (stdout, config.json).
public enum JSONLayout {
    /// Foundation's pretty printer writes `"key" : value`; the usual layout, and jq's, is
    /// `"key": value`. Drops the space before each colon that separates a key from its value,
    /// never one inside a string.
    public static func tightenKeySeparators(_ json: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(json.count)
        var inString = false
        var escaped = false
        var index = 0
        while index < json.count {
            let byte = json[index]
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: " "), index + 1 < json.count, json[index + 1] == UInt8(ascii: ":") {
                index += 1
                continue
            }
            result.append(byte)
            index += 1
        }
        return result
    }

    /// JSONEncoder escapes C0 controls but passes C1 controls (U+0080–U+009F) and the
    /// bidirectional controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069; the same
    /// as `EscapeNeutralizer`'s) through raw: a
    /// terminal may act on the first (U+009B is CSI), and the second reorder what is shown (an
    /// U+202E makes a name read backwards). They can only sit inside strings, where `\uXXXX`
    /// means the same character. In UTF-8 a C1 control is C2 80…C2 9F and a bidi control
    /// D8 9C, E2 80 8E/8F, E2 80 AA…AE or E2 81 A6…A9; C2, D8 and E2 are never continuation
    /// bytes, so the byte sequences find exactly them.
    public static func escapingInvisibleControls(_ json: [UInt8]) -> [UInt8] {
        guard json.contains(where: { $0 == 0xc2 || $0 == 0xd8 || $0 == 0xe2 }) else { return json }
        var result: [UInt8] = []
        result.reserveCapacity(json.count)
        let hex = Array("0123456789abcdef".utf8)
        func escape(_ scalar: UInt32) {
            result += Array("\\u".utf8) + [12, 8, 4, 0].map { hex[Int((scalar >> UInt32($0)) & 0x0f)] }
        }
        var index = 0
        while index < json.count {
            let byte = json[index]
            if byte == 0xc2, index + 1 < json.count, (0x80...0x9f).contains(json[index + 1]) {
                escape(UInt32(json[index + 1]))
                index += 2
                continue
            }
            if byte == 0xd8, index + 1 < json.count, json[index + 1] == 0x9c {  // U+061C, the Arabic letter mark
                escape(0x061c)
                index += 2
                continue
            }
            if byte == 0xe2, index + 2 < json.count {
                let scalar = 0x2000 | (UInt32(json[index + 1] & 0x3f) << 6) | UInt32(json[index + 2] & 0x3f)
                let isBidi = scalar == 0x200e || scalar == 0x200f || (0x202a...0x202e).contains(scalar) || (0x2066...0x2069).contains(scalar)
                if isBidi, (0x80...0x81).contains(json[index + 1]) {
                    escape(scalar)
                    index += 3
                    continue
                }
            }
            result.append(byte)
            index += 1
        }
        return result
    }
}
