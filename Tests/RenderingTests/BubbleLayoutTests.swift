import Foundation
import Testing
@testable import Rendering

/// The seed's chat: Chinese, emoji, a long unbroken word, a multi-line answer.
let goldenConversation: [(user: String, model: String)] = [
    ("你好！请用一句话介绍一下你自己。", "我是一个由谷歌训练的大型语言模型，很高兴为你服务 🚀"),
    ("Can you wrap a very long word like pneumonoultramicroscopicsilicovolcanoconiosis?",
     "Sure: it is broken where it must be.\nA second line follows, and an emoji 🎉 sits inside."),
]

@Suite struct BubbleLayoutTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    @Test(arguments: [40, 80, 120])
    func goldenLayout(width: Int) throws {
        let rendered = BubbleLayout(width: width, color: false).render(goldenConversation)
        let file = Self.fixtures.appendingPathComponent("bubbles-\(width).txt")
        if ProcessInfo.processInfo.environment["GEMVAULT_UPDATE_GOLDEN"] != nil {
            try rendered.write(to: file, atomically: true, encoding: .utf8)
        }
        #expect(rendered == (try String(contentsOf: file, encoding: .utf8)))
    }

    @Test(arguments: [40, 80, 120])
    func bubblesFitAndAlignByDisplayWidth(width: Int) {
        let layout = BubbleLayout(width: width, color: false)
        for (user, model) in goldenConversation {
            let mine = layout.bubble(user, from: .user)
            let theirs = layout.bubble(model, from: .model)
            for line in mine + theirs { #expect(DisplayWidth.of(line) <= width, "\(line)") }
            // The user's bubble ends at the right edge, the avatar beside its top line.
            #expect(DisplayWidth.of(mine[0]) == width && mine[0].hasSuffix(" 🧑"))
            #expect(mine.allSatisfy { DisplayWidth.of($0) == width })
            // The model's starts at the left edge, behind its avatar.
            #expect(theirs[0].hasPrefix("🤖 ╭"))
            // The user's at most 70 % of the width, the model's all of it but a margin.
            for line in mine { #expect(DisplayWidth.of(line.trimmingCharacters(in: .whitespaces)) <= Int(Double(width) * 0.7) + 3) }
            for line in theirs { #expect(DisplayWidth.of(line) <= width - max(2, width / 10)) }
        }
    }

    @Test func plainWrappingKeepsLinesAndMeasuresColumns() {
        #expect(DisplayWidth.wrap("一二三四五六七八九十", width: 6) == ["一二三", "四五六", "七八九", "十"])
        #expect(DisplayWidth.wrap("aaaa bbbb cccc", width: 9) == ["aaaa bbbb", "cccc"])
        #expect(DisplayWidth.wrap("abcdefghij", width: 4) == ["abcd", "efgh", "ij"])
        #expect(DisplayWidth.wrap("first\n  second", width: 20) == ["first", "  second"])
    }

    /// A reply's markdown inside the bubble: code keeps its indentation, lists nest, tables
    /// align, and nothing crosses the frame.
    @Test(arguments: [40, 60, 100])
    func markdownInsideABubbleKeepsItsShape(width: Int) {
        let reply = "Steps:\n\n1. first\n   - nested point\n2. second\n\n```python\ndef f(x):\n    if x:\n        return x\n```\n\n| 名字 | n |\n|---|---|\n| 你好 | 1 |\n| ab | 22 |"
        let layout = BubbleLayout(width: width, color: false)
        let lines = layout.render([(user: "show me\n  indented", model: reply)], markdown: MarkdownRenderer(styled: false))
            .split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for line in lines { #expect(DisplayWidth.of(line) <= width, "\(line)") }
        #expect(lines.contains { $0.contains("│ │     if x:") } && lines.contains { $0.contains("│ │         return x") })
        #expect(lines.contains { $0.contains("│    ◦ nested point") })
        #expect(lines.contains { $0.contains("│   indented") })
        // The table's own separator (the second │ of a row) stands in one column on every row.
        let table = lines.filter { $0.contains("名字") || $0.contains("你好") || $0.contains("│ ab ") }
        #expect(table.count == 3)
        let columns = Set(table.map { line in DisplayWidth.of(line.split(separator: "│", maxSplits: 2, omittingEmptySubsequences: false).prefix(2).joined(separator: "│")) })
        #expect(columns.count == 1, "\(table)")
    }

    @Test func colourPaintsTheBubbleBlueOrGray() {
        let layout = BubbleLayout(width: 60, color: true)
        #expect(layout.bubble("hi", from: .user)[1].contains("\u{1B}[34m"))
        #expect(layout.bubble("hi", from: .model)[1].contains("\u{1B}[90m"))
    }
}
