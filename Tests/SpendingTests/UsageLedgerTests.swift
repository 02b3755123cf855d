import Conversations
import GemvaultTesting
import Glibc
import SystemIO
import Testing
import VaultCore
@testable import Spending

/// The ledger: records sealed without the vault, merged with it, never counted twice, and
/// what is damaged or another vault's set aside.
@Suite struct UsageLedgerTests {
    let folder = TemporaryFolder()

    private func ledger() throws -> (UsageLedger, HistoryKeys) { try folder.ledger() }

    private func entry(_ key: String = "work", model: String = "gemini-2.5-flash", day: Int = 20_000, prompt: Int = 10) -> UsageLedger.Entry {
        UsageLedger.Entry(key: key, model: model, day: UsageDay(number: day), counts: UsageCounts(requests: 1, prompt: prompt, output: 5, thoughts: 2))
    }

    @Test func recordsAreMergedOnceAndTheSummaryGoesOnFromWhereItStopped() throws {
        let (ledger, keys) = try ledger()
        try ledger.append(entry(), recipient: keys.current.publicKey)
        try ledger.append(entry(prompt: 20), recipient: keys.current.publicKey)
        let first = try ledger.read(with: keys, now: 1)
        #expect(first.notes.isEmpty)
        #expect(first.summary.rows(from: UsageDay(number: 0)).map(\.counts) == [UsageCounts(requests: 2, prompt: 30, output: 10, thoughts: 4)])
        // Read again: nothing counted twice; a new record is added to what was merged.
        #expect(try ledger.read(with: keys, now: 2).summary == first.summary)
        try ledger.append(entry("home", day: 20_001), recipient: keys.current.publicKey)
        let rows = try ledger.read(with: keys, now: 3).summary.rows(from: UsageDay(number: 0))
        #expect(rows.map(\.key) == ["work", "home"] && rows.map(\.day.number) == [20_000, 20_001])
    }

    @Test func aReadThatDoesNotSaveLeavesTheRecordsForTheNextAndCountsThemOnce() throws {
        let (ledger, keys) = try ledger()
        for _ in 0..<3 { try ledger.append(entry(), recipient: keys.current.publicKey) }
        #expect(try ledger.read(with: keys, now: 1, saveFrom: 64).summary.rows(from: UsageDay(number: 0)).first?.counts.requests == 3)
        #expect(FileStatus.of(link: ledger.folder + "/usage-summary") == nil)
        #expect(try ledger.read(with: keys, now: 2).summary.rows(from: UsageDay(number: 0)).first?.counts.requests == 3)
        try ledger.append(entry(), recipient: keys.current.publicKey)
        #expect(try ledger.read(with: keys, now: 3, saveFrom: 64).summary.rows(from: UsageDay(number: 0)).first?.counts.requests == 4)
    }

    @Test func nothingOfARecordIsInTheClearAndEveryRecordHasOneSize() throws {
        let (ledger, keys) = try ledger()
        try ledger.append(entry("a-very-recognisable-key-name"), recipient: keys.current.publicKey)
        try ledger.append(entry("k", model: "m"), recipient: keys.current.publicKey)
        let bytes = try #require(try FileDescriptor.openIfPresent(ledger.folder + "/usage", flags: O_RDONLY)?.readAll(limit: 1 << 20))
        #expect(bytes.count == 2 * UsageLedger.recordLength)
        #expect(!String(decoding: bytes, as: UTF8.self).contains("recognisable") && !String(decoding: bytes, as: UTF8.self).contains("gemini"))
    }

    @Test func anotherVaultsRecordsAndADamagedSummaryAreSetAsideNeverMerged() throws {
        let (ledger, keys) = try ledger()
        let other = try HistoryKeys(seeds: [SecretBytes.random(count: 32)])
        try ledger.append(entry(), recipient: keys.current.publicKey)
        try ledger.append(entry("stranger"), recipient: other.current.publicKey)
        let read = try ledger.read(with: keys, now: 5)
        #expect(read.summary.rows(from: UsageDay(number: 0)).map(\.key) == ["work"] && read.summary.setAside == 1)
        #expect(read.notes.count == 1 && read.notes[0].contains("did not open with this vault's keys"))
        // A damaged summary is renamed aside and rebuilt from the records.
        let path = ledger.folder + "/usage-summary"
        var bytes = try #require(try FileDescriptor.openIfPresent(path, flags: O_RDONLY)?.readAll(limit: 1 << 20))
        bytes[bytes.count - 3] ^= 1
        try TrustedFile.savePrivate(path, bytes)
        let rebuilt = try ledger.read(with: keys, now: 6)
        #expect(rebuilt.summary.rows(from: UsageDay(number: 0)).map(\.key) == ["work"])
        #expect(rebuilt.notes.contains { $0.contains("set aside as usage-summary.set-aside-6") })
        #expect(FileStatus.of(link: path + ".set-aside-6") != nil)
        // The other vault's keys read none of this vault's spending.
        #expect(try ledger.read(with: other, now: 7).summary.rows(from: UsageDay(number: 0)).map(\.key) == ["stranger"])
    }

    @Test func aRecordCutShortByACrashIsDroppedBeforeTheNextOne() throws {
        let (ledger, keys) = try ledger()
        try ledger.append(entry(), recipient: keys.current.publicKey)
        let file = try #require(try FileDescriptor.openIfPresent(ledger.folder + "/usage", flags: O_WRONLY | O_APPEND))
        try file.writeAll([UInt8](repeating: 7, count: 100))
        #expect(try ledger.read(with: keys, now: 1).summary.rows(from: UsageDay(number: 0)).first?.counts.requests == 1)
        try ledger.append(entry(), recipient: keys.current.publicKey)
        let read = try ledger.read(with: keys, now: 2)
        #expect(read.summary.rows(from: UsageDay(number: 0)).first?.counts.requests == 2 && read.notes.isEmpty)
    }

    @Test func aPassphraseChangeKeepsTheLedgerReadable() throws {
        let (ledger, keys) = try ledger()
        try ledger.append(entry(), recipient: keys.current.publicKey)
        _ = try ledger.read(with: keys, now: 1)
        let changed = HistoryKeys([try SealedBox.keyPair(seed: .random(count: 32)), keys.current])
        try ledger.append(entry(), recipient: changed.current.publicKey)
        let read = try ledger.read(with: changed, now: 2)
        #expect(read.notes.isEmpty && read.summary.rows(from: UsageDay(number: 0)).first?.counts.requests == 2)
    }
}

/// What a hostile server or a forged file can put in a count or a name.
@Suite struct UsageLimitsTests {
    @Test func hugeCountsAreCappedAndSumsNeverOverflow() {
        let huge = UsageCounts(TokenUsage(inputTokens: Int.max, outputTokens: Int.max, thinkingTokens: -5,
                                          toolInputTokens: Int.max, cachedInputTokens: Int.max))
        #expect(huge.prompt == 1 << 40 && huge.thoughts == 0)
        var sum = huge
        for _ in 0..<20_000 { sum = sum + huge }
        #expect(sum.prompt == UsageCounts.limit && sum.total > 0)
        #expect((PriceTable.builtIn.cost(sum, model: "gemini-2.5-flash") ?? -1) > 0)
        var summary = UsageSummary()
        summary.add(UsageLedger.Entry(key: "k", model: "m", day: UsageDay(number: 1), counts: sum))
        #expect(summary.encoded().withUnsafeBytes { UsageSummary.decode($0) } == summary)
    }

    @Test func longOrOddNamesAreFiledUnderAFingerprintAndEveryRecordFits() {
        let long = String(repeating: "é", count: 300)
        #expect(UsageLedger.storedName(long).hasPrefix("#") && UsageLedger.storedName(long) == UsageLedger.storedName(long))
        #expect(UsageLedger.storedName("file:/a\"b") != "file:/a\"b" && UsageLedger.storedName("work") == "work")
        let entry = UsageLedger.Entry(key: long, model: String(repeating: "\u{1}", count: 200), day: UsageDay(number: 1),
                                      counts: UsageCounts(requests: UsageCounts.limit, prompt: UsageCounts.limit, cached: UsageCounts.limit, toolUse: UsageCounts.limit,
                                                          output: UsageCounts.limit, thoughts: UsageCounts.limit, searchQueries: UsageCounts.limit))
        #expect(UsageLedger.plaintext(entry)?.count == UsageLedger.recordPlainLength)
    }

    /// Records and summaries written before search queries were counted (version 1) still read.
    @Test func versionOneRecordsAndSummariesStillRead() throws {
        func entry(_ json: String) -> UsageLedger.Entry? { Array(json.utf8).withUnsafeBytes { UsageLedger.entry($0) } }
        let old = try #require(entry(#"{"v":1,"key":"k","model":"m","day":5,"counts":[1,2,3,4,5,6]}   "#))
        #expect(old.counts == UsageCounts(requests: 1, prompt: 2, cached: 3, toolUse: 4, output: 5, thoughts: 6))
        #expect(entry(#"{"v":1,"key":"k","model":"m","day":5,"counts":[1,2,3,4,5,6,7]}"#) == nil)
        #expect(entry(#"{"v":2,"key":"k","model":"m","day":5,"counts":[1,2,3,4,5,6]}"#) == nil)
        #expect(entry(#"{"v":2,"key":"k","model":"m","day":5,"counts":[1,2,3,4,5,6,7]}"#)?.counts.searchQueries == 7)
        let written = try #require(UsageLedger.plaintext(old))
        #expect(written.withUnsafeBytes { UsageLedger.entry($0) } == old)
        // A version 1 summary: one row of six counts.
        var bytes: [UInt8] = [1] + [UInt8](repeating: 0, count: 24)
        for name in ["k", "m"] { bytes += [1, 0, 0, 0, 1, 0] + Array(name.utf8) }
        bytes += [1, 0, 0, 0] + [5, 0, 0, 0] + [0, 0, 0, 0] + [0, 0, 0, 0]
        for count in 1...6 { bytes += [UInt8(count)] + [UInt8](repeating: 0, count: 7) }
        let summary = try #require(bytes.withUnsafeBytes { UsageSummary.decode($0) })
        #expect(summary.rows(from: UsageDay(number: 0)).map(\.counts) == [old.counts])
    }

    @Test func aSummaryClaimingMoreRowsThanItHoldsIsRefused() {
        var bytes: [UInt8] = [1] + [UInt8](repeating: 0, count: 24) + [0, 0, 0, 0] + [0, 0, 0, 0] + [0xFF, 0xFF, 0xFF, 0xFF]
        #expect(bytes.withUnsafeBytes { UsageSummary.decode($0) } == nil)
        bytes.replaceSubrange((bytes.count - 4)..., with: [UInt8](repeating: 0, count: 4))
        #expect(bytes.withUnsafeBytes { UsageSummary.decode($0) } == UsageSummary())
    }
}
