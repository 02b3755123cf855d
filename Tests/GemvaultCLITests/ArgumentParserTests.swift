import CommandLineKit
import Foundation
import KeyResolution
import Settings
import Testing
@testable import GemvaultCLI

@Suite struct ArgumentParserTests {
    @Test func globalOptionsMayComeFirstOrLast() throws {
        guard case .run(let spec, let positionals, let options) = try commandLine.parse(["--vault", "/v", "key", "get", "work", "--passphrase-fd=3"]) else {
            Issue.record("not a run")
            return
        }
        #expect(spec.name == "key get" && positionals == ["work"])
        #expect(options == ParsedOptions(byName: ["--vault": "/v", "--passphrase-fd": "3"]))
        #expect(options.value(.vault) == "/v" && options.value(.passphraseFd) == "3" && !options.flag(.passphraseFile))
    }

    @Test func aRepeatableOptionKeepsEveryValueAndItsShortSpellingCounts() throws {
        guard case .run(let spec, let positionals, let options) = try commandLine.parse(["ask", "-a", "one.png", "hi", "--attach=two.txt", "-a", "three"]) else {
            Issue.record("not a run")
            return
        }
        let call = Invocation(command: spec, positionals: positionals, options: options, context: Context(environment: [:], options: options))
        #expect(call.values(.attach) == ["one.png", "two.txt", "three"] && call.value(.attach) == "three" && positionals == ["hi"])
        #expect(call.values(.model).isEmpty)
        // Not repeatable: the last value wins, as before.
        guard case .run(_, _, let single) = try commandLine.parse(["ask", "--model", "a", "--model", "b", "hi"]) else { return }
        #expect(single.value(.model) == "b")
    }

    @Test func helpIsWrappedOnlyWhenAWidthIsGiven() {
        let wrapped = helpText.overview(width: 50)
        #expect(wrapped.split(separator: "\n").allSatisfy { $0.count <= 50 })
        #expect(helpText.overview().split(separator: "\n").contains { $0.count > 50 })
    }

    @Test func subcommandsOfOneCommandAreTogether() {
        var seen: [String] = []
        for spec in commandTable where seen.last != spec.path[0] {
            #expect(!seen.contains(spec.path[0]), "\(spec.path[0]) appears in two places")
            seen.append(spec.path[0])
        }
    }

    @Test func thePagerComesFromPagerWithoutAShell() {
        #expect(Pager.command([:]) == ["less", "-FRX"])
        #expect(Pager.command(["PAGER": "most -s"]) == ["most", "-s"])
        #expect(Pager.command(["PAGER": "cat"]) == nil && Pager.command(["PAGER": " "]) == nil)
        #expect(Pager.rowsNeeded("\u{1B}[1mabc\u{1B}[0m\n" + String(repeating: "x", count: 25) + "\n\n", columns: 10) == 1 + 3 + 1)
        #expect(Pager.rowsNeeded("你好你好你好\n", columns: 10) == 2)
    }

    @Test func doubleDashEndsOptions() throws {
        guard case .run(_, let positionals, _) = try commandLine.parse(["ask", "--", "--not-an-option", "x"]) else { return }
        #expect(positionals == ["--not-an-option", "x"])
    }

    @Test func privateTextIsFoundWhereverArgvHasIt() throws {
        var found: [PrivateArgument] = []
        // The leading global option is moved after the command words while parsing; the indices are argv's.
        _ = try commandLine.parse(["--vault", "/v", "ask", "--system=be terse", "hello", "--model", "m", "--", "--world"],
                                     privateArguments: &found)
        #expect(found == [PrivateArgument(index: 3, offset: 9), PrivateArgument(index: 4, offset: 0), PrivateArgument(index: 8, offset: 0)])
        found = []
        _ = try commandLine.parse(["chat", "--system", "be terse", "--model", "m"], privateArguments: &found)
        #expect(found == [PrivateArgument(index: 2, offset: 0)])
        found = []
        _ = try commandLine.parse(["key", "get", "work", "--vault", "/v"], privateArguments: &found)
        #expect(found.isEmpty)
    }

    @Test func helpAndVersionForms() throws {
        guard case .help(let spec) = try commandLine.parse(["help", "key", "set"]) else { Issue.record("help"); return }
        #expect(spec?.name == "key set")
        guard case .help(let other) = try commandLine.parse(["config", "explain", "--help"]) else { Issue.record("help"); return }
        #expect(other?.name == "config explain")
        guard case .groupHelp(let group) = try commandLine.parse(["help", "key"]) else { Issue.record("group"); return }
        #expect(group == ["key"])
        guard case .version = try commandLine.parse(["--version"]) else { Issue.record("version"); return }
    }

    @Test(arguments: [["nope"], ["key"], ["key", "rm"], ["init", "--kdf"], ["key", "list", "--json=yes"], ["ask", "--bogus"]])
    func usageErrors(_ argv: [String]) {
        #expect(throws: UsageError.self) { try commandLine.parse(argv) }
    }

    @Test func theTableIsConsistent() {
        let names = commandTable.map(\.name)
        #expect(Set(names).count == names.count)
        let overview = helpText.overview()
        for spec in commandTable {
            #expect(overview.contains(spec.name))
            #expect(helpText.command(spec).hasPrefix("Usage: gemvault \(spec.name)"))
            let optionNames = spec.options.map(\.name)
            #expect(Set(optionNames).count == optionNames.count, "\(spec.name) repeats an option")
        }
    }

    @Test func optionsSpelledAlikeAreToldApartByTheirRow() throws {
        let show = try #require(commandTable.first { $0.name == "history show" })
        let ask = try #require(commandTable.first { $0.name == "ask" })
        #expect(show.offers(.rawHistory) && !show.offers(.rawReply))
        #expect(ask.offers(.rawReply) && !ask.offers(.rawHistory))
        #expect(ask.offers(.vault) && show.offers(.vault) && !show.offers(.model))
        guard case .run(let spec, _, let options) = try commandLine.parse(["history", "show", "x", "--raw"]) else { Issue.record("not a run"); return }
        #expect(spec.name == "history show" && options.flag(.rawHistory))
    }

    /// `--model`, `--system`, `--temperature`, `--timeout`, `--key` and the endpoints override their setting
    /// in every command that has them (the flags layer), whatever their help says there;
    /// `slot add`'s `--key` names an ssh key, no vault key.
    @Test func everySpellingOfASettingFlagOverridesItsSetting() {
        let expected = ["--model": "model", "--system": "system_prompt", "--temperature": "temperature", "--timeout": "timeout", "--key": "key", "--think": "thinking",
                        "--max-output-tokens": "max_output_tokens",
                        "--secretmanager-endpoint": "secretmanager_endpoint", "--apikeys-endpoint": "apikeys_endpoint", "--auth": "auth", "--age-identity": "age_identity"]
        for spec in commandTable {
            for option in spec.options where option != .sshKey {
                #expect(option.setting?.name == expected[option.name], "\(spec.name) \(option.name)")
            }
        }
    }

    /// Every option constant the commands look up is in some command's row; within one
    /// command, a lookup outside its row stops a debug build (`Invocation.accepted`), so the
    /// end-to-end tests catch that.
    @Test func everyOptionLookedUpIsInTheTable() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../Sources/GemvaultCLI").standardized
        func read(_ file: String) throws -> String { try String(contentsOf: sources.appendingPathComponent(file), encoding: .utf8) }
        // The constants, by their Swift name: `static let rawReply = OptionSpec(name: "--raw", …`.
        var spelling: [String: String] = [:]
        for match in try read("Options.swift").matches(of: #/static let ([a-zA-Z]+) = OptionSpec\(name: "(--[a-z-]+)"/#) {
            spelling[String(match.output.1)] = String(match.output.2)
        }
        let offered = Set((commandTable.flatMap(\.options) + globalOptions).map(\.name))
        var lookups = 0
        for file in try FileManager.default.contentsOfDirectory(atPath: sources.path) where file.hasSuffix(".swift") {
            for match in try read(file).matches(of: #/\.(?:flag|value|values|offers)\(\.([a-zA-Z]+)\)/#) {
                let constant = String(match.output.1)
                let name = try #require(spelling[constant], "\(file): .\(constant) is not an option constant")
                #expect(offered.contains(name), "\(file): .\(constant) (\(name)) is in no command's row")
                lookups += 1
            }
        }
        #expect(lookups > 50)
    }

    @Test func errorsMapToDocumentedExitCodes() {
        #expect(ErrorReport.describe(UsageError("x")).0 == .usage)
        #expect(ErrorReport.describe(VaultCoreError.wrong).0 == .wrongSecret)
        #expect(ErrorReport.describe(VaultCoreError.damaged).0 == .damaged)
        #expect(ErrorReport.describe(KeySourceErrorCase.noKey).0 == .noKey)
        // Google's API Keys service and token endpoints: refused 6, no answer 7, no credential 1.
        #expect(ErrorReport.describe(GoogleError(.refused, "r")).0 == .apiRefused)
        #expect(ErrorReport.describe(GoogleError(.network, "n")).0 == .network)
        #expect(ErrorReport.describe(GoogleError(.credentials, "c")).0 == .failure)
        // A rotation's own refusals: usage 64 with key rotate's usage line, stopped 1, unreachable 7.
        let usage = ErrorReport.describe(RotationError.usage("u"))
        #expect(usage.0 == .usage && usage.1 == "u" && usage.2 == "usage: \(rotationCommands[0].usage)")
        #expect(ErrorReport.describe(RotationError.usage("u", fix: "f")).2 == "f")
        #expect(ErrorReport.describe(RotationError.failed("s", hint: "h")) == (.failure, "s", "h"))
        #expect(ErrorReport.describe(RotationError.unreachable("n")).0 == .network)
    }
}

import GoogleAuth
import Rotation
import VaultCore

private enum VaultCoreError {
    static let wrong = VaultError.wrongPassphrase
    static let damaged = VaultError.damaged(path: "p", detail: "d")
}

private enum KeySourceErrorCase {
    static let noKey = KeySourceError.noKey(reasons: [])
}
