import VaultCore

/// Standard base64 as age's header wants it: canonical, and unpadded (or padded, for armor).
enum StrictBase64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let values: [Int8] = {
        var table = [Int8](repeating: -1, count: 256)
        for (index, character) in alphabet.enumerated() { table[Int(character)] = Int8(index) }
        return table
    }()

    static func encode(_ bytes: some Collection<UInt8>, padded: Bool = false) -> String {
        var output = encodedBytes(bytes, padded: padded)
        defer { SecretBytes.wipe(&output) }
        return String(decoding: output, as: UTF8.self)
    }

    /// `encode` as bytes the caller can wipe (an age plugin's file keys and PINs go through it).
    static func encodedBytes(_ bytes: some Collection<UInt8>, padded: Bool = false) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity((bytes.count + 2) / 3 * 4)
        var iterator = bytes.makeIterator()
        while let first = iterator.next() {
            let second = iterator.next(), third = iterator.next()
            let group = UInt32(first) << 16 | UInt32(second ?? 0) << 8 | UInt32(third ?? 0)
            let characters = second == nil ? 2 : third == nil ? 3 : 4
            for index in 0..<characters { output.append(alphabet[Int(group >> UInt32(18 - 6 * index) & 63)]) }
            if padded { output.append(contentsOf: [UInt8](repeating: UInt8(ascii: "="), count: 4 - characters)) }
        }
        return output
    }

    /// The bytes of `text`, or nil unless it is canonical: no stray characters, no set bits past the end,
    /// and padding exactly when `padded` (then the length is a multiple of four).
    static func decode(_ text: some Collection<UInt8>, padded: Bool = false) -> [UInt8]? {
        var characters = Array(text)
        if padded {
            guard characters.count % 4 == 0 else { return nil }
            var padding = 0
            while padding < 2, characters.last == UInt8(ascii: "=") {
                characters.removeLast()
                padding += 1
            }
        }
        guard characters.count % 4 != 1 else { return nil }
        var output: [UInt8] = []
        output.reserveCapacity(characters.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for character in characters {
            let value = values[Int(character)]
            guard value >= 0 else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                output.append(UInt8(accumulator >> UInt32(bits) & 0xff))
            }
            accumulator &= (1 << UInt32(bits)) - 1
        }
        // Leftover bits must be zero, or two encodings would give the same bytes.
        guard accumulator == 0 else { return nil }
        return output
    }
}
