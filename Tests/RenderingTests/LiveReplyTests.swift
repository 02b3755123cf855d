import Testing
@testable import Rendering
import TerminalIO

/// A live reply fed piece by piece, its output replayed on a small terminal (ScreenReplay).
private final class Harness {
    var size: TerminalSize
    var now = 0.0
    var screen: ScreenReplay
    var output = ""
    let live: LiveReply
    let reflows: Bool

    init(columns: Int, rows: Int, frame: LiveReply.Frame = .labelled(StyledLine("gemini › ")), styled: Bool = false,
         markdown: Bool = true, reflows: Bool = true) {
        size = TerminalSize(columns: columns, rows: rows)
        screen = ScreenReplay(size: size)
        self.reflows = reflows
        var sizeNow: () -> TerminalSize = { TerminalSize(columns: 1, rows: 1) }
        var clockNow: () -> Double = { 0 }
        live = LiveReply(markdown: markdown ? MarkdownRenderer(styled: styled) : nil, frame: frame, size: { sizeNow() },
                         reflows: reflows, clock: { clockNow() })
        sizeNow = { [unowned self] in self.size }
        clockNow = { [unowned self] in self.now }
        screen.feed("above\n")
    }

    @discardableResult
    func feed(_ text: String, advance: Double = 0.1) -> String {
        now += advance
        return take(live.feed(text))
    }

    func resize(columns: Int, rows: Int) -> String {
        size = TerminalSize(columns: columns, rows: rows)
        screen.resize(to: size, reflow: reflows)
        now += 0.1
        return take(live.tick())
    }

    @discardableResult
    func finish() -> String { take(live.finish()) }

    private func take(_ text: String) -> String {
        output += text
        screen.feed(text)
        return text
    }

    /// What the reply left, below the line that was there before it.
    var reply: [String] { Array(screen.lines.dropFirst()) }
}

/// `lines` as a terminal `columns` wide shows them: a line too wide wraps.
private func asShown(_ lines: [String], columns: Int) -> [String] {
    lines.flatMap { line -> [String] in
        var rows = [""]
        var width = 0
        for character in line {
            let cells = DisplayWidth.of(character)
            if width + cells > columns { rows.append(""); width = 0 }
            rows[rows.count - 1].append(character)
            width += cells
        }
        return rows
    }
}

private func pieces(_ text: String, sizes: ClosedRange<Int> = 1...9) -> [String] {
    var generator = SystemRandomNumberGenerator()
    var result: [String] = []
    var rest = Substring(text)
    while !rest.isEmpty {
        let size = Int.random(in: sizes, using: &generator)
        result.append(String(rest.prefix(size)))
        rest = rest.dropFirst(size)
    }
    return result
}

private let sampleReply = """
# A title

A paragraph with **bold**, *emphasis* and `code`,
and a line break the model meant. It goes on long enough to wrap at least once on a narrow screen.

- one
- two
  - nested, with a long enough line to wrap under its bullet

```python
def greet(name):
    if name:
        return f"hi {name}"
```

| 名字 | n |
|---|--:|
| 你好世界 | 1 |

> a quote
> of two lines

last words
"""

@Suite struct LiveReplyTests {
    @Test(arguments: [80, 41, 24])
    func aStreamedReplyEndsAsTheWholeReplyRenders(columns: Int) {
        let expected = MarkdownRenderer(styled: false).lines(sampleReply, width: columns, firstWidth: columns - 9).map(\.plainText)
        for _ in 0..<20 {
            let harness = Harness(columns: columns, rows: 200)
            for piece in pieces(sampleReply) { harness.feed(piece) }
            harness.finish()
            var want = expected
            want[0] = "gemini › " + want[0]
            // A code line too long for 24 columns is printed whole and wraps on the terminal.
            #expect(harness.reply == asShown(want, columns: columns) + [""])
        }
    }

    @Test func theFirstWordsShowAtOnceBeforeTheirLineEnds() {
        let harness = Harness(columns: 60, rows: 20)
        let first = harness.feed("Hello, this is a long paragraph")
        #expect(first.hasPrefix("gemini › ") && first.contains("Hello, this is a long paragraph"))
        harness.feed(" that goes on")
        #expect(harness.reply == ["gemini › Hello, this is a long paragraph that goes on"])
    }

    @Test func nothingPrintedIsRepeatedWhenTheReplyIsTallerThanTheWindow() {
        let words = (0..<400).map { "w\($0)" }.joined(separator: " ")
        let reply = "Intro line.\n\n" + words + "\n\n- a\n- b\n"
        let expected = MarkdownRenderer(styled: false).lines(reply, width: 30, firstWidth: 21).map(\.plainText)
        for _ in 0..<10 {
            let harness = Harness(columns: 30, rows: 6)
            for piece in pieces(reply, sizes: 1...20) { harness.feed(piece) }
            harness.finish()
            var want = expected
            want[0] = "gemini › " + want[0]
            #expect(harness.reply == want + [""])
            // No redraw ever went above the window: the line before the reply is intact.
            #expect(harness.screen.lines.first == "above")
        }
    }

    @Test func onlyTheLinesThatChangedAreDrawnAgain() {
        let harness = Harness(columns: 20, rows: 20)
        harness.feed("first line here\nsecond line\nthird")
        let next = harness.feed(" more")
        #expect(!next.contains("first") && !next.contains("second") && next.contains("third more"))
        // Going up over the open lines only (none here), from the start of the changed one.
        #expect(!next.contains("\u{1B}[2A") && next.contains("\r\u{1B}[J"))
        #expect(harness.reply == ["gemini › first line", "here", "second line", "third more"])
    }

    @Test func eachRedrawIsSynchronizedAndDrawnWithoutAutowrap() {
        let harness = Harness(columns: 40, rows: 20)
        let drawn = harness.feed("Some words")
        #expect(drawn.hasPrefix("gemini › \u{1B}[?2026h") && drawn.hasSuffix("\u{1B}[?2026l"))
        #expect(drawn.contains("\u{1B}[?7lSome words\u{1B}[?7h"))
        // Printed for good with autowrap back on, and the cursor on a line of its own.
        let last = harness.finish()
        #expect(last.hasSuffix("\n\u{1B}[?2026l") && !last.contains("\u{1B}[?7l"))
    }

    @Test func redrawsAreSpacedOutButNothingIsLost() {
        let harness = Harness(columns: 40, rows: 20)
        #expect(!harness.feed("a", advance: 0).isEmpty)
        for word in ["b", "c", "d"] { #expect(harness.feed(" " + word, advance: 0).isEmpty) }
        harness.now += 1
        #expect(harness.live.tick().contains("a b c d"))
        #expect(harness.live.tick().isEmpty)
    }

    @Test(arguments: [true, false])
    func aResizeLaysTheOpenBlockOutAtTheNewWidth(reflows: Bool) {
        let harness = Harness(columns: 60, rows: 30, reflows: reflows)
        harness.feed("Done block.\n\n")
        harness.feed(String(repeating: "word ", count: 30))
        _ = harness.resize(columns: 30, rows: 30)
        harness.feed("end")
        harness.finish()
        let expected = MarkdownRenderer(styled: false).lines("Done block.\n\n" + String(repeating: "word ", count: 30) + "end", width: 30).map(\.plainText)
        #expect(harness.reply.dropFirst(2) == expected.dropFirst(2) + [""])
        #expect(harness.reply[0] == "gemini › Done block.")
        for line in harness.reply.dropFirst() { #expect(DisplayWidth.of(line) <= 30, "\(line)") }
    }

    @Test func aBubbleGrowsInPlaceAndNeverExceedsTheWidthAcrossResizes() {
        let harness = Harness(columns: 100, rows: 40, frame: .bubble(color: false))
        let source = "Here is code:\n\n```python\ndef f(x):\n    return x  # and a comment far too long for a bubble forty columns wide\n```\n\nDone."
        let parts = pieces(source, sizes: 3...8)
        for (index, piece) in parts.enumerated() {
            harness.feed(piece)
            if index == parts.count / 3 { _ = harness.resize(columns: 60, rows: 40) }
            if index == 2 * parts.count / 3 { _ = harness.resize(columns: 40, rows: 40) }
        }
        harness.finish()
        let lines = harness.reply
        // Drawn after the last resize, at 40 columns: every line fits.
        let last = lines.suffix(8)
        for line in last { #expect(DisplayWidth.of(line) <= 40, "\(line)") }
        #expect(lines.first?.hasPrefix("🤖 ╭") == true)
        #expect(lines.contains { $0.hasPrefix("   ╰") })
        #expect(lines.contains { $0.contains("│     return x") })
        // The comment too long for the bubble goes on in the code's frame: nothing is clipped.
        #expect(lines.contains { $0.contains("│ │ ↪ ") })
        #expect(!lines.contains { $0.contains("…") })
    }

    @Test func plainTextInABubbleKeepsItsLines() {
        let harness = Harness(columns: 50, rows: 20, frame: .bubble(color: false), markdown: false)
        for piece in pieces("line one\n  indented *not markdown*\nthree") { harness.feed(piece) }
        harness.finish()
        let inner = harness.reply.dropFirst().dropLast(2).map { String($0.dropFirst(5).dropLast(2)).trimmingTrailingSpaces() }
        #expect(inner == ["line one", "  indented *not markdown*", "three"])
    }

    /// Joiners and CRLF lines split at every scalar: no redraw ever shows a joiner as an
    /// escape, and the text after a CRLF-closed fence is drawn (it was dropped once).
    @Test(arguments: [true, false])
    func joinersAndCRLFSplitAnywhereDrawAsTheWholeReply(markdown: Bool) {
        let reply = "Family 👨\u{200D}👩\u{200D}👧 and क्\u{200D}ष and می\u{200C}خواهم\r\n\r\n```sh\r\necho hi\r\n```\r\ncurl after the fence\r\n"
        let scalars = Array(reply.unicodeScalars)
        let whole = Harness(columns: 80, rows: 40, markdown: markdown)
        whole.feed(reply)
        whole.finish()
        #expect(whole.reply.contains { $0.contains("curl after the fence") }, "\(whole.reply)")
        #expect(whole.reply.contains { $0.contains("👨\u{200D}👩\u{200D}👧") })
        for cut in 1..<scalars.count {
            let harness = Harness(columns: 80, rows: 40, markdown: markdown)
            harness.feed(String(String.UnicodeScalarView(scalars[..<cut])))
            harness.feed(String(String.UnicodeScalarView(scalars[cut...])))
            harness.finish()
            #expect(!harness.output.contains("\\u{200"), "cut at \(cut): \(harness.output)")
            #expect(harness.reply == whole.reply, "cut at \(cut)")
        }
    }

    @Test func aRepliesEscapeSequencesNeverReachTheTerminal() {
        let evil = "red \u{1B}[31mALERT\u{1B}[0m clip \u{1B}]52;c;ZXZpbA==\u{07} **bold \u{9B}2J** `\u{1B}[2J` &#27;[5m\n\n```\n\u{1B}]0;title\u{07}\n```\n"
        for frame in [LiveReply.Frame.labelled(StyledLine("gemini › ")), .bubble(color: true)] {
            let harness = Harness(columns: 40, rows: 10, frame: frame, styled: true)
            for piece in pieces(evil) { harness.feed(piece) }
            harness.finish()
            #expect(MarkdownFuzzing.foreignEscape(in: harness.output, redraw: true) == nil, "\(harness.output)")
            #expect(harness.output.contains("^[]52;c;"))
        }
    }
}

private extension String {
    func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}

@Suite struct LiveReplyResizeTests {
    /// Lines of a long block printed for good at one width, the rest laid out at another: the
    /// layout resumes after the last printed word, so no word is repeated or lost.
    @Test(arguments: [(40, 25), (30, 60)])
    func aResizeInATallBlockResumesAfterWhatWasPrinted(from: Int, to: Int) {
        let words = (0..<240).map { "w\($0)" }
        let replies = [words.joined(separator: " "),
                       words.chunked(12).map { "- " + $0.joined(separator: " ") }.joined(separator: "\n"),
                       "> " + words.joined(separator: " ")]
        // A terminal that cuts its rows when narrowed (xterm) loses what was there; one that
        // wraps them again keeps everything.
        for reply in replies {
            for reflows in to < from ? [true] : [true, false] {
                let harness = Harness(columns: from, rows: 10, reflows: reflows)
                let parts = pieces(reply, sizes: 2...9)
                for (index, piece) in parts.enumerated() {
                    harness.feed(piece)
                    if index == parts.count / 2 { _ = harness.resize(columns: to, rows: 10) }
                }
                harness.finish()
                // Rows wrapped again by the resize split words: compare the words' characters in order.
                let shown = harness.reply.joined().filter { $0 != " " && $0 != "•" && $0 != "│" }
                #expect(shown == "gemini›" + words.joined(), "\(reply.prefix(10)) reflows \(reflows): \(harness.reply)")
                for line in harness.reply.suffix(5) { #expect(DisplayWidth.of(line) <= to) }
            }
        }
    }
}

private extension Array {
    func chunked(_ size: Int) -> [[Element]] {
        stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}

/// A seeded generator, so a failing layout can be replayed.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct LiveReplyTallBubbleTests {
    /// chat's tall scenario in a bubble: pieces of any size, redraws put off for any time (a
    /// loaded machine), a resize part-way: every line and word once, in order.
    @Test func aTallBubbleLosesNothingWhateverTheTimingAndAResize() {
        let reply = (1...40).map { "Line \(String(format: "%02d", $0)) of a reply taller than the window.\n\n" }.joined()
            + (0..<300).map { "word" + String(format: "%03d", $0) }.joined(separator: " ") + "\n"
        for seed in UInt64(1)...40 {
            var random = SplitMix(state: seed)
            let harness = Harness(columns: 50, rows: 16, frame: .bubble(color: false))
            var rest = Substring(reply)
            var resized = false
            while !rest.isEmpty {
                let size = Int.random(in: 1...60, using: &random)
                harness.feed(String(rest.prefix(size)), advance: Double.random(in: 0.001...0.2, using: &random))
                rest = rest.dropFirst(size)
                if !resized, harness.output.contains("Line 20 of") {
                    resized = true
                    _ = harness.resize(columns: 40, rows: 16)
                }
            }
            harness.finish()
            let text = harness.reply.joined(separator: "\n")
            let numbered = text.matches(of: /Line \d\d of/).map { String(text[$0.range]) }
            let words = text.matches(of: /word\d{3}/).map { String(text[$0.range]) }
            #expect(words == (0..<300).map { "word" + String(format: "%03d", $0) }, "seed \(seed)")
            #expect(numbered.count == 40, "seed \(seed)")
        }
    }
}
