import CommandLineKit
import Glibc
import Testing
@testable import GemvaultCLI

/// The man page, completions and JSON schemas all come from the one command table.
@Suite struct FittingInTests {
    static let root: String = {
        var parts = #filePath.split(separator: "/", omittingEmptySubsequences: false)
        parts.removeLast(3)
        return parts.joined(separator: "/")
    }()

    static func read(_ relative: String) -> String? {
        guard let file = fopen(root + "/" + relative, "r") else { return nil }
        defer { fclose(file) }
        var text = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65536)
        while case let n = fread(&buffer, 1, buffer.count, file), n > 0 { text += buffer[..<n] }
        return String(decoding: text, as: UTF8.self)
    }

    @Test func theCommittedManPageIsTheOneTheTableGenerates() throws {
        let committed = try #require(Self.read("Docs/gemvault.1"), "Docs/gemvault.1 is missing")
        #expect(committed == ManualPage.render(), "Docs/gemvault.1 drifted: regenerate it with 'gemvault help --man > Docs/gemvault.1'")
        for spec in commandTable { #expect(committed.contains(".B " + Roff.escape("gemvault " + spec.name)), "\(spec.name)") }
        for option in globalOptions { #expect(committed.contains(Roff.escape(option.name))) }
    }

    @Test func everyCommandHasAnExample() {
        for spec in commandTable { #expect(!(commandExamples[spec.name] ?? []).isEmpty, "\(spec.name) has no example") }
        #expect(Set(commandExamples.keys).isSubset(of: Set(commandTable.map(\.name))), "an example names no command")
    }

    @Test func everySchemaIsCommittedWithItsVersion() throws {
        for schema in JSONSchema.allCases {
            let text = try #require(Self.read(schema.file), "\(schema.file) is missing")
            #expect(text.contains("\"version\": {\n      \"const\": \(schema.version)"), "\(schema.file)")
        }
    }

    let engine = CompletionEngine(context: Context(environment: ["HOME": "/nonexistent-home", "XDG_RUNTIME_DIR": "/nonexistent-run"], options: .none))

    @Test func commandsSubcommandsAndOptionsComplete() {
        #expect(engine.candidates(["ke"]) == ["key"])
        #expect(engine.candidates(["key", "r"]) == ["rm", "rotate", "rollback"])
        #expect(engine.candidates(["history", ""]) == ["list", "show", "search", "rm", "export"])
        #expect(engine.candidates(["key", "list", "--j"]) == ["--json"])
        #expect(engine.candidates(["--vault", "/x", "key", "l"]) == ["list"])
        #expect(engine.candidates(["--col"]) == ["--color"])
    }

    @Test func optionValuesAndArgumentsComplete() {
        #expect(engine.candidates(["init", "--kdf", "m"]) == ["moderate"])
        #expect(engine.candidates(["chat", "--color", ""]) == ["auto", "always", "never"])
        #expect(engine.candidates(["completion", ""]) == ["bash", "zsh", "fish"])
        #expect(engine.candidates(["config", "get", "sess"]) == ["session_idle", "session_max"])
        #expect(engine.candidates(["--vault", ""]) == ["@files"])
        #expect(engine.candidates(["exec", "--", ""]) == ["@commands"])
        #expect(engine.candidates(["exec", "--", "python3", ""]) == ["@files"])
        #expect(engine.candidates(["key", "rm", "x", ""]) == [])
        #expect(engine.candidates(["chat", "--color", "=", "al"]) == ["always"], "bash splits --color=al at the =")
    }

    @Test func onlyPlainWordsReachTheShell() {
        #expect(CompletionEngine.isPlain("gemini-3.6-flash") && CompletionEngine.isPlain("a1b2c3d4e5f60718"))
        for hostile in ["gemini-x;touch${IFS}/tmp/p", "a$(id)", "x`id`", "a b", "esc\u{1B}]0;t\u{07}", "q'\"", "line\nbreak", ""] {
            #expect(!CompletionEngine.isPlain(hostile), "\(hostile)")
        }
    }

    @Test func keyNamesNeedASessionAndNeverAPrompt() {
        // No agent runs for this made-up vault: no names, and no passphrase asked.
        #expect(engine.candidates(["key", "get", ""]) == [])
        #expect(engine.candidates(["chat", "--key", ""]) == [])
    }
}
