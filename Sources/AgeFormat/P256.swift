internal import COpenSSL
import VaultCore

/// P-256 through libcrypto (SEC 1 encodings): scalar multiplication with the input point checked
/// on the curve, decompression, and the scalar sampling of hpke-pq's Group.RandomScalar.
enum P256 {
    static let scalarBytes = 32
    static let uncompressedBytes = 65
    static let compressedBytes = 33
    /// The group order n, big-endian.
    static let order: [UInt8] = [
        0xff, 0xff, 0xff, 0xff, 0x00, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        0xbc, 0xe6, 0xfa, 0xad, 0xa7, 0x17, 0x9e, 0x84, 0xf3, 0xb9, 0xca, 0xc2, 0xfc, 0x63, 0x25, 0x51,
    ]

    /// `scalar` × `point` (nil: the generator), uncompressed; refuses a point off the curve.
    static func multiply(_ point: [UInt8]?, _ scalar: SecretBytes) throws(PrimitiveError) -> [UInt8] {
        guard scalar.count == scalarBytes else { throw .invalidInput }
        var out = [UInt8](repeating: 0, count: uncompressedBytes)
        let done = scalar.withUnsafeBytes { k in
            let kBytes = k.baseAddress!.assumingMemoryBound(to: UInt8.self)
            if let point { return gv_p256_multiply(point, point.count, kBytes, &out) }
            return gv_p256_multiply(nil, 0, kBytes, &out)
        }
        guard done == 1 else { throw .invalidInput }
        return out
    }

    /// The x-coordinate of `scalar` × `point`: the ECDH shared secret (Group.ElementToSharedSecret).
    static func sharedX(_ point: [UInt8], _ scalar: SecretBytes) throws(PrimitiveError) -> SecretBytes {
        var product = try multiply(point, scalar)
        defer { SecretBytes.wipe(&product) }
        return product.withUnsafeBytes { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: $0[1..<33])) }
    }

    /// A point (compressed or not) checked and written uncompressed.
    static func uncompressed(_ point: [UInt8]) throws(PrimitiveError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: uncompressedBytes)
        guard gv_p256_multiply(point, point.count, nil, &out) == 1 else { throw .invalidInput }
        return out
    }

    /// Whether 0 < `scalar` < n (big-endian), without a branch on its bytes.
    static func isValidScalar(_ scalar: SecretBytes) -> Bool {
        guard scalar.count == scalarBytes else { return false }
        return scalar.withUnsafeBytes { raw in
            // Subtract n from the scalar; a final borrow means scalar < n.
            var borrow: Int32 = 0
            var nonzero: UInt8 = 0
            for index in stride(from: scalarBytes - 1, through: 0, by: -1) {
                let difference = Int32(raw[index]) - Int32(order[index]) - borrow
                borrow = (difference >> 31) & 1
                nonzero |= raw[index]
            }
            return borrow == 1 && nonzero != 0
        }
    }

    /// Group.RandomScalar (hpke-pq.md): the first 32-byte window of `seed` that is a valid scalar.
    static func scalar(from seed: SecretBytes) throws(PrimitiveError) -> SecretBytes {
        var start = 0
        while start + scalarBytes <= seed.count {
            let candidate = SecretBytes(slicing: seed, range: start..<(start + scalarBytes))
            if isValidScalar(candidate) { return candidate }
            start += scalarBytes
        }
        throw .invalidInput
    }

    static func randomScalar() -> SecretBytes {
        while true {
            let candidate = SecretBytes.random(count: scalarBytes)
            if isValidScalar(candidate) { return candidate }
        }
    }
}
