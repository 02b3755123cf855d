import Testing
import VaultCore
@testable import Conversations

/// The history index: what it keeps, and that it never yields entries it cannot authenticate.
@Suite struct HistoryIndexTests {
    private func sample() -> HistoryIndex {
        var index = HistoryIndex()
        for number in 0..<3 {
            let id = "00000000000000a\(number)"
            index.entries[id] = HistoryIndex.Entry(
                size: 1000 + Int64(number), modified: 1_796_111_103.123456 + Double(number), inode: 77 + UInt64(number),
                summary: ConversationSummary(id: id, title: "títle \(number) ✓", model: "gemini-test", kind: number == 0 ? "ask" : "chat",
                                             turns: number * 10, first: 1_796_000_000, last: 1_796_111_103 + Int64(number)))
        }
        return index
    }

    @Test func roundTripKeepsEveryField() throws {
        let pair = try SealedBox.keyPair(seed: .random(count: 32))
        let bytes = try sample().encoded(with: pair)
        #expect(Array(bytes.prefix(4)) == Array("GVHI".utf8))
        #expect(!String(decoding: bytes, as: UTF8.self).contains("gemini-test"))
        let decoded = HistoryIndex.decode(bytes, with: pair)
        #expect(decoded.entries.count == 3)
        for (id, entry) in sample().entries {
            let other = try #require(decoded.entries[id])
            #expect(other.summary == entry.summary)
            #expect(other.size == entry.size && other.modified == entry.modified && other.inode == entry.inode)
        }
    }

    @Test func anIndexThatDoesNotOpenIsEmpty() throws {
        let pair = try SealedBox.keyPair(seed: .random(count: 32))
        let bytes = try sample().encoded(with: pair)
        #expect(HistoryIndex.decode(nil, with: pair).entries.isEmpty)
        #expect(HistoryIndex.decode(bytes, with: try SealedBox.keyPair(seed: .random(count: 32))).entries.isEmpty)
        var altered = bytes
        altered[altered.count / 2] ^= 0x40
        #expect(HistoryIndex.decode(altered, with: pair).entries.isEmpty)
        #expect(HistoryIndex.decode(Array(bytes.prefix(30)), with: pair).entries.isEmpty)
        #expect(HistoryIndex.decode(Array("GVHX".utf8) + bytes.dropFirst(4), with: pair).entries.isEmpty)
    }
}

/// Reopening a conversation finds where its complete records end without copying them.
@Suite struct RecordFramingTests {
    private func framed(_ records: [[UInt8]]) -> [UInt8] {
        records.flatMap { record -> [UInt8] in
            let count = UInt32(record.count)
            return [UInt8(count & 0xff), UInt8(count >> 8 & 0xff), UInt8(count >> 16 & 0xff), UInt8(count >> 24)] + record
        }
    }

    @Test func aTornLastRecordIsLeftOutBothWays() {
        let whole = framed([[1, 2, 3], [], Array(repeating: 7, count: 300)])
        #expect(HistoryStore.completeLength(whole) == whole.count)
        #expect(HistoryStore.split(whole) == [[1, 2, 3], [], Array(repeating: 7, count: 300)])
        for cut in [1, 3, 4, 150, 303] {
            let torn = Array(whole.dropLast(cut))
            let complete = HistoryStore.completeLength(torn)
            #expect(complete == 4 + 3 + 4, "cut \(cut)")
            #expect(HistoryStore.split(torn) == [[1, 2, 3], []], "cut \(cut)")
        }
        #expect(HistoryStore.completeLength([]) == 0)
        #expect(HistoryStore.completeLength([0xff, 0xff, 0xff, 0xff, 0]) == 0)
    }
}
