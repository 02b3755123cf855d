/// Help text generated from a command table. `width` is the terminal's when help goes to one:
/// the text is wrapped to it (examples stay whole, so they can be copied); nil leaves lines long.
public struct HelpText<Call>: Sendable {
    public let table: CommandTable<Call>
    /// The overview's first line, its paragraph after the usage line, and its closing paragraphs.
    public let title: String
    public let introduction: String
    public let closing: [String]
    /// Example command lines, by command name.
    public let examples: [String: [String]]
    /// What a command's details and its options' help become on a terminal (a guide's path, say).
    public let onTerminal: @Sendable (String) -> String

    public init(table: CommandTable<Call>, title: String, introduction: String, closing: [String], examples: [String: [String]],
                onTerminal: @escaping @Sendable (String) -> String) {
        self.table = table
        self.title = title
        self.introduction = introduction
        self.closing = closing
        self.examples = examples
        self.onTerminal = onTerminal
    }

    public func overview(width: Int? = nil) -> String {
        var text = TextLayout.wrapped(title, width: width)
        text += "\n\nUsage: \(table.program) COMMAND [OPTIONS] [ARGUMENTS]\n\n"
        text += TextLayout.wrapped(introduction, width: width)
        text += "\n\nCommands:\n"
        let column = (table.commands.map { $0.name.count + 1 + $0.arguments.count }.max() ?? 20) + 2
        let commandsPerSubject = Dictionary(table.commands.map { ($0.path[0], 1) }, uniquingKeysWith: +)
        var previous: String?
        for spec in table.commands {
            // A blank line sets off a command's subcommands from its neighbours.
            let subject = spec.path[0]
            if let previous, previous != subject, commandsPerSubject[previous]! > 1 || commandsPerSubject[subject]! > 1 { text += "\n" }
            previous = subject
            let left = spec.arguments.isEmpty ? spec.name : spec.name + " " + spec.arguments
            text += TextLayout.entry(left, spec.summary, column: column, width: width)
        }
        text += "\nGlobal options:\n"
        for option in table.globalOptions { text += optionLine(option, width: width) }
        text += closing.map { "\n" + TextLayout.wrapped($0, width: width) + "\n" }.joined(separator: "")
        return text
    }

    public func command(_ spec: CommandSpec<Call>, width: Int? = nil) -> String {
        var text = TextLayout.wrapped(words: ["Usage:"] + table.usageParts(spec), width: width, indent: 7) + "\n\n" + TextLayout.wrapped(spec.summary, width: width) + "\n"
        if !spec.details.isEmpty {
            text += "\n" + onTerminal(spec.details).split(separator: "\n").map { TextLayout.wrapped(String($0), width: width) + "\n" }.joined()
        }
        if !spec.options.isEmpty {
            text += "\nOptions:\n"
            for option in spec.options { text += TextLayout.entry(option.synopsis, onTerminal(option.help), column: 28, width: width) }
        }
        if let examples = examples[spec.name] {
            text += "\nExamples:\n" + examples.map { "  " + $0 + "\n" }.joined()
        }
        text += "\nGlobal options:\n"
        for option in table.globalOptions { text += optionLine(option, width: width) }
        return text
    }

    public func group(_ prefix: [String], width: Int? = nil) -> String {
        var text = "Usage: \(table.program) \(prefix.joined(separator: " ")) SUBCOMMAND\n\nSubcommands:\n"
        for spec in table.commands where spec.path.starts(with: prefix) {
            text += TextLayout.entry(spec.name + " " + spec.arguments, spec.summary, column: 32, width: width)
        }
        return text
    }

    /// The Markdown command reference (a section of a document), generated from the table.
    public func reference() -> String {
        var text = ""
        for spec in table.commands {
            text += "### `\(table.program) \(spec.name)\(spec.arguments.isEmpty ? "" : " " + spec.arguments)`\n\n\(spec.summary).\n\n"
            if !spec.details.isEmpty { text += spec.details.split(separator: "\n").joined(separator: " ") + "\n\n" }
            if !spec.options.isEmpty {
                text += "| Option | Meaning |\n|---|---|\n"
                for option in spec.options {
                    text += "| `\(option.synopsis)` | \(option.help) |\n"
                }
                text += "\n"
            }
            if let examples = examples[spec.name] {
                text += "```sh\n" + examples.map { $0 + "\n" }.joined() + "```\n\n"
            }
        }
        text += "### Global options\n\n| Option | Meaning |\n|---|---|\n"
        for option in table.globalOptions { text += "| `\(option.synopsis)` | \(option.help) |\n" }
        return text
    }

    private func optionLine(_ option: OptionSpec, width: Int?) -> String {
        TextLayout.entry(option.synopsis, option.help, column: 28, width: width)
    }
}
