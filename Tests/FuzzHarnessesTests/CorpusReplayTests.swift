import FuzzHarnesses
import Foundation
import Rendering
import Testing

/// Every committed input (the seed corpus, and every input a fuzzer ever found breaking
/// something, kept in Fuzz/Regressions) runs through its harness on every test run.
@Suite struct CorpusReplayTests {
    static let fuzzFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Fuzz")

    static func inputs(_ harness: String) throws -> [(name: String, bytes: [UInt8])] {
        var found: [(String, [UInt8])] = []
        for kind in ["Corpus", "Regressions"] {
            let folder = fuzzFolder.appendingPathComponent(kind).appendingPathComponent(harness)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { continue }
            for name in names.sorted() where !name.hasPrefix(".") {
                found.append(("\(kind)/\(harness)/\(name)", Array(try Data(contentsOf: folder.appendingPathComponent(name)))))
            }
        }
        return found
    }

    @Test(arguments: FuzzHarnesses.all.map(\.name))
    func everyCommittedInputKeepsTheHarnessProperties(_ harness: String) throws {
        let inputs = try Self.inputs(harness)
        #expect(inputs.count >= 3, "the seed corpus of \(harness) is missing")
        let check = try #require(FuzzHarnesses.named(harness))
        for input in inputs {
            #expect(check(input.bytes) == nil, "\(input.name)")
        }
    }

    /// The markdown harness's judge is not vacuous: it passes the renderer's colours only.
    @Test func theEscapeJudgeTellsColoursFromInjections() {
        #expect(MarkdownFuzzing.foreignEscape(in: "\u{1B}[1;4mtitle\u{1B}[0m\tcell\n") == nil)
        #expect(MarkdownFuzzing.foreignEscape(in: "\u{1B}]0;pwned\u{07}") != nil)
        #expect(MarkdownFuzzing.foreignEscape(in: "\u{1B}[2J") != nil)
        #expect(MarkdownFuzzing.foreignEscape(in: "\u{9B}2J") != nil)
        #expect(MarkdownFuzzing.foreignEscape(in: "abc\u{202E}def") != nil)
    }
}
