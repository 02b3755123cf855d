import Conversations
import GemvaultTesting
import Glibc
import SystemIO
import Testing
import VaultCore
@testable import Spending

/// Compaction: the records folded into the summary, the totals exact, nothing counted twice
/// when a compaction stops half-way, and a records file cut short reported, never rebuilt smaller.
@Suite struct LedgerCompactionTests {
    let folder = TemporaryFolder()

    private func ledger() throws -> (UsageLedger, HistoryKeys) { try folder.ledger() }

    private func entry(_ index: Int) -> UsageLedger.Entry {
        UsageLedger.Entry(key: "key-\(index % 3)", model: "model-\(index % 2)", day: UsageDay(number: 20_000 + index / 300),
                          counts: UsageCounts(requests: 1, prompt: index % 1000, output: 7, thoughts: index % 5))
    }

    private func size(_ path: String) -> Int { FileStatus.of(link: path).map { Int($0.size) } ?? -1 }

    private func total(_ summary: UsageSummary) -> UsageCounts { summary.rows(from: UsageDay(number: 0)).map(\.counts).reduce(UsageCounts(), +) }

    @Test func totalsStayExactAcross100000RecordsAndTheFileStaysSmall() throws {
        let (ledger, keys) = try ledger()
        var expected = UsageCounts()
        var largest = 0
        for index in 0..<100_000 {
            try ledger.append(entry(index), recipient: keys.current.publicKey)
            expected = expected + entry(index).counts
            if index % 5_000 == 4_999 {
                largest = max(largest, size(ledger.folder + "/usage"))
                let read = try ledger.read(with: keys, now: Int64(index))
                #expect(read.notes.isEmpty && total(read.summary) == expected)
            }
        }
        let summary = try ledger.read(with: keys, now: 1).summary
        #expect(total(summary) == expected && expected.requests == 100_000)
        #expect(summary.rows(from: UsageDay(number: 0)).count == 334 * 6)
        // Folded each time past 2,048 records: the file never held more than a batch beyond that.
        #expect(largest <= (UsageLedger.compactFrom + 5_000 + 1) * UsageLedger.recordLength && summary.generation > 10)
        #expect(size(ledger.folder + "/usage") < UsageLedger.compactFrom * UsageLedger.recordLength)
    }

    @Test func aCompactionStoppedBeforeTheNewFileWasInPlaceCountsNothingTwice() throws {
        let (ledger, keys) = try ledger()
        for index in 0..<30 { try ledger.append(entry(index), recipient: keys.current.publicKey) }
        // The old records file, as a crash before the rename would leave it.
        let old = try #require(try FileDescriptor.openIfPresent(ledger.folder + "/usage", flags: O_RDONLY)?.readAll(limit: 1 << 20))
        let folded = try ledger.read(with: keys, now: 1, compactFrom: 20).summary
        #expect(folded.generation == 1 && folded.foldedRecords == 30 && size(ledger.folder + "/usage") == UsageLedger.recordLength)
        try TrustedFile.savePrivate(ledger.folder + "/usage", old)
        try ledger.append(entry(30), recipient: keys.current.publicKey)
        let read = try ledger.read(with: keys, now: 2, compactFrom: 20)
        #expect(read.notes.isEmpty && total(read.summary).requests == 31)
        #expect(try total(ledger.read(with: keys, now: 3).summary).requests == 31)
    }

    @Test func aRecordsFileCutShortIsReportedAndTheSummaryKeepsWhatItCounted() throws {
        let (ledger, keys) = try ledger()
        for index in 0..<10 { try ledger.append(entry(index), recipient: keys.current.publicKey) }
        _ = try ledger.read(with: keys, now: 1)
        let file = try #require(try FileDescriptor.openIfPresent(ledger.folder + "/usage", flags: O_RDWR))
        try file.truncate(to: 4 * UsageLedger.recordLength)
        let cut = try ledger.read(with: keys, now: 2)
        #expect(cut.notes.count == 1 && cut.notes[0].contains("was cut short: it held 10 records and holds 4") && cut.notes[0].contains("10 requests"))
        #expect(total(cut.summary).requests == 10)
        // Said once; what is appended after is counted.
        try ledger.append(entry(0), recipient: keys.current.publicKey)
        let next = try ledger.read(with: keys, now: 3)
        #expect(next.notes.isEmpty && total(next.summary).requests == 11)
    }

    @Test func aDamagedSummaryAfterACompactionIsReportedOnEveryRead() throws {
        let (ledger, keys) = try ledger()
        for index in 0..<5 { try ledger.append(entry(index), recipient: keys.current.publicKey) }
        _ = try ledger.read(with: keys, now: 1, compactFrom: 5)
        try TrustedFile.savePrivate(ledger.folder + "/usage-summary", Array("GVUS damaged".utf8))
        try ledger.append(entry(0), recipient: keys.current.publicKey)
        for now in Int64(86_400 * 20_400)..<Int64(86_400 * 20_400 + 2) {
            let read = try ledger.read(with: keys, now: now)
            #expect(read.notes.contains { $0.contains("damaged and set aside on 2025-11-08: the spend folded into it before then is not counted") })
            #expect(total(read.summary).requests == 1)
        }
    }
}

/// The key's meter: sealed with a key derived from the API key, named by a fingerprint of it,
/// this month and last only, and damage read as damage.
@Suite struct KeyMeterTests {
    let folder = TemporaryFolder()

    @Test func theSameKeyMeetsOneMeterThatOnlyItOpens() throws {
        let key = SecretBytes(utf8: "AQ.Ab8RD3mo0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp")
        let meter = try KeyMeter(stateDirectory: folder.path, key: key)
        let again = try KeyMeter(stateDirectory: folder.path, key: SecretBytes(utf8: "AQ.Ab8RD3mo0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"))
        let other = try KeyMeter(stateDirectory: folder.path, key: SecretBytes(utf8: "AQ.Zz8RD3mo0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"))
        #expect(meter.id == again.id && meter.id != other.id && meter.id.count == 32)
        let today = UsageDay(number: 20_500)
        try meter.add(model: "m", day: UsageDay(number: today.monthStart.number - 40), counts: UsageCounts(requests: 1, prompt: 1_000_000))
        try meter.add(model: "m", day: UsageDay(number: today.number - 1), counts: UsageCounts(requests: 1, prompt: 1_000_000))
        try meter.add(model: "m", day: today, counts: UsageCounts(requests: 1, output: 1_000_000))
        let prices = PriceTable(currency: "USD", origin: "test", models: ["m": ModelPrice(input: 1, output: 10)])
        let spent = KeyMeter.spent(try again.read(), on: today, prices: prices)
        #expect(spent.today == 10 && spent.month == (today.number - 1 >= today.monthStart.number ? 11 : 10))
        // Days before last month are dropped; the file says nothing of the key or the model.
        #expect(try meter.read().rows(from: UsageDay(number: 0)).allSatisfy { $0.day >= KeyMeter.horizon(today) })
        let bytes = try #require(try FileDescriptor.openIfPresent(meter.path, flags: O_RDONLY)?.readAll(limit: 1 << 20))
        let otherSummary = try other.read()
        #expect(!String(decoding: bytes, as: UTF8.self).contains("AQ.") && otherSummary == UsageSummary())
        var damaged = bytes
        damaged[damaged.count - 1] ^= 1
        try TrustedFile.savePrivate(meter.path, damaged)
        #expect(throws: UsageLedger.Failure.self) { try meter.read() }
        #expect(throws: UsageLedger.Failure.self) { try meter.add(model: "m", day: today, counts: UsageCounts(requests: 1)) }
    }

    @Test func theReplyAllowanceNamesWhereItComesFrom() {
        var options = GenerationOptions(maxOutputTokens: 100)
        #expect(ReplyAllowance(options: options, outputLimit: 50, estimate: 8192) == ReplyAllowance.make(100, "max_output_tokens 100"))
        options.maxOutputTokens = nil
        #expect(ReplyAllowance(options: options, outputLimit: 1000, estimate: 8192) == ReplyAllowance.make(1000, "the model's output limit, 1000"))
        #expect(ReplyAllowance(options: options, outputLimit: 65536, estimate: 8192) == ReplyAllowance.make(8192, "budget_reply_estimate 8192"))
        options.thinking = .budget(2048)
        #expect(ReplyAllowance(options: options, outputLimit: nil, estimate: 500)
            == ReplyAllowance.make(2548, "budget_reply_estimate 500 (the model's output limit unknown) + thinking budget 2048"))
    }
}

extension ReplyAllowance {
    static func make(_ tokens: Int, _ origin: String) -> ReplyAllowance {
        var allowance = ReplyAllowance(options: GenerationOptions(maxOutputTokens: tokens), outputLimit: nil, estimate: 1)
        allowance.origin = origin
        return allowance
    }
}
