import Testing
@testable import Rendering

@Suite struct LineBreakerTests {
    private func wrap(_ text: String, _ width: Int, first: Int? = nil) -> [String] {
        LineBreaker.wrap([StyledRun(text)], firstWidth: first ?? width, width: width).map(\.plainText)
    }

    @Test func displayWidthCountsColumnsNotScalars() {
        #expect(DisplayWidth.of("你好") == 4 && DisplayWidth.of("🚀") == 2 && DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.of(Character("é")) == 1 && DisplayWidth.of(Character("e\u{301}")) == 1 && DisplayWidth.of(Character("中")) == 2)
        #expect(StyledLine("a你b").width == 4)
    }

    @Test func proseBreaksAtSpacesAndKeepsTheRepliesLineBreaks() {
        #expect(wrap("aaaa bbbb cccc", 9) == ["aaaa bbbb", "cccc"])
        #expect(wrap("roses are red\nviolets are blue", 40) == ["roses are red", "violets are blue"])
        #expect(wrap("one\n\nthree", 10) == ["one", "", "three"])
        // Spaces inside a line are kept; those where it breaks, and at its end, are not.
        #expect(wrap("a   b      c   ", 6) == ["a   b", "c"])
        #expect(wrap("    indented line", 40) == ["    indented line"])
    }

    @Test func theFirstLineMayBeShorter() {
        #expect(wrap("one two three four", 10, first: 4) == ["one", "two three", "four"])
        // A word the short first line (after a label) cannot hold starts on the next one, whole.
        #expect(wrap("three four", 10, first: 4) == ["", "three four"])
    }

    /// A hostile server's endless word is cut as it is read, into lines of the width.
    @Test func anEndlessWordIsCutIntoLinesOfTheWidth() {
        let lines = wrap(String(repeating: "x", count: 100_000), 80)
        #expect(lines.count == 1250 && lines.allSatisfy { $0.count == 80 })
    }

    @Test func wideCharactersBreakBetweenEachOtherButNotBeforeClosingPunctuation() {
        #expect(wrap("一二三四五六七八九十", 6) == ["一二三", "四五六", "七八九", "十"])
        // "，" may not start a line: it goes with the character before it.
        #expect(wrap("一二，三四", 4) == ["一", "二，", "三四"])
        #expect(wrap("中文abc中文", 5) == ["中文", "abc中", "文"])
        for line in wrap("我是一个由谷歌训练的大型语言模型，很高兴为你服务 🚀", 13) { #expect(DisplayWidth.of(line) <= 13, "\(line)") }
    }

    @Test func aWordWiderThanTheLineIsCutButURLsAndCodeNeverAre() {
        #expect(wrap("abcdefghij", 4) == ["abcd", "efgh", "ij"])
        #expect(wrap("see https://example.com/a/very/long/path ok", 12) == ["see", "https://example.com/a/very/long/path", "ok"])
        let code = [StyledRun("run "), StyledRun("some_function_name(x)", style: .code, kind: .code), StyledRun(" now")]
        #expect(LineBreaker.wrap(code, firstWidth: 10, width: 10).map(\.plainText) == ["run", "some_function_name(x)", "now"])
        // Inline code that fits a line is not broken at its spaces; one too long for any line is.
        let short = [StyledRun("type "), StyledRun("ls -la /tmp", style: .code, kind: .code), StyledRun(" here")]
        #expect(LineBreaker.wrap(short, firstWidth: 14, width: 14).map(\.plainText) == ["type", "ls -la /tmp", "here"])
        let long = [StyledRun("git log --oneline --graph --all", style: .code, kind: .code)]
        #expect(LineBreaker.wrap(long, firstWidth: 12, width: 12).map(\.plainText) == ["git log", "--oneline", "--graph", "--all"])
    }

    @Test func stylesFollowTheirTextAcrossBreaks() {
        let runs = [StyledRun("plain "), StyledRun("bold words here", style: TextStyle(bold: true))]
        let lines = LineBreaker.wrap(runs, firstWidth: 11, width: 11)
        #expect(lines.map(\.plainText) == ["plain bold", "words here"])
        #expect(lines[1].runs == [StyledRun("words here", style: TextStyle(bold: true))])
        #expect(lines[0].encoded(styled: true) == "plain \u{1B}[1mbold\u{1B}[0m")
        #expect(lines[0].encoded(styled: false) == "plain bold")
    }

    @Test func clippingMarksTheCutAndNeverExceedsTheWidth() {
        let line = StyledLine("0123456789")
        let marker = StyledRun("…")
        #expect(line.clipped(to: 6, marker: marker).plainText == "01234…")
        #expect(line.clipped(to: 20, marker: marker) == line)
        let wide = StyledLine("一二三四")
        let clipped = wide.clipped(to: 6, marker: marker)
        #expect(clipped.width == 6 && clipped.plainText == "一二 …")
    }

    @Test func rowsCountWhatATerminalWrapsTo() {
        #expect(DisplayWidth.rows(of: StyledLine("abcdef"), startingAt: 0, width: 6) == 1)
        #expect(DisplayWidth.rows(of: StyledLine("abcdefg"), startingAt: 0, width: 6) == 2)
        #expect(DisplayWidth.rows(of: StyledLine("abcd"), startingAt: 3, width: 6) == 2)
        // A wide character that does not fit at the end of a row starts the next one.
        #expect(DisplayWidth.rows(of: StyledLine("abcde一"), startingAt: 0, width: 6) == 2)
        #expect(DisplayWidth.rows(of: StyledLine(""), startingAt: 0, width: 6) == 1)
    }

    /// A citation mark stays with the sentence it follows, at every width: it never starts a line.
    @Test func aCitationMarkNeverStartsALine() {
        let texts = ["東京タワーの高さは333メートルです。[1]1958年に完成しました。[1][2]",
                     "The Eiffel Tower is 330 metres tall.[1] It was finished in 1889.[1][2]"]
        for text in texts {
            // From the width of the widest word with its marks on (narrower, a word is cut anyway).
            for width in 11...40 {
                let lines = DisplayWidth.wrap(text, width: width)
                #expect(!lines.contains { $0.hasPrefix("[") }, "\(width): \(lines)")
                #expect(lines.joined().replacing(" ", with: "") == text.replacing(" ", with: ""))
            }
        }
        // Brackets that are not marks, and marks after a space, break as before.
        #expect(DisplayWidth.wrap("中文中文[note]", width: 8) == ["中文中文", "[note]"])
    }
}
