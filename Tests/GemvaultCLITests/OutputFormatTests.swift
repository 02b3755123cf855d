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

    @Test func isoDatesAreUTCWithZeroPadding() {
        #expect(Clock.isoDate(0) == "1970-01-01T00:00:00Z")
        #expect(Clock.isoDate(1_796_111_103) == "2026-12-01T07:45:03Z")
        #expect(Clock.isoDate(951_782_400 + 86_399) == "2000-02-29T23:59:59Z")
        #expect(Clock.isoDate(253_402_300_799) == "9999-12-31T23:59:59Z")
    }
}
