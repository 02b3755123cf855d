import SystemIO
import Testing

@Suite struct JSONLayoutTests {
    @Test func c1ControlsAreEscapedAndNothingElseChanges() {
        let c1 = (0x80...0x9f).map { Character(Unicode.Scalar(UInt32($0))!) }
        let json = "{\"t\":\"" + String(c1) + " é \u{a0} 你 🚀\"}"
        let escaped = String(decoding: JSONLayout.escapingInvisibleControls(Array(json.utf8)), as: UTF8.self)
        let expected = (0x80...0x9f).map { "\\u00" + String($0, radix: 16) }.joined()
        #expect(escaped == "{\"t\":\"" + expected + " é \u{a0} 你 🚀\"}")
        #expect(JSONLayout.escapingInvisibleControls(Array("{\"a\":1}".utf8)) == Array("{\"a\":1}".utf8))
    }

    @Test func bidiControlsAreEscapedAndTheirNeighboursAreNot() {
        let bidi: [UInt32] = [0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]
        let raw = String(String.UnicodeScalarView(bidi.map { Unicode.Scalar($0)! }))
        // Neighbours in the same UTF-8 blocks stay as they are: the Arabic semicolon and question
        // mark, ZWJ, en dash, the narrow space, the word joiner.
        let kept = "\u{061b}\u{061f}\u{200d}\u{2013}\u{202f}\u{2060}\u{2070}"
        let escaped = String(decoding: JSONLayout.escapingInvisibleControls(Array(("{\"t\":\"" + raw + kept + "\"}").utf8)), as: UTF8.self)
        #expect(escaped == "{\"t\":\"" + bidi.map { "\\u" + ($0 < 0x1000 ? "0" : "") + String($0, radix: 16) }.joined() + kept + "\"}")
    }

    @Test func onlyTheSpaceBeforeAKeysColonGoes() {
        let pretty = Array("{\n  \"a b\" : \"x : y\",\n  \"c\" : 1\n}".utf8)
        #expect(String(decoding: JSONLayout.tightenKeySeparators(pretty), as: UTF8.self) == "{\n  \"a b\": \"x : y\",\n  \"c\": 1\n}")
    }
}
