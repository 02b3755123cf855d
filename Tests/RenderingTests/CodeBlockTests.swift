import Testing
@testable import Rendering

@Suite struct CodeBlockTests {
    @Test func codeBlocksAreFoundInOrderWithoutTheirFences() {
        let reply = "intro\n```swift\nlet a = 1\n\nlet b = 2\n```\ntext\n  ~~~~\n  indented\n   more\n  ~~~~\n````\nhas ``` inside\n````\n- item\n\n      nested in a list\n```\nleft open\n\n"
        #expect(MarkdownRenderer.codeBlocks(in: reply) == ["let a = 1\n\nlet b = 2", "indented\n more", "has ``` inside", "nested in a list", "left open"])
        #expect(MarkdownRenderer.codeBlocks(in: "no code here, only ``inline``") == [])
        #expect(MarkdownRenderer.codeBlocks(in: "``` not ` a fence\ncode") == [])
    }

    @Test func theRenderedNumbersAreTheOnesCopyTakes() {
        let reply = "one:\n\n```sh\nls\n```\n\n> quoted:\n>\n>     indented\n\n- in a list:\n\n  ```\n  x\n  ```\n"
        let headers = MarkdownRenderer(styled: false).render(reply).split(separator: "\n").filter { $0.hasPrefix("┌─") || $0.contains("┌─") }
        #expect(headers.count == 3 && headers[0] == "┌─ #1 sh ─" && headers[1].hasSuffix("┌─ #2 ─") && headers[2].hasSuffix("┌─ #3 ─"), "\(headers)")
        #expect(MarkdownRenderer.codeBlocks(in: reply) == ["ls", "indented", "x"])
    }

    @Test func aStreamingReplyNumbersItsCodeBlocksAsTheWholeReplyDoes() {
        let renderer = MarkdownRenderer(styled: false)
        var splitter = MarkdownBlockSplitter(renderer: renderer)
        let reply = "```a\n1\n```\n\ntext\n\n```b\n2\n```\n\nmore\n\n```c\n3\n```\n"
        var blocks: [MarkdownBlock] = []
        for character in reply { blocks += splitter.append(String(character)) }
        blocks += splitter.finish()
        let numbers = blocks.compactMap { block -> Int? in if case .code(_, _, let number) = block { return number } else { return nil } }
        #expect(numbers == [1, 2, 3])
    }
}
