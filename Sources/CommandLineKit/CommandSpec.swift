/// One row of a command table. The parser, `--help`, `help COMMAND`, the reference and the
/// manual are all generated from these rows. `Call` is what the program hands a command.
public struct CommandSpec<Call>: Sendable {
    public let path: [String]
    public let arguments: String
    public let argumentRange: ClosedRange<Int>
    public let summary: String
    public let options: [OptionSpec]
    /// The arguments may be private text (ask's prompt): they are wiped from the process's argv once read.
    public let privateArguments: Bool
    /// It talks to the network: the program may start loading its stack as soon as it is parsed.
    public let usesNetwork: Bool
    /// What its first word alone runs (`gemvault history` is `history list`).
    public let isGroupDefault: Bool
    public let run: @Sendable (Call) throws -> Void
    /// Built only for help, the reference and the man page: every command parses the table.
    private let detailsText: @Sendable () -> String
    public var details: String { detailsText() }

    public init(path: [String], arguments: String, argumentRange: ClosedRange<Int>, summary: String, options: [OptionSpec],
                details: @autoclosure @escaping @Sendable () -> String, privateArguments: Bool = false, usesNetwork: Bool = false,
                isGroupDefault: Bool = false, run: @escaping @Sendable (Call) throws -> Void) {
        self.isGroupDefault = isGroupDefault
        self.path = path
        self.arguments = arguments
        self.argumentRange = argumentRange
        self.summary = summary
        self.options = options
        self.detailsText = details
        self.privateArguments = privateArguments
        self.usesNetwork = usesNetwork
        self.run = run
    }

    public var name: String { path.joined(separator: " ") }

    /// The options in its row that override a setting (`--model`, `--timeout`, …).
    public var settingOptions: [OptionSpec] { options.filter { $0.setting != nil } }
}

/// A program's whole command surface: its name, its commands and the options every command takes.
public struct CommandTable<Call>: Sendable {
    public let program: String
    public let commands: [CommandSpec<Call>]
    /// With `OptionSpec.help` among them.
    public let globalOptions: [OptionSpec]

    /// The commands in the order help shows them: each command word's subcommands follow its
    /// first one, in their own order.
    public init(program: String, commands: [CommandSpec<Call>], globalOptions: [OptionSpec]) {
        self.program = program
        // Forty commands: comparing words costs less than hashing them into a dictionary. The
        // table is built at every command's start, so each spec is copied once, into its place
        // (filtered copies cost a tenth of a `key get`; Docs/performance.md).
        var subjects: [String] = []
        var subjectOf: [Int] = []
        subjectOf.reserveCapacity(commands.count)
        for spec in commands {
            var subject = 0
            while subject < subjects.count, subjects[subject] != spec.path[0] { subject += 1 }
            if subject == subjects.count { subjects.append(spec.path[0]) }
            subjectOf.append(subject)
        }
        var grouped: [CommandSpec<Call>] = []
        grouped.reserveCapacity(commands.count)
        for subject in subjects.indices {
            for index in commands.indices where subjectOf[index] == subject { grouped.append(commands[index]) }
        }
        self.commands = grouped
        self.globalOptions = globalOptions
    }

    /// The usage line in the pieces it may be wrapped between: `[--model M]` stays whole.
    public func usageParts(_ spec: CommandSpec<Call>) -> [String] {
        [program, spec.name] + spec.options.map { "[\($0.name)\($0.value.map { " " + $0 } ?? "")]" } + (spec.arguments.isEmpty ? [] : [spec.arguments])
    }

    public func usage(_ spec: CommandSpec<Call>) -> String { usageParts(spec).joined(separator: " ") }
}

/// A mistake in how the command was called (exit 64).
public struct UsageError: Error {
    public let message: String
    /// The words of the command it is about, and its usage line.
    public let commandPath: [String]?
    public let usage: String?
    /// What to do, for a refusal that is not about the command line's shape (a file, a missing
    /// terminal): shown instead of the usage line, which would not help.
    public let fix: String?

    public init(_ message: String, commandPath: [String]?, usage: String?, fix: String? = nil) {
        self.message = message
        self.commandPath = commandPath
        self.usage = usage
        self.fix = fix
    }
}

/// Where argv holds private text: the word's index in the parsed argv, and the byte in it
/// where the text starts (after `--system=`).
public struct PrivateArgument: Equatable, Sendable {
    public let index: Int
    public let offset: Int

    public init(index: Int, offset: Int) {
        self.index = index
        self.offset = offset
    }
}

/// What argv asked for.
public enum ParsedCommand<Call> {
    case run(CommandSpec<Call>, positionals: [String], options: ParsedOptions)
    case help(CommandSpec<Call>?)
    case groupHelp([String])
    case reference
    case manual
    case version
    /// The shell completion scripts' question: candidates for a partial command line.
    case complete([String])
    /// The program alone, without arguments.
    case start
}
