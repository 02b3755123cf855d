import CommandLineKit

/// The command-line types the command files use (CommandLineKit's), a command getting an `Invocation`.
typealias CommandSpec = CommandLineKit.CommandSpec<Invocation>
typealias OptionSpec = CommandLineKit.OptionSpec
typealias ParsedOptions = CommandLineKit.ParsedOptions
typealias UsageError = CommandLineKit.UsageError

extension CommandLineKit.CommandSpec where Call == Invocation {
    /// Whether this option is in the command's row or a global one.
    func offers(_ option: OptionSpec) -> Bool { options.contains(option) || globalOptions.contains(option) }

    var usage: String { commandLine.usage(self) }
}

extension UsageError {
    /// `command`'s usage line is the hint, unless `fix` says what to do instead.
    init(_ message: String, command: CommandSpec? = nil, fix: String? = nil) {
        self.init(message, commandPath: command?.path, usage: command?.usage, fix: fix)
    }
}

/// The whole command surface, with the subcommands of one command together (all `key …`
/// where the first one is), in the order help, the reference and the manual show them.
let commandLine = CommandTable(
    program: "gemvault",
    commands: vaultCommands + rotationCommands + shareCommands + credentialCommands + sessionCommands + pinCommands + slotCommands + configCommands
        + spendCommands + priceCommands + chatCommands + historyCommands + execCommands + secretCommands + mcpCommands + completionCommands,
    globalOptions: globalOptions)

let commandTable = commandLine.commands

/// `--help`, `help COMMAND`, the reference in Docs/cli.md and the manual's commands.
let helpText = HelpText(
    table: commandLine, title: "gemvault \(gemvaultVersion): keeps Gemini API keys in an encrypted vault and chats with Gemini",
    introduction: "Plain 'gemvault', on a terminal, walks through the set-up when there is no vault (vault, recovery code, API key, a check, a session) and starts a chat when there is one.",
    closing: ["Exit codes: " + ExitCode.summaries, "Run 'gemvault help COMMAND' or 'gemvault COMMAND --help' for details."],
    examples: commandExamples, onTerminal: Guides.located)

/// The result of parsing argv against the table.
struct Invocation {
    let command: CommandSpec
    let positionals: [String]
    let options: ParsedOptions
    let context: Context

    func flag(_ option: OptionSpec) -> Bool { options.flag(accepted(option)) }
    /// The value of an option; for a repeatable one, the last.
    func value(_ option: OptionSpec) -> String? { options.value(accepted(option)) }
    /// Every value of a repeatable option, in the order given.
    func values(_ option: OptionSpec) -> [String] { options.values(accepted(option)) }

    /// An option outside the command's row could never be given: asking for it is a mistake
    /// that debug builds (and so the tests) stop at. Code shared by commands asks `command.offers` first.
    private func accepted(_ option: OptionSpec) -> OptionSpec {
        assert(command.offers(option), "'\(command.name)' has no option \(option.name) (\(option.help))")
        return option
    }
}
