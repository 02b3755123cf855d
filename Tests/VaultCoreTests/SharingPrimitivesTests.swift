import Testing
import VaultCore

@Suite struct SharingPrimitivesTests {
    static func hex(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { Sodium.hex(Array($0)) } }

    /// RFC 5869 appendix A, test cases 1 to 3 (HKDF is built here from HMAC-SHA-256: libsodium 1.0.18 lacks it).
    @Test func hkdfGivesRFC5869sOutputs() {
        let ikm = SecretBytes(copying: [UInt8](repeating: 0x0b, count: 22))
        let first = HKDFSHA256.derive(secret: ikm, salt: Array(0...12), info: Array(0xf0...0xf9), length: 42)
        #expect(Self.hex(first) == "3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")
        let second = HKDFSHA256.derive(secret: SecretBytes(copying: Array(0x00...0x4f)), salt: Array(0x60...0xaf), info: Array(0xb0...0xff), length: 82)
        #expect(Self.hex(second) == "b11e398dc80327a1c8e7f78c596a49344f012eda2d4efad8a050cc4c19afa97c59045a99cac7827271cb41c65e590e09da3275600c2f09b8367793a9aca3db71cc30c58179ec3e87c14c01d5c1f3434f1d87")
        let third = HKDFSHA256.derive(secret: ikm, salt: [], info: [], length: 42)
        #expect(Self.hex(third) == "8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d9d201395faa4b61a96c8")
    }

    @Test func x25519AgreesBothWaysAndRefusesALowOrderPoint() throws {
        let alice = X25519.newSecret(), bob = X25519.newSecret()
        let one = try X25519.sharedSecret(alice, X25519.publicKey(of: bob))
        let other = try X25519.sharedSecret(bob, X25519.publicKey(of: alice))
        #expect(one.isEqual(to: other))
        #expect(throws: PrimitiveError.lowOrderPoint) { try X25519.sharedSecret(alice, [UInt8](repeating: 0, count: 32)) }
    }

    @Test func ed25519SignaturesVerifyOnlyForTheirMessageAndKey() throws {
        let (publicKey, secretKey) = try Ed25519.keyPair(seed: SecretBytes.random(count: 32))
        let signature = try Ed25519.sign(SecretBytes(utf8: "share"), secretKey: secretKey)
        #expect(Ed25519.verify(signature, of: SecretBytes(utf8: "share"), by: publicKey))
        #expect(!Ed25519.verify(signature, of: SecretBytes(utf8: "shard"), by: publicKey))
        let (otherKey, _) = try Ed25519.keyPair(seed: SecretBytes.random(count: 32))
        #expect(!Ed25519.verify(signature, of: SecretBytes(utf8: "share"), by: otherKey))
    }

    @Test func chachaPolyOpensOnlyWithItsKeyAndNonce() throws {
        let key = SecretBytes.random(count: 32)
        let nonce = [UInt8](repeating: 7, count: 12)
        let sealed = try ChaCha20Poly1305.seal(SecretBytes(utf8: "file key 16 byte"), nonce: nonce, key: key)
        #expect(try ChaCha20Poly1305.open(sealed[...], nonce: nonce, key: key).isEqual(to: SecretBytes(utf8: "file key 16 byte")))
        #expect(throws: PrimitiveError.authenticationFailed) { try ChaCha20Poly1305.open(sealed[...], nonce: [UInt8](repeating: 8, count: 12), key: key) }
    }
}
