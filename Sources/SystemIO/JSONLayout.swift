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
}
