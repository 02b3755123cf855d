import SystemIO
import Testing
@testable import GemvaultCLI

/// The table and dates key list prints for every key: their shape, since they were rewritten for speed.
@Suite struct OutputFormatTests {
    @Test func tableColumnsArePaddedToTheWidestCellInCharacters() {
        let text = Output.table([["NAME", "KEY", "AGE"], ["work", "AIza…lmno", "3 days"], ["é-long-name", "****", "1 hours"]])
        #expect(text == """
        NAME        KEY       AGE
        work        AIza…lmno 3 days
        é-long-name ****      1 hours

        """)
        #expect(Output.table([]) == "")
        #expect(Output.table([["only"]]) == "only\n")
    }

    @Test func c1ControlsAreEscapedAndNothingElseChanges() {
        let c1 = (0x80...0x9f).map { Character(Unicode.Scalar(UInt32($0))!) }
        let json = "{\"t\":\"" + String(c1) + " é \u{a0} 你 🚀\"}"
        let escaped = String(decoding: Output.escapingInvisibleControls(Array(json.utf8)), as: UTF8.self)
        let expected = (0x80...0x9f).map { "\\u00" + String($0, radix: 16) }.joined()
        #expect(escaped == "{\"t\":\"" + expected + " é \u{a0} 你 🚀\"}")
        #expect(Output.escapingInvisibleControls(Array("{\"a\":1}".utf8)) == Array("{\"a\":1}".utf8))
    }

    @Test func bidiControlsAreEscapedAndTheirNeighboursAreNot() {
        let bidi: [UInt32] = [0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]
        let raw = String(String.UnicodeScalarView(bidi.map { Unicode.Scalar($0)! }))
        // Neighbours in the same UTF-8 blocks stay as they are: ZWJ, en dash, the narrow space, the word joiner.
        let kept = "\u{200d}\u{2013}\u{202f}\u{2060}\u{2070}"
        let escaped = String(decoding: Output.escapingInvisibleControls(Array(("{\"t\":\"" + raw + kept + "\"}").utf8)), as: UTF8.self)
        #expect(escaped == "{\"t\":\"" + bidi.map { "\\u" + String($0, radix: 16) }.joined() + kept + "\"}")
    }

    @Test func isoDatesAreUTCWithZeroPadding() {
        #expect(Clock.isoDate(0) == "1970-01-01T00:00:00Z")
        #expect(Clock.isoDate(1_796_111_103) == "2026-12-01T07:45:03Z")
        #expect(Clock.isoDate(951_782_400 + 86_399) == "2000-02-29T23:59:59Z")
        #expect(Clock.isoDate(253_402_300_799) == "9999-12-31T23:59:59Z")
    }
}
