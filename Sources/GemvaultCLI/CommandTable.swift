/// One row of the command table. The parser, `--help`, `help COMMAND` and the CLI reference
/// are all generated from these rows.
struct CommandSpec: Sendable {
    let path: [String]
    let arguments: String
    let argumentRange: ClosedRange<Int>
    let summary: String
    let options: [OptionSpec]
    /// The arguments may be private text (ask's prompt): they are wiped from the process's argv once read.
    let privateArguments: Bool
    /// It talks to Gemini: libcurl starts loading on a second thread as soon as it is parsed.
    let usesNetwork: Bool
    /// What its first word alone runs (`gemvault history` is `history list`).
    let isGroupDefault: Bool
    let run: @Sendable (Invocation) throws -> Void
    /// Built only for help, the reference and the man page: every command parses this table.
    private let detailsText: @Sendable () -> String
    var details: String { detailsText() }

    init(path: [String], arguments: String, argumentRange: ClosedRange<Int>, summary: String, options: [OptionSpec],
         details: @autoclosure @escaping @Sendable () -> String, privateArguments: Bool = false, usesNetwork: Bool = false,
         isGroupDefault: Bool = false, run: @escaping @Sendable (Invocation) throws -> Void) {
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

    var name: String { path.joined(separator: " ") }

    /// Whether this option is in the command's row or a global one.
    func offers(_ option: OptionSpec) -> Bool { options.contains(option) || globalOptions.contains(option) }

    /// The options in its row that override a setting (`--model`, `--timeout`, …).
    var settingOptions: [OptionSpec] { options.filter { $0.setting != nil } }

    var usage: String { usageParts.joined(separator: " ") }

    /// The usage line in the pieces it may be wrapped between: `[--model M]` stays whole.
    var usageParts: [String] {
        ["gemvault", name] + options.map { "[\($0.name)\($0.value.map { " " + $0 } ?? "")]" } + (arguments.isEmpty ? [] : [arguments])
    }
}

/// The whole command surface, with the subcommands of one command together (all `key …`
/// where the first one is), in the order help, the reference and the manual show them.
let commandTable: [CommandSpec] = groupedBySubject([vaultCommands, rotationCommands, shareCommands, credentialCommands, sessionCommands, pinCommands, slotCommands, configCommands, spendCommands, priceCommands, chatCommands,
    historyCommands, execCommands, secretCommands, mcpCommands, completionCommands])

/// Stable: each command word's subcommands follow its first one, in their own order.
func groupedBySubject(_ groups: [[CommandSpec]]) -> [CommandSpec] {
    // Forty commands: comparing words costs less than hashing them into a dictionary. The table
    // is built at every command's start, so each spec is copied once, into its place (copying
    // them into a joined list and filtered lists cost a tenth of a `key get`; Docs/performance.md).
    var subjects: [String] = []
    var places: [(group: Int, index: Int, subject: Int)] = []
    for group in groups.indices {
        for index in groups[group].indices {
            let word = groups[group][index].path[0]
            var subject = 0
            while subject < subjects.count, subjects[subject] != word { subject += 1 }
            if subject == subjects.count { subjects.append(word) }
            places.append((group, index, subject))
        }
    }
    var grouped: [CommandSpec] = []
    grouped.reserveCapacity(places.count)
    for subject in subjects.indices {
        for place in places where place.subject == subject { grouped.append(groups[place.group][place.index]) }
    }
    return grouped
}

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

/// A mistake in how the command was called (exit 64).
struct UsageError: Error {
    let message: String
    let command: CommandSpec?
    /// What to do, for a refusal that is not about the command line's shape (a file, a missing
    /// terminal): shown instead of the usage line, which would not help.
    let fix: String?
    init(_ message: String, command: CommandSpec? = nil, fix: String? = nil) {
        self.message = message
        self.command = command
        self.fix = fix
    }
}

/// Where argv holds private text: the word's index in the parsed argv, and the byte in it
/// where the text starts (after `--system=`).
struct PrivateArgument: Equatable {
    let index: Int
    let offset: Int
}

/// What argv asked for.
enum ParsedCommand {
    case run(CommandSpec, positionals: [String], options: ParsedOptions)
    case help(CommandSpec?)
    case groupHelp([String])
    case reference
    case manual
    case version
    /// The shell completion scripts' question: candidates for a partial command line.
    case complete([String])
    /// Plain `gemvault`: the first-run set-up, or chat when there is a vault.
    case start
}

enum ArgumentParser {
    /// Joins the values of a repeatable option in `options`: argv words are C strings, so
    /// none can hold a NUL.
    static let valueSeparator: Character = "\u{0}"

    /// Finds the longest command path that matches, then reads options and arguments.
    /// `--` ends option parsing; options may appear before or after arguments.
    static func parse(_ argv: [String]) throws -> ParsedCommand {
        var ignored: [PrivateArgument] = []
        return try parse(argv, privateArguments: &ignored)
    }

    /// Parses, noting which words of `argv` hold private text (see `PrivateArgument`).
    static func parse(_ argv: [String], privateArguments: inout [PrivateArgument]) throws -> ParsedCommand {
        // Before the option table is built: `--version` is the start-up benchmark's command.
        if argv.first == "__complete" { return .complete(Array(argv.dropFirst())) }
        if argv.isEmpty { return .start }
        if argv == ["--version"] || argv == ["-V"] || argv == ["-v"] { return .version }
        // Global options may come before the command: `gemvault --vault PATH key list`.
        var leading: [String] = []
        var rest = argv[...]
        while let word = rest.first, let option = globalOptions.first(where: { word == $0.name || word.hasPrefix($0.name + "=") }), option != .help {
            leading.append(word)
            rest = rest.dropFirst()
            if option.value != nil, !word.contains("=") {
                guard let value = rest.first else { throw UsageError("\(word) needs a value (\(option.value!))") }
                leading.append(value)
                rest = rest.dropFirst()
            }
        }
        let commandWords = rest.prefix { !$0.hasPrefix("-") }
        let arguments = Array(commandWords) + leading + Array(rest.dropFirst(commandWords.count))
        // Where each word of `arguments` sits in argv, which the reordering above changed.
        let argvIndex = Array(commandWords.indices) + Array(argv.indices.prefix(leading.count)) + Array(rest.indices.dropFirst(commandWords.count))
        if arguments.isEmpty || arguments == [OptionSpec.help.name] || arguments == ["-h"] { return .help(nil) }
        if arguments == ["help", "--reference"] { return .reference }
        if arguments == ["help", "--man"] { return .manual }
        if arguments.first == "help" {
            let topic = Array(arguments.dropFirst())
            if topic.isEmpty { return .help(nil) }
            guard let spec = commandTable.first(where: { $0.path == topic }) else {
                if commandTable.contains(where: { $0.path.starts(with: topic) }) { return .groupHelp(topic) }
                throw UsageError("no command '\(topic.joined(separator: " "))'")
            }
            return .help(spec)
        }
        let words = arguments.prefix { !$0.hasPrefix("-") }
        var matched = commandTable.filter({ words.starts(with: $0.path) }).max(by: { $0.path.count < $1.path.count })
        var consumed = matched?.path.count ?? 0
        if matched == nil, words.count == 1, !arguments.contains(OptionSpec.help.name),
           let fallback = commandTable.first(where: { $0.path.first == words.first && $0.isGroupDefault }) {
            matched = fallback
            consumed = 1
        }
        guard let spec = matched else { return try unknownCommand(words: Array(words), arguments: arguments) }
        guard let (positionals, options) = try readOptions(arguments, from: consumed, argvIndex: argvIndex, spec: spec,
                                                           privateArguments: &privateArguments) else { return .help(spec) }
        guard spec.argumentRange.contains(positionals.count) else {
            let expected = spec.argumentRange.lowerBound == spec.argumentRange.upperBound
                ? "\(spec.argumentRange.lowerBound)" : "\(spec.argumentRange.lowerBound) to \(spec.argumentRange.upperBound)"
            throw UsageError("'gemvault \(spec.name)' takes \(expected) argument\(spec.argumentRange.upperBound == 1 ? "" : "s"), got \(positionals.count)", command: spec)
        }
        return .run(spec, positionals: positionals, options: ParsedOptions(byName: options))
    }

    /// Words that name no command: the group's help, or the nearest command as a suggestion.
    private static func unknownCommand(words: [String], arguments: [String]) throws -> ParsedCommand {
        let group = Array(words.prefix(1))
        if !group.isEmpty, commandTable.contains(where: { $0.path.first == group[0] }) {
            if arguments.contains(OptionSpec.help.name) { return .groupHelp(group) }
            let subcommands = commandTable.filter { $0.path.first == group[0] }.map { $0.path.dropFirst().joined(separator: " ") }
            if words.count > 1, let guess = Suggestion.nearest(words[1], among: subcommands) {
                throw UsageError("unknown command '\(group[0]) \(words[1])': did you mean '\(group[0]) \(guess)'?")
            }
            throw UsageError("'\(group[0])' needs a subcommand: " + subcommands.joined(separator: ", "))
        }
        let topLevel = Array(Set(commandTable.compactMap(\.path.first) + ["help"])).sorted()
        if let guess = Suggestion.nearest(arguments[0], among: topLevel) {
            throw UsageError("unknown command '\(arguments[0])': did you mean '\(guess)'?")
        }
        throw UsageError("unknown command '\(arguments[0])'")
    }

    /// The options and arguments after the command's words; nil when one of them asks for help.
    private static func readOptions(_ arguments: [String], from consumed: Int, argvIndex: [Int], spec: CommandSpec,
                                    privateArguments: inout [PrivateArgument]) throws -> (positionals: [String], options: [String: String])? {
        var positionals: [String] = []
        // Made with room for every word: a dictionary grown from empty makes the Swift runtime
        // look its type up, which cost a command with an option more than parsing it (Docs/performance.md).
        var options = [String: String](minimumCapacity: arguments.count - consumed)
        let allowed = spec.options + globalOptions
        var index = consumed
        var onlyPositionals = false
        while index < arguments.count {
            let word = arguments[index]
            index += 1
            if onlyPositionals || !word.hasPrefix("-") || word == "-" {
                positionals.append(word)
                if spec.privateArguments { privateArguments.append(PrivateArgument(index: argvIndex[index - 1], offset: 0)) }
                continue
            }
            if word == "--" { onlyPositionals = true; continue }
            if word == "-h" { return nil }
            var name = word
            var inline: String?
            if let equals = word.firstIndex(of: "="), word.hasPrefix("--") {
                name = String(word[..<equals])
                inline = String(word[word.index(after: equals)...])
            }
            guard let option = allowed.first(where: { $0.name == name || $0.shortName == name }) else {
                let guess = Suggestion.nearest(name, among: allowed.map(\.name)).map { ": did you mean '\($0)'?" } ?? ""
                throw UsageError("unknown option '\(name)' for 'gemvault \(spec.name)'\(guess)", command: spec)
            }
            if option == .help { return nil }
            if option.value != nil {
                func store(_ value: String) {
                    if option.repeatable, let earlier = options[option.name] {
                        options[option.name] = earlier + String(valueSeparator) + value
                    } else {
                        options[option.name] = value
                    }
                }
                if let inline {
                    store(inline)
                    if option.privateValue { privateArguments.append(PrivateArgument(index: argvIndex[index - 1], offset: name.utf8.count + 1)) }
                    continue
                }
                guard index < arguments.count else { throw UsageError("\(name) needs a value (\(option.value!))", command: spec) }
                store(arguments[index])
                if option.privateValue { privateArguments.append(PrivateArgument(index: argvIndex[index], offset: 0)) }
                index += 1
            } else {
                guard inline == nil else { throw UsageError("\(name) takes no value", command: spec) }
                options[option.name] = ""
            }
        }
        return (positionals, options)
    }
}

/// "Did you mean …?" for a mistyped command, subcommand or option.
enum Suggestion {
    /// The candidate closest to `word` by edit distance (transpositions count once), when it
    /// is close enough to be a typo.
    static func nearest(_ word: String, among candidates: [String]) -> String? {
        if let meant = synonyms[word], candidates.contains(meant) { return meant }
        let scored = candidates.map { ($0, distance(word, $0)) }.filter { $0.1 <= max(2, min(3, $0.0.count / 3)) && $0.1 < $0.0.count }
        return scored.min { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }?.0
    }

    /// Words other tools use for the same thing.
    static let synonyms = ["show": "get", "print": "get", "cat": "get", "ls": "list", "delete": "rm", "remove": "rm",
                           "add": "set", "put": "set", "new": "init", "create": "init"]

    /// Optimal string alignment distance.
    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty || b.isEmpty { return max(a.count, b.count) }
        var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { table[i][0] = i }
        for j in 0...b.count { table[0][j] = j }
        for i in 1...a.count {
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                table[i][j] = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] { table[i][j] = min(table[i][j], table[i - 2][j - 2] + 1) }
            }
        }
        return table[a.count][b.count]
    }
}

/// Help text generated from the table. `width` is the terminal's when help goes to one: the
/// text is wrapped to it (examples stay whole, so they can be copied); nil leaves lines long.
enum HelpText {
    static func overview(width: Int? = nil) -> String {
        var text = wrapped("gemvault \(gemvaultVersion): keeps Gemini API keys in an encrypted vault and chats with Gemini", width: width)
        text += "\n\nUsage: gemvault COMMAND [OPTIONS] [ARGUMENTS]\n\n"
        text += wrapped("Plain 'gemvault', on a terminal, walks through the set-up when there is no vault (vault, recovery code, API key, a check, a session) and starts a chat when there is one.", width: width)
        text += "\n\nCommands:\n"
        let column = (commandTable.map { $0.name.count + 1 + $0.arguments.count }.max() ?? 20) + 2
        let commandsPerSubject = Dictionary(commandTable.map { ($0.path[0], 1) }, uniquingKeysWith: +)
        var previous: String?
        for spec in commandTable {
            // A blank line sets off a command's subcommands from its neighbours.
            let subject = spec.path[0]
            if let previous, previous != subject, commandsPerSubject[previous]! > 1 || commandsPerSubject[subject]! > 1 { text += "\n" }
            previous = subject
            let left = spec.arguments.isEmpty ? spec.name : spec.name + " " + spec.arguments
            text += entry(left, spec.summary, column: column, width: width)
        }
        text += "\nGlobal options:\n"
        for option in globalOptions { text += optionLine(option, width: width) }
        text += "\n" + wrapped("Exit codes: " + ExitCode.summaries, width: width) + "\n\n"
        text += wrapped("Run 'gemvault help COMMAND' or 'gemvault COMMAND --help' for details.", width: width) + "\n"
        return text
    }

    static func command(_ spec: CommandSpec, width: Int? = nil) -> String {
        var text = wrapped(words: ["Usage:"] + spec.usageParts, width: width, indent: 7) + "\n\n" + wrapped(spec.summary, width: width) + "\n"
        if !spec.details.isEmpty {
            text += "\n" + Guides.located(spec.details).split(separator: "\n").map { wrapped(String($0), width: width) + "\n" }.joined()
        }
        if !spec.options.isEmpty {
            text += "\nOptions:\n"
            for option in spec.options { text += entry(option.synopsis, Guides.located(option.help), column: 28, width: width) }
        }
        if let examples = commandExamples[spec.name] {
            text += "\nExamples:\n" + examples.map { "  " + $0 + "\n" }.joined()
        }
        text += "\nGlobal options:\n"
        for option in globalOptions { text += optionLine(option, width: width) }
        return text
    }

    static func group(_ prefix: [String], width: Int? = nil) -> String {
        var text = "Usage: gemvault \(prefix.joined(separator: " ")) SUBCOMMAND\n\nSubcommands:\n"
        for spec in commandTable where spec.path.starts(with: prefix) {
            text += entry(spec.name + " " + spec.arguments, spec.summary, column: 32, width: width)
        }
        return text
    }

    /// The Markdown command reference in Docs/cli.md, generated from the table.
    static func reference() -> String {
        var text = ""
        for spec in commandTable {
            text += "### `gemvault \(spec.name)\(spec.arguments.isEmpty ? "" : " " + spec.arguments)`\n\n\(spec.summary).\n\n"
            if !spec.details.isEmpty { text += spec.details.split(separator: "\n").joined(separator: " ") + "\n\n" }
            if !spec.options.isEmpty {
                text += "| Option | Meaning |\n|---|---|\n"
                for option in spec.options {
                    text += "| `\(option.synopsis)` | \(option.help) |\n"
                }
                text += "\n"
            }
            if let examples = commandExamples[spec.name] {
                text += "```sh\n" + examples.map { $0 + "\n" }.joined() + "```\n\n"
            }
        }
        text += "### Global options\n\n| Option | Meaning |\n|---|---|\n"
        for option in globalOptions { text += "| `\(option.synopsis)` | \(option.help) |\n" }
        return text
    }

    private static func optionLine(_ option: OptionSpec, width: Int?) -> String {
        entry(option.synopsis, option.help, column: 28, width: width)
    }

    /// `  LEFT` padded to `column`, then `text` wrapped with a hanging indent under itself;
    /// when the terminal is too narrow for that, the text goes on the lines below, indented.
    static func entry(_ left: String, _ text: String, column: Int, width: Int?) -> String {
        guard let width else { return "  " + left.padding(to: column) + text + "\n" }
        let indent = 2 + column
        if width - indent >= 24 {
            let first = "  " + left.padding(to: column)
            return first + wrapped(text, width: width, indent: indent, firstIndent: first.count).dropFirst(first.count) + "\n"
        }
        return "  " + left + "\n" + wrapped(String(repeating: " ", count: 6) + text, width: width, indent: 6) + "\n"
    }

    /// `text` broken at spaces into lines of at most `width` characters; lines after the first
    /// start with `indent` spaces. A word longer than a line stays whole.
    static func wrapped(_ text: String, width: Int?, indent: Int = 0, firstIndent: Int = 0) -> String {
        let leading = text.prefix { $0 == " " }
        let words = text.dropFirst(leading.count).split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        return wrapped(words: words, width: width, indent: indent, firstIndent: firstIndent + leading.count)
    }

    /// `words` joined by spaces and broken between them as `wrapped` does.
    static func wrapped(words: [String], width: Int?, indent: Int = 0, firstIndent: Int = 0) -> String {
        guard let width else { return String(repeating: " ", count: firstIndent) + words.joined(separator: " ") }
        let limit = max(width, indent + 20)
        var lines: [String] = []
        var line = String(repeating: " ", count: firstIndent)
        var lineHasWord = false
        for word in words {
            if lineHasWord, line.count + 1 + word.count > limit {
                lines.append(line)
                line = String(repeating: " ", count: indent)
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}

extension String {
    func padding(to width: Int) -> String {
        count >= width ? self + " " : self + String(repeating: " ", count: width - count)
    }
}
