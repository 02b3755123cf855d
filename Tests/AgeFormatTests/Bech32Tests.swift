@testable import AgeFormat
import Testing

/// BIP 173's test vectors. age lifts the 90-character limit, so "an84characters…" (valid but
/// for its length) is not among the invalid ones here.
@Suite struct Bech32Tests {
    @Test(arguments: [
        "A12UEL5L", "a12uel5l",
        "an83characterlonghumanreadablepartthatcontainsthenumber1andtheexcludedcharactersbio1tt5tgs",
        "abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw",
        "11" + String(repeating: "q", count: 82) + "c8247j",
        "split1checkupstagehandshakeupstreamerranterredcaperred2y9e3w",
        "?1ezyfcl",
    ]) func validStringsDecodeAndReencode(_ text: String) throws {
        let (hrp, data) = try #require(Bech32.decode(Array(text.utf8)))
        let again = String(decoding: Bech32.encode(hrp: hrp, data, uppercase: text.uppercased() == text && text.lowercased() != text), as: UTF8.self)
        #expect(again == text)
    }

    @Test(arguments: [
        "\u{20}1nwldj5", "\u{7f}1axkwrx", "\u{80}1eym55h",
        "pzry9x8gf2tvdw0s3jn54khce6mua7l", "1pzry9x8gf2tvdw0s3jn54khce6mua7l", "x1b4n0q5v", "li1dgmt3",
        "de1lg7wt\u{ff}", "A1G7SGD8", "10a06t8", "1qzzfhee", "a12UEL5L",
    ]) func invalidStringsAreRefused(_ text: String) {
        #expect(Bech32.decode(Array(text.utf8)) == nil)
    }
}
