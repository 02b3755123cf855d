import VaultCore

/// OpenSSH's `bcrypt_pbkdf`, the key derivation of a passphrase-protected openssh-key-v1 file:
/// PBKDF2's structure with SHA-512 of the passphrase and salt fed to bcrypt's expensive
/// Blowfish key schedule, and the output bytes spread across the blocks rather than
/// concatenated. Written from the algorithm's description; tested against files that
/// `ssh-keygen` encrypted.
enum BcryptPBKDF {
    static let hashBytes = 32
    /// bcrypt's fixed plaintext, encrypted 64 times under the expanded state.
    private static let magic = Array("OxychromaticBlowfishSwatDynamite".utf8)

    static func derive(passphrase: SecretBytes, salt: [UInt8], rounds: Int, length: Int) -> SecretBytes {
        precondition(rounds >= 1 && (1...1024).contains(length) && !salt.isEmpty)
        let output = SecretBytes(count: length)
        // One secret buffer: the passphrase's hash, the salt's, a block, the running sum, Blowfish's state.
        let scratch = SecretBytes(count: 2 * SHA512.bytes + 2 * hashBytes + EksBlowfish.stateBytes)
        let stride = (length + hashBytes - 1) / hashBytes
        var amount = (length + stride - 1) / stride
        scratch.withUnsafeMutableBytes { raw in
            let passphraseHash = raw.baseAddress!
            let saltHash = passphraseHash + SHA512.bytes
            let block = saltHash + SHA512.bytes
            let sum = block + hashBytes
            let blowfish = EksBlowfish(state: (sum + hashBytes).bindMemory(to: UInt32.self, capacity: EksBlowfish.stateWords))
            passphrase.withUnsafeBytes { SHA512.hash($0, into: passphraseHash) }
            var remaining = length
            var blockNumber: UInt32 = 1
            while remaining > 0 {
                let countedSalt = salt + [UInt8(blockNumber >> 24), UInt8(blockNumber >> 16 & 0xff), UInt8(blockNumber >> 8 & 0xff), UInt8(blockNumber & 0xff)]
                countedSalt.withUnsafeBytes { SHA512.hash($0, into: saltHash) }
                bcryptHash(blowfish, passphraseHash: passphraseHash, saltHash: saltHash, into: block)
                sum.copyMemory(from: block, byteCount: hashBytes)
                for _ in 1..<rounds {
                    SHA512.hash(UnsafeRawBufferPointer(start: block, count: hashBytes), into: saltHash)
                    bcryptHash(blowfish, passphraseHash: passphraseHash, saltHash: saltHash, into: block)
                    for index in 0..<hashBytes { sum.storeBytes(of: sum.load(fromByteOffset: index, as: UInt8.self) ^ block.load(fromByteOffset: index, as: UInt8.self), toByteOffset: index, as: UInt8.self) }
                }
                amount = min(amount, remaining)
                var taken = 0
                output.withUnsafeMutableBytes { out in
                    while taken < amount {
                        let destination = taken * stride + Int(blockNumber - 1)
                        if destination >= length { break }
                        out[destination] = sum.load(fromByteOffset: taken, as: UInt8.self)
                        taken += 1
                    }
                }
                remaining -= taken
                blockNumber += 1
            }
        }
        return output
    }

    /// bcrypt's core on the two 64-byte hashes; 32 bytes out, each word little-endian.
    private static func bcryptHash(_ blowfish: EksBlowfish, passphraseHash: UnsafeMutableRawPointer, saltHash: UnsafeMutableRawPointer,
                                   into out: UnsafeMutableRawPointer) {
        let key = UnsafeRawBufferPointer(start: passphraseHash, count: SHA512.bytes)
        let salt = UnsafeRawBufferPointer(start: saltHash, count: SHA512.bytes)
        blowfish.reset()
        blowfish.expand(key: key, data: salt)
        for _ in 0..<64 {
            blowfish.expand(key: salt)
            blowfish.expand(key: key)
        }
        // The eight words are encrypted where they end up, in `out`, which is secret memory.
        let words = out.bindMemory(to: UInt32.self, capacity: magic.count / 4)
        magic.withUnsafeBytes { text in
            var position = 0
            for index in 0..<(magic.count / 4) { words[index] = EksBlowfish.word(text, &position) }
        }
        for _ in 0..<64 {
            for pair in Swift.stride(from: 0, to: magic.count / 4, by: 2) { blowfish.encipher(&words[pair], &words[pair + 1]) }
        }
        for index in 0..<(magic.count / 4) { words[index] = words[index].littleEndian }
    }
}

/// Blowfish (Schneier, 1993) with bcrypt's "expensive key schedule" (Provos and Mazières,
/// 1999), over a state its caller keeps in secret memory.
struct EksBlowfish {
    static let stateWords = 18 + 4 * 256
    static let stateBytes = stateWords * MemoryLayout<UInt32>.stride
    /// The P-array (18 words), then the four S-boxes.
    let state: UnsafeMutablePointer<UInt32>

    func reset() {
        BlowfishTables.initialState.withUnsafeBufferPointer { state.update(from: $0.baseAddress!, count: Self.stateWords) }
    }

    /// The next big-endian word of `bytes`, cycling back to its start.
    static func word(_ bytes: UnsafeRawBufferPointer, _ position: inout Int) -> UInt32 {
        var word: UInt32 = 0
        for _ in 0..<4 {
            if position >= bytes.count { position = 0 }
            word = word << 8 | UInt32(bytes[position])
            position += 1
        }
        return word
    }

    @inline(__always)
    private func mix(_ x: UInt32) -> UInt32 {
        let boxes = state + 18
        return ((boxes[Int(x >> 24)] &+ boxes[256 + Int(x >> 16 & 0xff)]) ^ boxes[512 + Int(x >> 8 & 0xff)]) &+ boxes[768 + Int(x & 0xff)]
    }

    func encipher(_ left: inout UInt32, _ right: inout UInt32) {
        var l = left
        var r = right
        var round = 0
        while round < 16 {
            l ^= state[round]
            r ^= mix(l) ^ state[round + 1]
            l ^= mix(r)
            round += 2
        }
        l ^= state[16]
        left = r ^ state[17]
        right = l
    }

    /// The key schedule: the key XORed into the P-array, then every P and S word replaced by
    /// successive encryptions, each input XORed with the next words of `data` when given.
    /// Without data this is Blowfish's own key schedule.
    func expand(key: UnsafeRawBufferPointer, data: UnsafeRawBufferPointer? = nil) {
        var position = 0
        for index in 0..<18 { state[index] ^= Self.word(key, &position) }
        position = 0
        var left: UInt32 = 0
        var right: UInt32 = 0
        defer { left = 0; right = 0 }
        var index = 0
        while index < Self.stateWords {
            if let data {
                left ^= Self.word(data, &position)
                right ^= Self.word(data, &position)
            }
            encipher(&left, &right)
            state[index] = left
            state[index + 1] = right
            index += 2
        }
    }
}
