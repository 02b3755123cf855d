extension HelpText {
    /// The manual page's commands, a `.TP` entry each with its details, options and examples,
    /// then its GLOBAL OPTIONS section, in roff.
    public func manualCommands() -> String {
        var page = ""
        for spec in table.commands {
            page += ".TP\n.B \(Roff.escape(table.program + " " + spec.name))" + (spec.arguments.isEmpty ? "" : " " + Roff.italic(spec.arguments)) + "\n"
            page += Roff.escape(Roff.capitalized(spec.summary)) + ".\n"
            for line in spec.details.split(separator: "\n") { page += ".IP\n" + Roff.escape(String(line)) + "\n" }
            for option in spec.options { page += optionEntry(option, indented: true) }
            if let examples = examples[spec.name] {
                page += ".IP\n.nf\n" + examples.map { Roff.escape($0) + "\n" }.joined() + ".fi\n"
            }
        }
        page += ".SH GLOBAL OPTIONS\n"
        for option in table.globalOptions { page += optionEntry(option, indented: false) }
        return page
    }

    private func optionEntry(_ option: OptionSpec, indented: Bool) -> String {
        let name = ".B \(Roff.escape((option.shortName.map { $0 + ", " } ?? "") + option.name))" + (option.value.map { " " + Roff.italic($0) } ?? "")
        let entry = ".TP\n\(name)\n\(Roff.escape(Roff.capitalized(option.help))).\n"
        return indented ? ".RS\n" + entry + ".RE\n" : entry
    }
}

/// Text for a manual page in roff.
public enum Roff {
    /// Backslashes and hyphens escaped, non-ASCII as `\[uXXXX]` (troff reads bytes), and no
    /// line may start with a control character.
    public static func escape(_ text: String) -> String {
        let plain = text.replacing("\\", with: "\\e").replacing("-", with: "\\-")
        var escaped = plain.unicodeScalars.map { $0.isASCII ? String($0) : "\\[u" + hex($0.value) + "]" }.joined()
        if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
        return escaped
    }

    static func italic(_ text: String) -> String { "\\fI" + escape(text) + "\\fR" }

    static func capitalized(_ text: String) -> String { text.prefix(1).uppercased() + text.dropFirst() }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}
