import CommandLineKit
import Testing

/// A small table of its own: the machinery knows no program's commands.
private let verbose = OptionSpec(name: "--verbose", value: nil, help: "say more", shortName: "-V")
private let name = OptionSpec(name: "--name", value: "NAME", help: "the name", repeatable: true)
private let secret = OptionSpec(name: "--secret", value: "TEXT", help: "private text", privateValue: true)
private let tool = CommandTable<[String]>(
    program: "tool",
    commands: [
        CommandSpec(path: ["list"], arguments: "", argumentRange: 0...0, summary: "list them", options: [], details: "", isGroupDefault: true, run: { _ in }),
        CommandSpec(path: ["key", "get"], arguments: "NAME", argumentRange: 1...1, summary: "print a key", options: [name], details: "", run: { _ in }),
        CommandSpec(path: ["say"], arguments: "TEXT...", argumentRange: 1...Int.max, summary: "say it", options: [secret], details: "Says it.",
                    privateArguments: true, run: { _ in }),
        CommandSpec(path: ["key", "rm"], arguments: "NAME", argumentRange: 1...1, summary: "remove a key", options: [], details: "", run: { _ in }),
    ],
    globalOptions: [verbose, .help])

@Suite struct CommandTableTests {
    @Test func aCommandsSubcommandsStayTogetherInTheirOrder() {
        #expect(tool.commands.map(\.name) == ["list", "key get", "key rm", "say"])
    }

    @Test func optionsAndArgumentsAreReadInAnyOrder() throws {
        guard case .run(let spec, let positionals, let options) = try tool.parse(["--verbose", "key", "get", "--name", "a", "work", "--name=b"]) else {
            Issue.record("not a run")
            return
        }
        #expect(spec.name == "key get" && positionals == ["work"])
        #expect(options.flag(verbose) && options.values(name) == ["a", "b"] && options.value(name) == "b")
        guard case .run(_, let afterDashes, _) = try tool.parse(["say", "--", "--verbose"]) else { return }
        #expect(afterDashes == ["--verbose"])
    }

    @Test func mistakesAreUsageErrorsWithTheCommandsUsageLine() {
        #expect { try tool.parse(["key", "get", "--nme", "a", "x"]) } throws: { error in
            guard let usage = error as? UsageError else { return false }
            return usage.message == "unknown option '--nme' for 'tool key get': did you mean '--name'?"
                && usage.usage == "tool key get [--name NAME] NAME" && usage.commandPath == ["key", "get"]
        }
        #expect { try tool.parse(["key", "gte"]) } throws: { ($0 as? UsageError)?.message == "unknown command 'key gte': did you mean 'key get'?" }
        #expect { try tool.parse(["list", "extra"]) } throws: { ($0 as? UsageError)?.message == "'tool list' takes 0 arguments, got 1" }
    }

    @Test func helpGroupsAndDefaultsAreAnsweredByTheParser() throws {
        guard case .groupHelp(let group) = try tool.parse(["key", "--help"]), case .help(let spec?) = try tool.parse(["help", "say"]),
              case .run(let fallback, _, _) = try tool.parse(["list"]) else {
            Issue.record("not help")
            return
        }
        #expect(group == ["key"] && spec.name == "say" && fallback.name == "list")
    }

    @Test func privateTextIsFoundInArgv() throws {
        var found: [PrivateArgument] = []
        _ = try tool.parse(["say", "--secret=abc", "hello"], privateArguments: &found)
        #expect(found == [PrivateArgument(index: 1, offset: "--secret".utf8.count + 1), PrivateArgument(index: 2, offset: 0)])
    }

    @Test func typosFindTheNearestWordAndSynonymsTheirMeaning() {
        #expect(Suggestion.nearest("lsit", among: ["list", "rm"]) == "list")
        #expect(Suggestion.nearest("delete", among: ["list", "rm"]) == "rm")
        #expect(Suggestion.nearest("zzzzzz", among: ["list", "rm"]) == nil)
    }

    @Test func helpIsWrappedOnlyWhenAWidthIsGiven() {
        #expect(TextLayout.wrapped("aaa bbb ccc ddd", width: 24, indent: 2) == "aaa bbb ccc ddd")
        #expect(TextLayout.wrapped(words: ["[--model M]", "[--system TEXT]", "[--raw]"], width: 20, indent: 2) == "[--model M]\n  [--system TEXT]\n  [--raw]")
        let help = HelpText(table: tool, title: "tool 1", introduction: "Tools.", closing: ["Bye."], examples: ["say": ["tool say hi"]], onTerminal: { $0 })
        #expect(help.command(tool.commands[3]).hasPrefix("Usage: tool say [--secret TEXT] TEXT...\n\nsay it\n\nSays it.\n"))
        #expect(help.overview().hasSuffix("  -V, --verbose               say more\n  --help                      show help for the command\n\nBye.\n"))
        #expect(help.reference().contains("### `tool say TEXT...`\n\nsay it.\n\nSays it.\n\n| Option | Meaning |"))
    }

    @Test func roffControlCharactersAreEscaped() {
        #expect(Roff.escape(".hidden") == "\\&.hidden")
        #expect(Roff.escape("a\\b --x") == "a\\eb \\-\\-x")
        #expect(Roff.escape("wait…") == "wait\\[u2026]")
    }

    @Test func completionAsksTheTableAndItsCallerForValues() {
        #expect(tool.completions(["k"]) { _, _ in [] } == ["key"])
        #expect(tool.completions(["key", "get", "--n"]) { _, _ in [] } == ["--name"])
        #expect(tool.completions(["key", "get", "--name", "w"]) { placeholder, prefix in ["\(placeholder):\(prefix)"] } == ["NAME:w"])
        #expect(tool.completions(["say", "a", ""]) { placeholder, _ in [placeholder] } == ["TEXT..."])
    }

    @Test func theShellScriptsAskTheProgramByItsName() {
        for shell in ["bash", "zsh", "fish"] {
            #expect(ShellCompletion.script(shell, program: "tool")?.contains("command tool __complete") == true, "\(shell)")
        }
        #expect(ShellCompletion.script("tcsh", program: "tool") == nil)
    }
}
