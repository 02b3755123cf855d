import Testing
@testable import Conversations

@Suite struct MarkdownRendererTests {
    let plain = MarkdownRenderer(styled: false)
    let styled = MarkdownRenderer(styled: true)

    @Test func headingsEmphasisListsAndQuotes() {
        let text = plain.render("# Title\n\nSome *soft* and **strong** words.\n\n- one\n- two\n  1. inner\n\n> quoted\n> line")
        #expect(text == "Title\n\nSome soft and strong words.\n\n• one\n• two\n  1. inner\n\n│ quoted line\n")
        let painted = styled.render("# Title\n\n*soft* **strong** `code`")
        #expect(painted.contains("\u{1B}[1;4mTitle") && painted.contains("\u{1B}[3msoft") && painted.contains("\u{1B}[1mstrong")
                && painted.contains("\u{1B}[36mcode"))
    }

    @Test func codeBlocksAreSetOffWithTheirLanguage() {
        let text = plain.render("```swift\nlet x = 1\nprint(x)\n```\n")
        #expect(text == "┌─ swift ─\n│ let x = 1\n│ print(x)\n└─\n")
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

    @Test func streamingPrintsEachBlockOnceAndNeverRedraws() {
        let stream = MarkdownStream(renderer: plain)
        var out = ""
        for chunk in ["# He", "ading\n\nA para", "graph that ", "ends.\n\n| a | b |\n|--", "-|---|\n| 1 ", "| 2 |\n", "\naf", "ter\n"] {
            out += stream.feed(chunk)
        }
        // The table arrived split across chunks and is printed whole, once a whole line of the
        // next block had arrived (half of one, "af", could be anything).
        #expect(out == "Heading\n\nA paragraph that ends.\n\na │ b\n──┼──\n1 │ 2\n")
        out += stream.finish()
        #expect(out.hasSuffix("\nafter\n"))
        #expect(stream.finish() == "")
    }

    @Test func aStreamCutAnywherePrintsWhatTheWholeReplyRendersTo() {
        let reply = "# Title\n\nSome **bold** text\nover two lines.\n\n- one\n- two\n\n  still two\n\n| a | b |\n|---|---|\n| 你好 | 👋 |\n\n"
            + "> quoted\n> more\n\n```swift\nlet x = 1\n\nlet y = 2\n```\n\nSetext\n===\n\nlast paragraph"
        let whole = MarkdownRenderer(styled: true).render(reply)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let stream = MarkdownStream(renderer: MarkdownRenderer(styled: true))
            var out = ""
            var rest = Substring(reply)
            while !rest.isEmpty {
                let size = Int.random(in: 1...12, using: &generator)
                out += stream.feed(String(rest.prefix(size)))
                rest = rest.dropFirst(size)
            }
            out += stream.finish()
            #expect(out == whole)
        }
    }

    @Test func aFloodOfTinyPiecesKeepsEveryOne() {
        let stream = MarkdownStream(renderer: plain)
        var out = ""
        for index in 0..<20_000 { out += stream.feed("w\(index) ") }
        out += stream.finish()
        #expect(out.split(separator: " ").count == 20_000 && out.hasPrefix("w0 w1 ") && out.hasSuffix("w19999\n"))
    }

    @Test func anUnterminatedFenceIsStillShownAtTheEnd() {
        let stream = MarkdownStream(renderer: plain)
        var out = stream.feed("Code:\n\n```python\nprint('hi')\n")
        out += stream.finish()
        #expect(out == "Code:\n\n┌─ python ─\n│ print('hi')\n└─\n")
    }
}
