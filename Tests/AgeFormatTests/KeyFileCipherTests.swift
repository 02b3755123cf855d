@testable import AgeFormat
import Testing
import VaultCore

/// The ciphers under passphrase-protected ssh keys, against their standards' published vectors.
@Suite struct KeyFileCipherTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    static func encrypt(key: String, block: String) -> [UInt8] {
        let cipher = AESCounterMode(key: SecretBytes(copying: bytes(key)))
        var state = bytes(block)
        state.withUnsafeMutableBytes { cipher.encrypt($0) }
        return state
    }

    /// FIPS 197, appendix C: the same plaintext under a 128-, 192- and 256-bit key.
    @Test func aesMatchesFIPS197() {
        let plaintext = "00112233445566778899aabbccddeeff"
        #expect(Self.encrypt(key: "000102030405060708090a0b0c0d0e0f", block: plaintext) == Self.bytes("69c4e0d86a7b0430d8cdb78070b4c55a"))
        #expect(Self.encrypt(key: "000102030405060708090a0b0c0d0e0f1011121314151617", block: plaintext) == Self.bytes("dda97ca4864cdfe06eaf70a0ec0d7191"))
        #expect(Self.encrypt(key: "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", block: plaintext) == Self.bytes("8ea2b7ca516745bfeafc49904b496089"))
    }

    /// SP 800-38A F.5.5 (CTR-AES256.Encrypt), cut to a length that is not whole blocks.
    @Test func counterModeMatchesSP80038A() {
        let cipher = AESCounterMode(key: SecretBytes(copying: Self.bytes("603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")))
        var data = Self.bytes("6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51")
        data.removeLast(5)
        data.withUnsafeMutableBytes { cipher.apply(to: $0, counter: Self.bytes("f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff")) }
        #expect(data == Array(Self.bytes("601ec313775789a5b7a7f504bbf3d228f443e3ca4d62b59aca84e990cacaf5c5").dropLast(5)))
    }

    @Test func theCounterCarriesAcrossAllSixteenBytes() {
        let cipher = AESCounterMode(key: SecretBytes(copying: [UInt8](repeating: 7, count: 32)))
        var twoBlocks = [UInt8](repeating: 0, count: 32)
        twoBlocks.withUnsafeMutableBytes { cipher.apply(to: $0, counter: [UInt8](repeating: 0xff, count: 16)) }
        var second = [UInt8](repeating: 0, count: 16)
        second.withUnsafeMutableBytes { cipher.apply(to: $0, counter: [UInt8](repeating: 0, count: 16)) }
        #expect(Array(twoBlocks[16...]) == second)
    }

    /// Eric Young's Blowfish vectors, through Blowfish's own key schedule (bcrypt's expand
    /// without data); they pass only if the digits of pi in the tables are right.
    @Test(arguments: [("0000000000000000", "0000000000000000", "4ef997456198dd78"),
                      ("ffffffffffffffff", "ffffffffffffffff", "51866fd5b85ecb8a"),
                      ("0123456789abcdef", "1111111111111111", "61f9c3802281b096")])
    func blowfishMatchesPublishedVectors(key: String, plaintext: String, ciphertext: String) {
        let state = SecretBytes(count: EksBlowfish.stateBytes)
        state.withUnsafeMutableBytes { raw in
            let blowfish = EksBlowfish(state: raw.baseAddress!.bindMemory(to: UInt32.self, capacity: EksBlowfish.stateWords))
            blowfish.reset()
            Self.bytes(key).withUnsafeBytes { blowfish.expand(key: $0) }
            let words = Self.bytes(plaintext)
            var left = words[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            var right = words[4..<8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            blowfish.encipher(&left, &right)
            #expect(String(left, radix: 16).leftPadded + String(right, radix: 16).leftPadded == ciphertext)
        }
    }

    @Test func bcryptPBKDFSpreadsItsOutputAndDependsOnEveryInput() {
        func derive(_ passphrase: String, _ salt: [UInt8], _ rounds: Int, _ length: Int) -> [UInt8] {
            BcryptPBKDF.derive(passphrase: SecretBytes(utf8: passphrase), salt: salt, rounds: rounds, length: length).withUnsafeBytes { Array($0) }
        }
        let base = derive("password", Array("salt".utf8), 4, 48)
        #expect(derive("password", Array("salt".utf8), 4, 48) == base)
        #expect(derive("passwore", Array("salt".utf8), 4, 48) != base)
        #expect(derive("password", Array("salu".utf8), 4, 48) != base)
        #expect(derive("password", Array("salt".utf8), 5, 48) != base)
        // Longer output interleaves blocks: byte i of block b lands at i * stride + b, so a
        // shorter request is not a prefix of a longer one.
        let short = derive("password", Array("salt".utf8), 4, 32)
        #expect(Array(base.prefix(32)) != short)
        #expect(base[0] == short[0])
    }
}

private extension String {
    var leftPadded: String { String(repeating: "0", count: max(0, 8 - count)) + self }
}
