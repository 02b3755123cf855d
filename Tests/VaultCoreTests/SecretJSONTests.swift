@testable import VaultCore
import Testing

struct SecretJSONTests {
    @Test func takesTheNamedValuesOutAndLeavesTheRestDecodable() throws {
        let document = SecretBytes(utf8: #"{"name": "projects/1/locations/global/keys/k", "keyString" : "AQ.abc\/def", "nested": {"keyString": "second"}}"#)
        let split = try #require(SecretJSON.split(document, secretFields: ["keyString"]))
        let plain = String(decoding: split.plain, as: UTF8.self)
        #expect(!plain.contains("AQ.abc"))
        #expect(!plain.contains("second"))
        #expect(split.secrets["keyString"].map { String(decoding: $0.withUnsafeBytes { Array($0) }, as: UTF8.self) } == "AQ.abc/def")
        struct Named: Decodable { let name: String }
        #expect(split.decode(Named.self)?.name == "projects/1/locations/global/keys/k")
    }

    @Test func resolvesAPEMKeysEscapes() throws {
        let document = SecretBytes(utf8: #"{"private_key": "-----BEGIN-----\nAB\u003dCD\n-----END-----\n", "client_email": "a@b"}"#)
        let split = try #require(SecretJSON.split(document, secretFields: ["private_key"]))
        let value = String(decoding: split.secrets["private_key"]!.withUnsafeBytes { Array($0) }, as: UTF8.self)
        #expect(value == "-----BEGIN-----\nAB=CD\n-----END-----\n")
    }

    @Test func aStringValueThatMerelyEqualsAFieldNameIsNotTaken() throws {
        let document = SecretBytes(utf8: #"{"a": "keyString", "b": "plain"}"#)
        let split = try #require(SecretJSON.split(document, secretFields: ["keyString"]))
        #expect(split.secrets.isEmpty)
        #expect(String(decoding: split.plain, as: UTF8.self).contains("plain"))
    }

    @Test func anUnterminatedStringIsRefused() {
        #expect(SecretJSON.split(SecretBytes(utf8: #"{"keyString": "AQ.abc"#), secretFields: ["keyString"]) == nil)
    }
}
