extension CommandTable {
    /// The candidates for the last of `words` (the words after the program's name; the last is
    /// being typed, maybe empty): command words and option names from the table, and an
    /// option's value or an argument from `values`, asked with its placeholder (`PATH`, `NAME`,
    /// `bash|zsh|fish`) and the prefix typed. After `--`, a command that runs another
    /// (`-- COMMAND [ARGS...]`) asks for `COMMAND`, then for `FILE`.
    public func completions(_ words: [String], values: (_ placeholder: String, _ prefix: String) -> [String]) -> [String] {
        let current = words.last ?? ""
        if current == "=" { return [] }
        var before = words.dropLast()
        // bash splits `--color=al` into `--color`, `=`, `al`.
        if before.last == "=" { before = before.dropLast() }
        let line = typed(Array(before))
        let spec = line.spec
        if line.afterDoubleDash, spec?.arguments.hasPrefix("-- ") == true {
            return values(line.positionals.isEmpty ? "COMMAND" : "FILE", current)
        }
        // The value of an option.
        if let previous = before.last, previous.hasPrefix("-"), !line.afterDoubleDash,
           let option = ((spec?.options ?? []) + globalOptions).first(where: { $0.name == previous || $0.shortName == previous }), let value = option.value {
            return values(value, current)
        }
        if current.hasPrefix("-") {
            let names = ((spec?.options ?? []) + globalOptions).map(\.name) + (spec == nil ? ["--version"] : [])
            return names.filter { $0.hasPrefix(current) }
        }
        guard let spec else {
            let next = commands.filter { $0.path.count > line.commandWords.count && Array($0.path.prefix(line.commandWords.count)) == line.commandWords }
                .map { $0.path[line.commandWords.count] } + (line.commandWords.isEmpty ? ["help"] : [])
            var seen = Set<String>()
            return next.filter { seen.insert($0).inserted && $0.hasPrefix(current) }
        }
        let placeholders = spec.arguments.split(separator: " ").map(String.init).filter { $0 != "--" }
        guard !placeholders.isEmpty else { return [] }
        let slot = min(line.positionals.count, placeholders.count - 1)
        if slot < line.positionals.count, !placeholders[slot].contains("...") { return [] }
        return values(placeholders[slot], current)
    }

    /// The words before the one being typed: the command they name (once they name one), its
    /// arguments so far, and whether `--` came; options and their values are skipped.
    private func typed(_ before: [String]) -> (commandWords: [String], positionals: [String], spec: CommandSpec<Call>?, afterDoubleDash: Bool) {
        var commandWords: [String] = []
        var positionals: [String] = []
        var spec: CommandSpec<Call>?
        var afterDoubleDash = false
        var index = before.startIndex
        while index < before.endIndex {
            let word = before[index]
            index += 1
            if afterDoubleDash { positionals.append(word); continue }
            if word == "--" { afterDoubleDash = true; continue }
            if word.hasPrefix("-") {
                let options = (spec?.options ?? []) + globalOptions
                if let option = options.first(where: { $0.name == word || $0.shortName == word }), option.value != nil { index += 1 }
                continue
            }
            if spec == nil {
                commandWords.append(word)
                spec = commands.first { $0.path == commandWords }
            } else {
                positionals.append(word)
            }
        }
        return (commandWords, positionals, spec, afterDoubleDash)
    }
}
