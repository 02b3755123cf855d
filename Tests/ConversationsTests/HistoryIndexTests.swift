import Glibc
import Foundation
import GemvaultTesting
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

    @Test func itsSizeShowsOnlyAPaddingBucketNotTheTitlesLength() throws {
        let pair = try SealedBox.keyPair(seed: .random(count: 32))
        func size(title: String) throws -> Int {
            var index = HistoryIndex()
            index.entries["00000000000000a0"] = HistoryIndex.Entry(size: 1, modified: 2, inode: 3, summary: ConversationSummary(
                id: "00000000000000a0", title: title, model: "gemini-test", kind: "chat", turns: 1, first: 4, last: 5))
            return try index.encoded(with: pair).count
        }
        #expect(try size(title: "hi") == size(title: String(repeating: "a much longer title ", count: 4)))
        #expect(try size(title: "hi") < size(title: String(repeating: "x", count: 400)))
    }

    /// An index written before it was padded (version 1) still reads; a padded one with bytes
    /// after its entries that are not zero does not.
    @Test func anUnpaddedIndexOfVersion1StillReads() throws {
        let pair = try SealedBox.keyPair(seed: .random(count: 32))
        func plain(version: UInt8, trailing: [UInt8]) -> [UInt8] {
            var bytes: [UInt8] = [version]
            func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
            func put(_ text: String) {
                put(UInt32(text.utf8.count))
                bytes.append(contentsOf: text.utf8)
            }
            put(UInt32(1))
            put("00000000000000b1")
            put(UInt64(900))
            put(Double(1_796_111_103.5).bitPattern)
            put(UInt64(42))
            put(UInt32(3))
            put(UInt64(1_796_000_000))
            put(UInt64(1_796_111_103))
            put("an old title")
            put("gemini-test")
            put("chat")
            return bytes + trailing
        }
        func sealed(_ plain: [UInt8]) throws -> [UInt8] { Array("GVHI".utf8) + (try pair.sealPrivately(plain, purpose: HistoryIndex.purpose)) }
        let old = HistoryIndex.decode(try sealed(plain(version: 1, trailing: [])), with: pair)
        #expect(old.entries["00000000000000b1"]?.summary.title == "an old title" && old.entries["00000000000000b1"]?.inode == 42)
        #expect(HistoryIndex.decode(try sealed(plain(version: 1, trailing: [0])), with: pair).entries.isEmpty)
        let unpadded = plain(version: 2, trailing: [])
        #expect(HistoryIndex.decode(try sealed(unpadded), with: pair).entries.isEmpty)
        var padded = unpadded + [UInt8](repeating: 0, count: 256 - unpadded.count)
        #expect(HistoryIndex.decode(try sealed(padded), with: pair).entries.count == 1)
        padded[padded.count - 1] = 1
        #expect(HistoryIndex.decode(try sealed(padded), with: pair).entries.isEmpty)
    }

    @Test func aConversationsKindIsTypedAndAnUnknownOneIsKeptAsWritten() throws {
        let ask = try JSONDecoder().decode(ConversationMeta.self, from: Data(#"{"title":"t","model":"m","created":1,"kind":"ask"}"#.utf8))
        #expect(ask.conversationKind == .ask && ask.kind == "ask")
        let newer = ConversationMeta(title: "t", model: "m", system: nil, created: 1, kind: "agent")
        #expect(newer.conversationKind == nil && newer.kind == "agent")
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
    private func framed(_ records: [[UInt8]]) -> [UInt8] { records.flatMap(HistoryStore.framed) }

    @Test func aTornLastRecordIsLeftOut() {
        let whole = framed([[1, 2, 3], [], Array(repeating: 7, count: 300)])
        #expect(HistoryStore.split(whole) == [[1, 2, 3], [], Array(repeating: 7, count: 300)])
        for cut in [1, 3, 4, 150, 303] {
            #expect(HistoryStore.split(Array(whole.dropLast(cut))) == [[1, 2, 3], []], "cut \(cut)")
        }
        #expect(HistoryStore.split([]).isEmpty && HistoryStore.split([0xff, 0xff, 0xff, 0xff, 0]).isEmpty)
    }
}

/// Records are padded, numbered and chained; passphrase changes add conversation keys.
@Suite struct RecordChainTests {
    let first = try! SealedBox.keyPair(seed: .random(count: 32))
    let second = try! SealedBox.keyPair(seed: .random(count: 32))

    /// A file as a writer makes it: the header, then records sealed to `sealedTo` in turn.
    func file(_ bodies: [String], sealedTo: [SealedBox.KeyPair]) throws -> [[UInt8]] {
        let header = HistoryStore.fileMagic + sealedTo[0].publicKey
        var records = [header]
        for (offset, body) in bodies.enumerated() {
            let plain = HistoryStore.recordPlaintext(Array(body.utf8), sequence: UInt64(offset + 1), previous: Sodium.blake2b256(records.last![...]))
            records.append(try SealedBox.seal(plain, to: sealedTo[min(offset, sealedTo.count - 1)].publicKey))
        }
        return records
    }

    let bodies = [#"{"meta":{"_0":{"title":"t","model":"m","created":1,"kind":"chat"}}}"#,
                  #"{"turn":{"_0":{"user":"one","model":"1","interrupted":false,"time":1}}}"#,
                  #"{"turn":{"_0":{"user":"two","model":"2","interrupted":false,"time":2}}}"#,
                  #"{"turn":{"_0":{"user":"three","model":"3","interrupted":false,"time":3}}}"#]

    func decode(_ records: [[UInt8]], _ keys: HistoryKeys) throws -> Transcript {
        try HistoryStore.decode(records.flatMap(HistoryStore.framed), id: "x", path: "x", with: keys)
    }

    @Test func plaintextsArePaddedToBuckets() {
        #expect([1, 256, 257, 4000, 65536, 65537, 200_000].map(HistoryStore.paddedLength) == [256, 256, 512, 4096, 65536, 131_072, 262_144])
        let short = HistoryStore.recordPlaintext(Array(#"{"undo":{}}"#.utf8), sequence: 3, previous: [UInt8](repeating: 1, count: 32))
        let turn = HistoryStore.recordPlaintext(Array(bodies[1].utf8), sequence: 3, previous: [UInt8](repeating: 1, count: 32))
        #expect(short.count == 256 && turn.count == 256)
    }

    @Test func recordsSealedToEarlierAndNewerKeysAllOpen() throws {
        // The meta and the first turn before a passphrase change, the rest after it.
        let records = try file(bodies, sealedTo: [first, first, second])
        #expect(try decode(records, HistoryKeys([second, first])).turns.map(\.user) == ["one", "two", "three"])
        let withTheOldKeyOnly = try decode(records, HistoryKeys([first]))
        #expect(withTheOldKeyOnly.turns.map(\.user) == ["one"] && withTheOldKeyOnly.damage == "record 3 does not open")
        #expect(throws: HistoryStore.Failure.crypto("x was sealed for another conversation key")) { try decode(records, HistoryKeys([second])) }
    }

    @Test func anUnnumberedRecordAfterNumberedOnesIsDamage() throws {
        var records = try file(Array(bodies.prefix(2)), sealedTo: [first])
        records.append(try SealedBox.seal(Array(bodies[2].utf8), to: first.publicKey))
        let transcript = try decode(records, HistoryKeys([first]))
        #expect(transcript.damage == "record 3 is of the old, unnumbered kind among numbered ones")
        #expect(transcript.turns.map(\.user) == ["one"])
        // The other way round is a file begun by an older gemvault and continued by a newer one.
        var legacy = [HistoryStore.fileMagic + first.publicKey]
        for body in bodies.prefix(2) { legacy.append(try SealedBox.seal(Array(body.utf8), to: first.publicKey)) }
        legacy.append(try SealedBox.seal(HistoryStore.recordPlaintext(Array(bodies[2].utf8), sequence: 3, previous: Sodium.blake2b256(legacy.last![...])),
                                         to: first.publicKey))
        let continued = try decode(legacy, HistoryKeys([first]))
        #expect(continued.damage == nil && continued.turns.map(\.user) == ["one", "two"])
    }

    @Test func droppedReorderedOrRepeatedRecordsAreFound() throws {
        let keys = HistoryKeys([first])
        let records = try file(bodies, sealedTo: [first])
        #expect(try decode(records, keys).damage == nil && decode(records, keys).turns.map(\.user) == ["one", "two", "three"])
        var dropped = records
        dropped.remove(at: 3)
        var reordered = records
        reordered.swapAt(3, 4)
        var repeated = records
        repeated.insert(records[3], at: 4)
        for (broken, intact) in [(dropped, ["one"]), (reordered, ["one"]), (repeated, ["one", "two"])] {
            let transcript = try decode(broken, keys)
            #expect(transcript.damage?.contains("dropped, reordered or repeated") == true)
            #expect(transcript.turns.map(\.user) == intact)
        }
    }
}

/// A long conversation is opened into one allocation, split between the cores: the records
/// still come back in order, each with the key that opens it, and damage is still found where it is.
@Suite struct LongConversationTests {
    let first = try! SealedBox.keyPair(seed: .random(count: 32))
    let second = try! SealedBox.keyPair(seed: .random(count: 32))

    func bodies(_ count: Int) -> [String] {
        [#"{"meta":{"_0":{"title":"t","model":"m","created":1,"kind":"chat"}}}"#]
            + (1..<count).map { #"{"turn":{"_0":{"user":"question \#($0)","model":"answer","interrupted":false,"time":\#($0)}}}"# }
    }

    @Test func everyRecordOpensInOrderAcrossKeys() throws {
        let count = OpenedRecords.parallelFrom * 3
        // The first 100 records before a passphrase change, the rest after it.
        let records = try RecordChainTests().file(bodies(count), sealedTo: Array(repeating: first, count: 100) + [second])
        let transcript = try RecordChainTests().decode(records, HistoryKeys([second, first]))
        #expect(transcript.damage == nil)
        #expect(transcript.turns.map(\.user) == (1..<count).map { "question \($0)" })
    }

    @Test func aRunSplitBetweenThreadsOpensEachRecordWithItsKey() throws {
        let count = OpenedRecords.parallelFrom * 2
        let records = try RecordChainTests().file(bodies(count), sealedTo: Array(repeating: first, count: 50) + [second])
        let file = records.flatMap(HistoryStore.framed)
        var ranges: [Range<Int>] = []
        HistoryStore.forEachRecord(file) { ranges.append($0) }
        // Three threads, whatever this machine has: the chunks meet mid-run and across the key change.
        let opened = OpenedRecords(1..<ranges.count, of: ranges, in: file, with: HistoryKeys([second, first]), tryingFirst: 1, cores: 3)
        #expect(opened.lastKey == 0)
        for position in 2..<ranges.count {
            guard case .success(let (.turn(turn), true)) = opened.parsed[position - 1] else {
                Issue.record("record \(position): \(String(describing: opened.parsed[position - 1]))")
                continue
            }
            #expect(turn.user == "question \(position - 1)")
        }
    }

    @Test func aFileIsOpenedInRunsOfAboutAMebibyte() {
        let sizes = [300_000, 300_000, 300_000, 300_000, 2_000_000, 10, 10]
        #expect(OpenedRecords.runs(0..<sizes.count, sizes: { sizes[$0] }) == [0..<3, 3..<4, 4..<5, 5..<7])
        #expect(OpenedRecords.runs(1..<1, sizes: { _ in 1 }).isEmpty)
    }

    @Test func damageLateInTheFileStopsTheReadingThere() throws {
        let count = OpenedRecords.parallelFrom * 3
        var records = try RecordChainTests().file(bodies(count), sealedTo: [first])
        records[150][40] ^= 1
        let transcript = try RecordChainTests().decode(records, HistoryKeys([first]))
        #expect(transcript.damage == "record 150 does not open")
        #expect(transcript.turns.count == 148)
    }
}

/// A chat that goes on with a conversation continues its chain from what it loaded, and reads
/// the file again when another writer appended in between.
@Suite struct ReopenTests {
    let key = SecretBytes.random(count: 32)
    /// Removed when the test ends.
    let scratch = TemporaryFolder("reopen")

    func store() throws -> HistoryStore {
        let directory = scratch.newFolder()
        let store = HistoryStore(stateDirectory: directory, vaultPath: directory + "/vault")
        try store.saveRecipient(conversationKey: key, vaultHistory: nil)
        return store
    }

    func turn(_ text: String) -> SavedTurn { SavedTurn(user: text, model: "reply", interrupted: false, time: 1) }

    @Test func aLoadedTranscriptCarriesTheChainOn() throws {
        let store = try store()
        let keys = try HistoryKeys(seeds: [key])
        let writer = try store.create(ConversationMeta(title: "t", model: "m", system: nil, created: 1, kind: "chat"))
        try writer.append(turn: turn("one"))
        let loaded = try store.load(writer.id, with: keys)
        try store.reopen(writer.id, after: loaded).append(turn: turn("two"))
        let again = try store.load(writer.id, with: keys)
        #expect(again.damage == nil && again.turns.map(\.user) == ["one", "two"])

        // Another writer appends after `again` was loaded: the stale transcript is not trusted.
        try store.reopen(writer.id).append(turn: turn("three"))
        try store.reopen(writer.id, after: again).append(turn: turn("four"))
        let last = try store.load(writer.id, with: keys)
        #expect(last.damage == nil && last.turns.map(\.user) == ["one", "two", "three", "four"])
    }

    @Test func aReopenRightAfterALoadDoesNotReadTheFileAgain() throws {
        let store = try store()
        let keys = try HistoryKeys(seeds: [key])
        let writer = try store.create(ConversationMeta(title: "t", model: "m", system: nil, created: 1, kind: "chat"))
        try writer.append(turn: turn("one"))
        let loaded = try store.load(writer.id, with: keys)
        // Overwritten in place, same size: only a reopen that reads the file sees it.
        let path = store.folder + "/" + writer.id + ".chat"
        let file = try #require(fopen(path, "r+"))
        fwrite([UInt8](repeating: 0xff, count: loaded.end!.length), 1, loaded.end!.length, file)
        fclose(file)
        #expect(throws: HistoryStore.Failure.self) { try store.reopen(writer.id) }
        _ = try store.reopen(writer.id, after: loaded)
    }
}

/// A turn's signed reply parts in the history record and back.
@Suite struct SavedTurnPartsTests {
    @Test func signedPartsSurviveTheRecordAndComeBackOnlyWhenTheySpellTheReply() throws {
        let parts = [ReplyPart(text: "a ", thoughtSignature: "c2ln+/8="), ReplyPart(text: "b"), ReplyPart(text: "", thoughtSignature: "ZW5k")]
        let saved = SavedTurn(user: "q", model: "a b", interrupted: false, time: 1, parts: parts)
        let decoded = try JSONDecoder().decode(SavedTurn.self, from: JSONEncoder().encode(saved))
        #expect(decoded.parts == parts)
        var conversation = Conversation(model: "m", systemPrompt: nil, generation: GenerationOptions())
        conversation.restore([decoded])
        #expect(conversation.turns.first?.replyParts == parts)
        // Parts that do not spell the reply (a damaged or edited record) are dropped: the text goes back.
        var other = decoded
        other.model = "something else"
        conversation.restore([other])
        #expect(conversation.turns.first?.replyParts == nil)
        #expect(conversation.request(for: "next").messages[1].parts == [.text("something else")])
        // A turn saved before the field reads as before.
        let old = try JSONDecoder().decode(SavedTurn.self, from: Data(#"{"user":"q","model":"m","interrupted":false,"time":1}"#.utf8))
        #expect(old.parts == nil)
    }
}
