import VaultCore

/// AES (FIPS 197) in counter mode (SP 800-38A), the cipher `ssh-keygen` encrypts private keys
/// with (`aes256-ctr` unless told otherwise). libsodium has no AES-CTR, so it is written here
/// from the standard and tested against its vectors. Only encryption is needed: counter mode
/// decrypts by encrypting. Table lookups can leak timing, which matters little for decrypting
/// one local key file once.
struct AESCounterMode {
    /// The expanded key: 16 bytes per round plus one, in secret memory.
    private let roundKeys: SecretBytes
    private let rounds: Int

    /// `key` of 16, 24 or 32 bytes.
    init(key: SecretBytes) {
        precondition([16, 24, 32].contains(key.count))
        let keyWords = key.count / 4
        rounds = keyWords + 6
        let totalWords = 4 * (rounds + 1)
        roundKeys = SecretBytes(count: 4 * totalWords)
        roundKeys.withUnsafeMutableBytes { w in
            key.withUnsafeBytes { w.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: key.count) }
            var roundConstant: UInt8 = 1
            // Byte by byte in locals: no heap copy of key material is left behind.
            for word in keyWords..<totalWords {
                let previous = 4 * (word - 1)
                var (t0, t1, t2, t3) = (w[previous], w[previous + 1], w[previous + 2], w[previous + 3])
                if word % keyWords == 0 {
                    (t0, t1, t2, t3) = (Self.sBox[Int(t1)] ^ roundConstant, Self.sBox[Int(t2)], Self.sBox[Int(t3)], Self.sBox[Int(t0)])
                    roundConstant = Self.double(roundConstant)
                } else if keyWords > 6 && word % keyWords == 4 {
                    (t0, t1, t2, t3) = (Self.sBox[Int(t0)], Self.sBox[Int(t1)], Self.sBox[Int(t2)], Self.sBox[Int(t3)])
                }
                let back = 4 * (word - keyWords)
                w[4 * word] = w[back] ^ t0
                w[4 * word + 1] = w[back + 1] ^ t1
                w[4 * word + 2] = w[back + 2] ^ t2
                w[4 * word + 3] = w[back + 3] ^ t3
            }
        }
    }

    /// XORs `data` in place with the keystream that starts at the 128-bit big-endian `counter`.
    func apply(to data: UnsafeMutableRawBufferPointer, counter initial: [UInt8]) {
        precondition(initial.count == 16)
        // The counter and the keystream block both live in secret memory.
        let keystream = SecretBytes(count: 32)
        keystream.withUnsafeMutableBytes { both in
            let block = UnsafeMutableRawBufferPointer(rebasing: both[0..<16])
            let counter = UnsafeMutableRawBufferPointer(rebasing: both[16..<32])
            counter.copyBytes(from: initial)
            var offset = 0
            while offset < data.count {
                block.copyMemory(from: UnsafeRawBufferPointer(counter))
                encrypt(block)
                for index in 0..<min(16, data.count - offset) { data[offset + index] ^= block[index] }
                offset += 16
                for index in stride(from: 15, through: 0, by: -1) {
                    counter[index] &+= 1
                    if counter[index] != 0 { break }
                }
            }
        }
    }

    /// Encrypts one 16-byte block in place (the state is column-major, as the bytes come).
    func encrypt(_ state: UnsafeMutableRawBufferPointer) {
        roundKeys.withUnsafeBytes { keys in
            addRoundKey(state, keys, 0)
            for round in 1...rounds {
                for index in 0..<16 { state[index] = Self.sBox[Int(state[index])] }
                shiftRows(state)
                if round < rounds { mixColumns(state) }
                addRoundKey(state, keys, round)
            }
        }
    }

    private func addRoundKey(_ state: UnsafeMutableRawBufferPointer, _ keys: UnsafeRawBufferPointer, _ round: Int) {
        for index in 0..<16 { state[index] ^= keys[16 * round + index] }
    }

    /// Row r moves r columns to the left (rotated one step at a time, in place).
    private func shiftRows(_ state: UnsafeMutableRawBufferPointer) {
        for row in 1..<4 {
            for _ in 0..<row {
                let first = state[row]
                for column in 0..<3 { state[row + 4 * column] = state[row + 4 * (column + 1)] }
                state[row + 12] = first
            }
        }
    }

    private func mixColumns(_ state: UnsafeMutableRawBufferPointer) {
        for column in 0..<4 {
            let base = 4 * column
            let (a0, a1, a2, a3) = (state[base], state[base + 1], state[base + 2], state[base + 3])
            let (d0, d1, d2, d3) = (Self.double(a0), Self.double(a1), Self.double(a2), Self.double(a3))
            state[base] = d0 ^ d1 ^ a1 ^ a2 ^ a3
            state[base + 1] = a0 ^ d1 ^ d2 ^ a2 ^ a3
            state[base + 2] = a0 ^ a1 ^ d2 ^ d3 ^ a3
            state[base + 3] = d0 ^ a0 ^ a1 ^ a2 ^ d3
        }
    }

    /// Multiplication by x in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
    private static func double(_ value: UInt8) -> UInt8 {
        (value << 1) ^ (value & 0x80 != 0 ? 0x1b : 0)
    }

    /// The S-box, computed as FIPS 197 §5.1.1 defines it: the multiplicative inverse in
    /// GF(2^8), then the affine transformation.
    private static let sBox: [UInt8] = {
        func multiply(_ a: UInt8, _ b: UInt8) -> UInt8 {
            var (a, b, product): (UInt8, UInt8, UInt8) = (a, b, 0)
            while b != 0 {
                if b & 1 != 0 { product ^= a }
                a = double(a)
                b >>= 1
            }
            return product
        }
        var inverse = [UInt8](repeating: 0, count: 256)
        for a in 1...255 {
            for b in 1...255 where multiply(UInt8(a), UInt8(b)) == 1 {
                inverse[a] = UInt8(b)
                break
            }
        }
        return inverse.map { b in
            func rotate(_ n: UInt8) -> UInt8 { b << n | b >> (8 - n) }
            return b ^ rotate(1) ^ rotate(2) ^ rotate(3) ^ rotate(4) ^ 0x63
        }
    }()
}
