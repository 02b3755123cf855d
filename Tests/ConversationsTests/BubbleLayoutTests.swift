import Foundation
import Testing
@testable import Conversations

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
            // At most about 70 % of the width.
            for line in mine + theirs {
                #expect(DisplayWidth.of(line.trimmingCharacters(in: .whitespaces)) <= Int(Double(width) * 0.7) + 3)
            }
        }
    }

    @Test func displayWidthCountsColumnsNotScalars() {
        #expect(DisplayWidth.of("你好") == 4 && DisplayWidth.of("🚀") == 2 && DisplayWidth.of("abc") == 3)
        #expect(DisplayWidth.wrap("一二三四五六七八九十", width: 6) == ["一二三", "四五六", "七八九", "十"])
        #expect(DisplayWidth.wrap("aaaa bbbb cccc", width: 9) == ["aaaa bbbb", "cccc"])
        #expect(DisplayWidth.wrap("abcdefghij", width: 4) == ["abcd", "efgh", "ij"])
    }

    @Test func colourPaintsTheBubbleBlueOrGray() {
        let layout = BubbleLayout(width: 60, color: true)
        #expect(layout.bubble("hi", from: .user)[1].contains("\u{1B}[34m"))
        #expect(layout.bubble("hi", from: .model)[1].contains("\u{1B}[90m"))
    }
}
