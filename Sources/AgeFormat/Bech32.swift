import VaultCore

/// Bech32 (BIP 173) as age writes recipients and identities: without BIP 173's 90-character limit.
enum Bech32 {
    private static let alphabet = Array("qpzry9x8gf2tvdw0s3jn54khce6mua7l".utf8)
    /// Each ASCII character's value in `alphabet`, 0xff for none (a post-quantum key is 2,000 characters).
    private static let values: [UInt8] = (0..<128).map { character in
        alphabet.firstIndex(of: UInt8(character)).map { UInt8($0) } ?? 0xff
    }
    // BIP 173's generator: 0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3 (in `polymod`).

    /// BIP 173's checksum over the parts in order (taken apart, so no joined copy of an
    /// identity's characters is made).
    private static func polymod(_ parts: [UInt8]...) -> UInt32 {
        var checksum: UInt32 = 1
        for part in parts {
            for value in part {
                let top = checksum >> 25
                checksum = (checksum & 0x1ff_ffff) << 5 ^ UInt32(value)
                // By mask, not branch: an identity's characters pass through here too.
                checksum ^= (0 &- (top & 1)) & 0x3b6a_57b2
                checksum ^= (0 &- (top >> 1 & 1)) & 0x2650_8e6d
                checksum ^= (0 &- (top >> 2 & 1)) & 0x1ea1_19fa
                checksum ^= (0 &- (top >> 3 & 1)) & 0x3d42_33dd
                checksum ^= (0 &- (top >> 4 & 1)) & 0x2a14_62b3
            }
        }
        return checksum
    }

    private static func expanded(_ hrp: [UInt8]) -> [UInt8] {
        hrp.map { $0 >> 5 } + [0] + hrp.map { $0 & 31 }
    }

    /// Regroups bits; `pad` adds zero bits at the end (encoding), otherwise leftover bits must be zero padding.
    static func regrouped(_ data: [UInt8], from: Int, to: Int, pad: Bool) -> [UInt8]? {
        var accumulator = 0
        var bits = 0
        var output: [UInt8] = []
        let mask = (1 << to) - 1
        for value in data {
            accumulator = accumulator << from | Int(value)
            bits += from
            while bits >= to {
                bits -= to
                output.append(UInt8(accumulator >> bits & mask))
            }
            accumulator &= (1 << bits) - 1
        }
        if pad {
            if bits > 0 { output.append(UInt8(accumulator << (to - bits) & mask)) }
        } else if bits >= from || accumulator != 0 {
            return nil
        }
        return output
    }

    /// `hrp` and `data` in Bech32, as bytes (an identity's text must not become a String);
    /// `uppercase` for identities, which age writes in capitals.
    static func encode(hrp: String, _ data: [UInt8], uppercase: Bool = false) -> [UInt8] {
        let hrpBytes = Array(hrp.lowercased().utf8)
        var values = regrouped(data, from: 8, to: 5, pad: true)!
        defer { SecretBytes.wipe(&values) }
        let check = polymod(expanded(hrpBytes), values, [0, 0, 0, 0, 0, 0]) ^ 1
        var text = hrpBytes + [UInt8(ascii: "1")]
        text.reserveCapacity(text.count + values.count + 6)
        for value in values { text.append(alphabet[Int(value)]) }
        for index in 0..<6 { text.append(alphabet[Int(check >> UInt32(5 * (5 - index)) & 31)]) }
        guard uppercase else { return text }
        defer { SecretBytes.wipe(&text) }
        return text.map { $0 >= 97 && $0 <= 122 ? $0 - 32 : $0 }
    }

    /// The human-readable part (in the input's own case) and the data, or nil for anything that
    /// is not valid Bech32. Works on bytes so that an identity's text never becomes a String.
    static func decode(_ text: [UInt8]) -> (hrp: String, data: [UInt8])? {
        guard text.allSatisfy({ $0 >= 33 && $0 <= 126 }) else { return nil }
        let isUpper = { (byte: UInt8) in byte >= 65 && byte <= 90 }
        let isLower = { (byte: UInt8) in byte >= 97 && byte <= 122 }
        let upper = text.contains(where: isUpper)
        guard !(upper && text.contains(where: isLower)) else { return nil }
        // Every copy of an identity's characters is wiped when done.
        var lowered = upper ? text.map { isUpper($0) ? $0 + 32 : $0 } : text
        defer { SecretBytes.wipe(&lowered) }
        guard let separator = lowered.lastIndex(of: UInt8(ascii: "1")), separator >= 1, lowered.count - separator - 1 >= 6 else { return nil }
        var values: [UInt8] = []
        defer { SecretBytes.wipe(&values) }
        values.reserveCapacity(lowered.count - separator - 1)
        for character in lowered[(separator + 1)...] {
            let value = Self.values[Int(character & 0x7f)]
            guard value != 0xff else { return nil }
            values.append(value)
        }
        let hrp = Array(lowered[..<separator])
        guard polymod(expanded(hrp), values) == 1 else { return nil }
        var payload = Array(values.dropLast(6))
        defer { SecretBytes.wipe(&payload) }
        guard let data = regrouped(payload, from: 5, to: 8, pad: false) else { return nil }
        let hrpText = String(decoding: hrp, as: UTF8.self)
        return (upper ? hrpText.uppercased() : hrpText, data)
    }
}
