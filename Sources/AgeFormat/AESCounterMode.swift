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
            for word in keyWords..<totalWords {
                var temp = (0..<4).map { w[4 * (word - 1) + $0] }
                defer { for index in temp.indices { temp[index] = 0 } }
                if word % keyWords == 0 {
                    temp = [Self.sBox[Int(temp[1])] ^ roundConstant, Self.sBox[Int(temp[2])], Self.sBox[Int(temp[3])], Self.sBox[Int(temp[0])]]
                    roundConstant = Self.double(roundConstant)
                } else if keyWords > 6 && word % keyWords == 4 {
                    temp = temp.map { Self.sBox[Int($0)] }
                }
                for index in 0..<4 { w[4 * word + index] = w[4 * (word - keyWords) + index] ^ temp[index] }
            }
        }
    }

    /// XORs `data` in place with the keystream that starts at the 128-bit big-endian `counter`.
    func apply(to data: UnsafeMutableRawBufferPointer, counter initial: [UInt8]) {
        precondition(initial.count == 16)
        var counter = initial
        let keystream = SecretBytes(count: 16)
        keystream.withUnsafeMutableBytes { block in
            var offset = 0
            while offset < data.count {
                block.copyBytes(from: counter)
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

    /// Row r moves r columns to the left.
    private func shiftRows(_ state: UnsafeMutableRawBufferPointer) {
        for row in 1..<4 {
            let moved = (0..<4).map { state[row + 4 * (($0 + row) % 4)] }
            for column in 0..<4 { state[row + 4 * column] = moved[column] }
        }
    }

    private func mixColumns(_ state: UnsafeMutableRawBufferPointer) {
        for column in 0..<4 {
            let a = (0..<4).map { state[4 * column + $0] }
            let doubled = a.map(Self.double)
            state[4 * column] = doubled[0] ^ doubled[1] ^ a[1] ^ a[2] ^ a[3]
            state[4 * column + 1] = a[0] ^ doubled[1] ^ doubled[2] ^ a[2] ^ a[3]
            state[4 * column + 2] = a[0] ^ a[1] ^ doubled[2] ^ doubled[3] ^ a[3]
            state[4 * column + 3] = doubled[0] ^ a[0] ^ a[1] ^ a[2] ^ doubled[3]
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
