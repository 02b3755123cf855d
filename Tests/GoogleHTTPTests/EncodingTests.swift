import GoogleHTTP
import Testing
import VaultCore

@Suite struct EncodingTests {
    @Test func base64URLHasNoPaddingAndTheURLAlphabet() {
        #expect(Base64URL.encode(Array("{\"alg\":\"RS256\"}".utf8)) == "eyJhbGciOiJSUzI1NiJ9")
        #expect(Base64URL.encode([0xfb, 0xff]) == "-_8")
        #expect(Base64URL.encode([]) == "")
    }

    @Test func percentEncodingLeavesOnlyTheUnreserved() {
        #expect(PercentEncoding.encode("urn:a b") == "urn%3Aa%20b")
        #expect(PercentEncoding.encode("Cg9t/+=") == "Cg9t%2F%2B%3D")
        #expect(PercentEncoding.encode("aZ09-._~") == "aZ09-._~")
        #expect(PercentEncoding.encode("é\n") == "%C3%A9%0A")
        let joined = PercentEncoding.join([.literal("a="), .encoded(SecretBytes(utf8: "x y/+"))])
        #expect(String(decoding: joined.withUnsafeBytes { Array($0) }, as: UTF8.self) == "a=x%20y%2F%2B")
    }
}
