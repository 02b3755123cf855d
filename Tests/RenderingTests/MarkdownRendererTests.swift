import Testing
@testable import Rendering

@Suite struct MarkdownRendererTests {
    let plain = MarkdownRenderer(styled: false)
    let styled = MarkdownRenderer(styled: true)

    @Test func headingsEmphasisListsAndQuotes() {
        let text = plain.render("# Title\n\nSome *soft* and **strong** words.\n\n- one\n- two\n  1. inner\n\n> quoted\n> line")
        #expect(text == "Title\n\nSome soft and strong words.\n\n• one\n• two\n  1. inner\n\n│ quoted\n│ line\n")
        let painted = styled.render("# Title\n\n*soft* **strong** `code`")
        #expect(painted.contains("\u{1B}[1;4mTitle") && painted.contains("\u{1B}[3msoft") && painted.contains("\u{1B}[1mstrong")
                && painted.contains("\u{1B}[36mcode"))
    }

    /// Issue 25: H2 to H4 looked like bold text, and task lists showed `[ ]`.
    @Test func headingLevelsLookDifferentFromBoldAndFromEachOther() {
        let looks = (1...4).map { level in styled.render(String(repeating: "#", count: level) + " Head") }
        let bold = styled.render("**Head**")
        #expect(Set(looks + [bold]).count == 5, "\(looks) \(bold)")
        #expect(plain.render("## Head") == "Head\n")
    }

    @Test func taskListItemsShowBoxes() {
        #expect(plain.render("- [ ] todo\n- [x] done\n- plain") == "☐ todo\n☑ done\n• plain\n")
        #expect(plain.render("1. [ ] stays as written") == "1. [ ] stays as written\n")
    }

    @Test func codeBlocksAreSetOffWithTheirLanguage() {
        let text = plain.render("```swift\nlet x = 1\nprint(x)\n```\n")
        #expect(text == "┌─ #1 swift ─\n│ let x = 1\n│ print(x)\n└─\n")
    }

    @Test func linksShowTheirURL() {
        #expect(plain.render("see [the docs](https://example.com/d)") == "see the docs (https://example.com/d)\n")
        #expect(plain.render("<https://example.com>") == "https://example.com\n")
    }

    /// cmark-gfm's global tables once crashed a parallel test run; renders must not race.
    @Test func rendersFromManyThreadsAtOnceAgree() async {
        let document = "# T\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nsee [x](https://e.com) ~~old~~ <https://e.com>\n\n```c\nx\n```\n"
        let expected = plain.render(document)
        let renderer = plain
        let results = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 {
                group.addTask { (0..<150).allSatisfy { _ in renderer.render(document) == expected } }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: 8))
    }

    @Test func tablesAlignByDisplayWidth() {
        let text = plain.render("| 名字 | n |\n|---|---|\n| 你好世界 | 1 |\n| ab | 22 |\n")
        let lines = text.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        let widths = Set(lines.map { DisplayWidth.of($0) })
        #expect(widths.count == 1, "\(lines)")
        #expect(lines[0].hasPrefix("名字     │ n"))
    }

    @Test func escapesCannotBeInjectedThroughMarkdown() {
        let text = styled.render("**\u{1B}]0;pwned\u{07}** and `\u{1B}[2J`")
        #expect(!text.contains("\u{1B}]") && !text.contains("\u{1B}[2J") && !text.contains("\u{07}"))
        #expect(text.contains("^[]0;pwned"))
        // Character references are decoded by the parser, and neutralised after it.
        let references = styled.render("&#27;]0;PWNED&#7; &#x9b;2J [l](&#27;[5mURL)\n\n```&#27;[31m\nx\n```")
        #expect(!references.contains("\u{1B}]0;") && !references.contains("\u{9B}") && !references.contains("\u{1B}[5m")
                && !references.contains("\u{07}"))
    }

    @Test func aRepliesLineBreaksAreKept() {
        // CommonMark would join these lines; the model meant them (a poem, an address, steps).
        #expect(plain.render("Roses are red,\nviolets are blue.\n\n1 Main St\nSpringfield") == "Roses are red,\nviolets are blue.\n\n1 Main St\nSpringfield\n")
        #expect(plain.render("- first step\n  still the first\n- second") == "• first step\n  still the first\n• second\n")
    }

    @Test func paragraphsWrapAtTheWidthUnderTheirIndentation() {
        let text = plain.render("- a list item long enough to wrap twice at twenty\n  - nested one\n\n> a quote that wraps as well", width: 20)
        #expect(text == "• a list item long\n  enough to wrap\n  twice at twenty\n  ◦ nested one\n\n│ a quote that wraps\n│ as well\n")
        for line in text.split(separator: "\n") { #expect(DisplayWidth.of(line) <= 20) }
    }

    @Test func codeKeepsEverySpaceAndBreaksOnlyAtTheWidthInsideItsFrame() {
        let source = "```python\ndef f(x):\n    if x:\n\treturn [x,    x]  # a comment long enough to overflow\n```\n"
        let lines = plain.render(source, width: 30).split(separator: "\n").map(String.init)
        #expect(lines[0] == "┌─ #1 python ─")
        #expect(lines[1] == "│ def f(x):" && lines[2] == "│     if x:")
        // A tab goes to the next multiple of four; a line too long goes on in the frame, marked.
        #expect(lines[3] == "│     return [x,    x]  # a co")
        #expect(lines[4] == "│ ↪ mment long enough to overf" && lines[5] == "│ ↪ low" && lines[6] == "└─")
        for line in lines { #expect(DisplayWidth.of(line) <= 30, "\(line)") }
        // Without a width (a pipe) every line stays whole.
        #expect(plain.render(source).contains("│     return [x,    x]  # a comment long enough to overflow\n"))
        // Wide characters are never cut in two.
        let wide = plain.render("```\n一二三四五六七八\n```\n", width: 9).split(separator: "\n").map(String.init)
        #expect(wide == ["┌─ #1 ─", "│ 一二三", "│ ↪ 四五", "│ ↪ 六七", "│ ↪ 八", "└─"])
    }

    @Test func tablesAlignColumnsAsTheyAsk() {
        let lines = plain.render("| name | n |\n|:--|--:|\n| a | 1 |\n| bb | 100 |\n").split(separator: "\n").map(String.init)
        #expect(lines == ["name │   n", "─────┼────", "a    │   1", "bb   │ 100"])
    }

    /// A table of four columns whose text takes about 150 columns.
    static let wideTable = """
    | Option | What it does | Default | Where it is set |
    |---|---|--:|---|
    | timeout | The number of seconds a request may take before gemvault gives up on it | 60 | config file, GEMVAULT_TIMEOUT or --timeout |
    | model | The Gemini model used when none is named on the command line | gemini-flash | config file or GEMVAULT_MODEL |
    """

    @Test(arguments: [80, 60])
    func aTableWiderThanTheWindowWrapsItsCellsInsideTheirColumns(width: Int) {
        let lines = plain.render(Self.wideTable, width: width).split(separator: "\n").map(String.init)
        for line in lines { #expect(DisplayWidth.of(line) <= width, "\(line)") }
        // Columns stay columns: every row has its three separators at the same places.
        let bars = lines.map { line in line.enumerated().filter { $0.element == "│" || $0.element == "┼" }.map(\.offset) }
        #expect(Set(bars).count == 1 && bars[0].count == 3, "\(lines)")
        // Nothing is lost: each column, read top to bottom, holds its cells' words in order.
        let column = lines.filter { $0.contains("│") }.map { String($0.split(separator: "│", omittingEmptySubsequences: false)[1]) }
        let words = column.joined(separator: " ").split(separator: " ").joined(separator: " ")
        #expect(words.contains("The number of seconds a request may take before gemvault gives up on it"))
        #expect(words.contains("The Gemini model used when none is named on the command line"))
        // The right-aligned column keeps its alignment.
        #expect(lines.contains { $0.contains("   60 │") })
    }

    @Test func aTableThatCannotFitIsShownARecordPerRow() {
        let lines = plain.render(Self.wideTable, width: 30).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for line in lines { #expect(DisplayWidth.of(line) <= 30, "\(line)") }
        #expect(lines.first == "Option: timeout")
        #expect(lines.contains("Default: 60") && lines.contains("Option: model") && lines.contains("Default: gemini-flash"))
        // A long value wraps under its name, indented; records are a blank line apart.
        let what = lines.firstIndex { $0.hasPrefix("What it does: ") }!
        #expect(lines[what + 1].hasPrefix("  ") && !lines[what + 1].hasPrefix("   "))
        #expect(lines[lines.firstIndex(of: "Option: model")! - 1] == "")
        // Styled, the names are bold.
        #expect(MarkdownRenderer(styled: true).render(Self.wideTable, width: 30).contains("\u{1B}[1mOption\u{1B}[0m: timeout"))
    }

    @Test func aTableThatFitsKeepsItsNaturalColumns() {
        let lines = plain.render(Self.wideTable, width: 200).split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines[2].hasPrefix("timeout │ The number of seconds a request may take before gemvault gives up on it │           60 │"))
    }

    @Test func aLabelShortensTheFirstLineOrStandsAboveWhatCannotWrap() {
        let paragraph = plain.lines("one two three four", width: 12, firstWidth: 4).map(\.plainText)
        #expect(paragraph == ["one", "two three", "four"])
        let code = plain.lines("```\nx = 1\n```", width: 12, firstWidth: 4).map(\.plainText)
        #expect(code == ["", "┌─ #1 ─", "│ x = 1", "└─"])
    }
}

@Suite struct MarkdownBlockSplitterTests {
    let plain = MarkdownRenderer(styled: false)

    private func rendered(_ blocks: [MarkdownBlock]) -> [String] {
        blocks.map { MarkdownRenderer.layout($0, width: 80, firstWidth: 80).map(\.plainText).joined(separator: "\n") }
    }

    @Test func aBlockIsFinalOnceAWholeLineOfTheNextHasArrived() {
        var splitter = MarkdownBlockSplitter(renderer: plain)
        var final: [MarkdownBlock] = []
        for chunk in ["# He", "ading\n\nA para", "graph that ", "ends.\n\n| a | b |\n|--", "-|---|\n| 1 ", "| 2 |\n", "\naf"] {
            final += splitter.append(chunk)
        }
        // Half a line ("af") could be anything, so the table is still open, shown as it reads now.
        #expect(rendered(final) == ["Heading", "A paragraph that ends."])
        #expect(rendered(splitter.openBlocks()) == ["a │ b\n──┼──\n1 │ 2", "af"])
        final += splitter.append("ter\n")
        // The table arrived split across chunks and is final whole.
        #expect(rendered(final) == ["Heading", "A paragraph that ends.", "a │ b\n──┼──\n1 │ 2"])
        #expect(splitter.openSource == "after\n")
        #expect(rendered(splitter.finish()) == ["after"])
        #expect(splitter.finish().isEmpty)
    }

    @Test func aStreamCutAnywhereSplitsIntoTheBlocksOfTheWholeReply() {
        let reply = "# Title\n\nSome **bold** text\nover two lines.\n\n- one\n- two\n\n  still two\n\n| a | b |\n|---|---|\n| 你好 | 👋 |\n\n"
            + "> quoted\n> more\n\n```swift\nlet x = 1\n\nlet y = 2\n```\n\nSetext\n===\n\nlast paragraph"
        let whole = plain.parse(reply).map(\.block)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            var splitter = MarkdownBlockSplitter(renderer: plain)
            var blocks: [MarkdownBlock] = []
            var rest = Substring(reply)
            while !rest.isEmpty {
                let size = Int.random(in: 1...12, using: &generator)
                blocks += splitter.append(String(rest.prefix(size)))
                rest = rest.dropFirst(size)
            }
            blocks += splitter.finish()
            #expect(blocks == whole)
        }
    }

    @Test func aFloodOfTinyPiecesKeepsEveryOne() {
        var splitter = MarkdownBlockSplitter(renderer: plain)
        var blocks: [MarkdownBlock] = []
        for index in 0..<20_000 { blocks += splitter.append("w\(index) ") }
        blocks += splitter.finish()
        let words = rendered(blocks).joined(separator: "\n").split(whereSeparator: { $0 == " " || $0 == "\n" })
        #expect(words.count == 20_000 && words.first == "w0" && words.last == "w19999")
    }

    @Test func anUnterminatedFenceIsStillShownAtTheEnd() {
        var splitter = MarkdownBlockSplitter(renderer: plain)
        var blocks = splitter.append("Code:\n\n```python\nprint('hi')\n")
        blocks += splitter.finish()
        #expect(rendered(blocks) == ["Code:", "┌─ #1 python ─\n│ print('hi')\n└─"])
    }
}
