extension CommandTable {
    /// Finds the longest command path that matches, then reads options and arguments.
    /// `--` ends option parsing; options may appear before or after arguments.
    public func parse(_ argv: [String]) throws -> ParsedCommand<Call> {
        var ignored: [PrivateArgument] = []
        return try parse(argv, privateArguments: &ignored)
    }

    /// Parses, noting which words of `argv` hold private text (see `PrivateArgument`).
    public func parse(_ argv: [String], privateArguments: inout [PrivateArgument]) throws -> ParsedCommand<Call> {
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
                guard let value = rest.first else { throw UsageError("\(word) needs a value (\(option.value!))", commandPath: nil, usage: nil) }
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
            guard let spec = commands.first(where: { $0.path == topic }) else {
                if commands.contains(where: { $0.path.starts(with: topic) }) { return .groupHelp(topic) }
                throw UsageError("no command '\(topic.joined(separator: " "))'", commandPath: nil, usage: nil)
            }
            return .help(spec)
        }
        let words = arguments.prefix { !$0.hasPrefix("-") }
        // The first longest match, by a loop: a generic filter's first use costs 300,000 instructions.
        var matched: CommandSpec<Call>?
        for command in commands where words.starts(with: command.path) && command.path.count > (matched?.path.count ?? -1) {
            matched = command
        }
        var consumed = matched?.path.count ?? 0
        if matched == nil, words.count == 1, !arguments.contains(OptionSpec.help.name),
           let fallback = commands.first(where: { $0.path.first == words.first && $0.isGroupDefault }) {
            matched = fallback
            consumed = 1
        }
        guard let spec = matched else { return try unknownCommand(words: Array(words), arguments: arguments) }
        guard let (positionals, options) = try readOptions(arguments, from: consumed, argvIndex: argvIndex, spec: spec,
                                                           privateArguments: &privateArguments) else { return .help(spec) }
        guard spec.argumentRange.contains(positionals.count) else {
            let expected = spec.argumentRange.lowerBound == spec.argumentRange.upperBound
                ? "\(spec.argumentRange.lowerBound)" : "\(spec.argumentRange.lowerBound) to \(spec.argumentRange.upperBound)"
            throw UsageError("'\(program) \(spec.name)' takes \(expected) argument\(spec.argumentRange.upperBound == 1 ? "" : "s"), got \(positionals.count)", commandPath: spec.path, usage: usage(spec))
        }
        return .run(spec, positionals: positionals, options: ParsedOptions(byName: options))
    }

    /// Words that name no command: the group's help, or the nearest command as a suggestion.
    private func unknownCommand(words: [String], arguments: [String]) throws -> ParsedCommand<Call> {
        let group = Array(words.prefix(1))
        if !group.isEmpty, commands.contains(where: { $0.path.first == group[0] }) {
            if arguments.contains(OptionSpec.help.name) { return .groupHelp(group) }
            let subcommands = commands.filter { $0.path.first == group[0] }.map { $0.path.dropFirst().joined(separator: " ") }
            if words.count > 1, let guess = Suggestion.nearest(words[1], among: subcommands) {
                throw UsageError("unknown command '\(group[0]) \(words[1])': did you mean '\(group[0]) \(guess)'?", commandPath: nil, usage: nil)
            }
            throw UsageError("'\(group[0])' needs a subcommand: " + subcommands.joined(separator: ", "), commandPath: nil, usage: nil)
        }
        let topLevel = Array(Set(commands.compactMap(\.path.first) + ["help"])).sorted()
        if let guess = Suggestion.nearest(arguments[0], among: topLevel) {
            throw UsageError("unknown command '\(arguments[0])': did you mean '\(guess)'?", commandPath: nil, usage: nil)
        }
        throw UsageError("unknown command '\(arguments[0])'", commandPath: nil, usage: nil)
    }

    /// The options and arguments after the command's words; nil when one of them asks for help.
    private func readOptions(_ arguments: [String], from consumed: Int, argvIndex: [Int], spec: CommandSpec<Call>,
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
                throw UsageError("unknown option '\(name)' for '\(program) \(spec.name)'\(guess)", commandPath: spec.path, usage: usage(spec))
            }
            if option == .help { return nil }
            if option.value != nil {
                func store(_ value: String) {
                    if option.repeatable, let earlier = options[option.name] {
                        options[option.name] = earlier + String(ParsedOptions.valueSeparator) + value
                    } else {
                        options[option.name] = value
                    }
                }
                if let inline {
                    store(inline)
                    if option.privateValue { privateArguments.append(PrivateArgument(index: argvIndex[index - 1], offset: name.utf8.count + 1)) }
                    continue
                }
                guard index < arguments.count else { throw UsageError("\(name) needs a value (\(option.value!))", commandPath: spec.path, usage: usage(spec)) }
                store(arguments[index])
                if option.privateValue { privateArguments.append(PrivateArgument(index: argvIndex[index], offset: 0)) }
                index += 1
            } else {
                guard inline == nil else { throw UsageError("\(name) takes no value", commandPath: spec.path, usage: usage(spec)) }
                options[option.name] = ""
            }
        }
        return (positionals, options)
    }
}
