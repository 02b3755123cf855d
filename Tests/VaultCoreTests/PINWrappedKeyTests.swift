import Testing
@testable import VaultCore

/// The agent's PIN-wrapped copy of a session key: the PIN alone opens nothing without the
/// random bytes each wrap keeps, and a wrong PIN opens nothing at all.
@Suite struct PINWrappedKeyTests {
    @Test func theRightPINGivesTheKeyBackAndAWrongOneNothing() throws {
        let kek = SecretBytes.random(count: 32)
        let wrapped = try PINWrappedKey(wrapping: .keyEncryptionKey(kek), pin: SecretBytes(utf8: "4812"), kdf: .testingMinimum)
        guard case .keyEncryptionKey(let opened)? = try wrapped.open(pin: SecretBytes(utf8: "4812")) else {
            Issue.record("the PIN did not open it")
            return
        }
        #expect(opened.isEqual(to: kek))
        #expect(try wrapped.open(pin: SecretBytes(utf8: "4813")) == nil)
    }

    @Test func theSameKeyAndPINWrapDifferentlyEachTime() throws {
        let dataKey = SecretBytes.random(count: 32)
        let first = try PINWrappedKey(wrapping: .dataKey(dataKey), pin: SecretBytes(utf8: "1234"), kdf: .testingMinimum)
        let second = try PINWrappedKey(wrapping: .dataKey(dataKey), pin: SecretBytes(utf8: "1234"), kdf: .testingMinimum)
        // Each wrap has its own salt and agent secret: nothing about one helps open another.
        #expect(first.fingerprintForTests != second.fingerprintForTests)
        guard case .dataKey(let opened)? = try second.open(pin: SecretBytes(utf8: "1234")) else {
            Issue.record("the PIN did not open it")
            return
        }
        #expect(opened.isEqual(to: dataKey))
    }

    @Test func lengthsAreCountedInCharacters() {
        #expect(!PINWrappedKey.isAllowed(SecretBytes(utf8: "123")))
        #expect(PINWrappedKey.isAllowed(SecretBytes(utf8: "1234")))
        #expect(PINWrappedKey.isAllowed(SecretBytes(utf8: "äöüß")))
        #expect(PINWrappedKey.isAllowed(SecretBytes(utf8: String(repeating: "é", count: 64))))
        #expect(!PINWrappedKey.isAllowed(SecretBytes(utf8: String(repeating: "9", count: 65))))
    }
}
