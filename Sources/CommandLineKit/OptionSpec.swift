import Settings

/// An option a command accepts: a flag (`value == nil`) or an option with a value. A program
/// names each as one constant, used both in its command table's rows and in the lookups
/// (`call.flag(.json)`), so a lookup names an option the table has.
public struct OptionSpec: Sendable, Equatable {
    public let name: String
    public let value: String?
    public let help: String
    /// The value may be private text: it is wiped from the process's argv once read.
    public var privateValue = false
    /// A one-letter spelling, such as `-a` for `--attach`.
    public var shortName: String? = nil
    /// May be given more than once; `ParsedOptions.values` has every value, in order.
    public var repeatable = false
    /// The setting it overrides for this command (the flags layer of the settings).
    public var setting: SettingSpec? = nil

    public init(name: String, value: String?, help: String, privateValue: Bool = false, shortName: String? = nil, repeatable: Bool = false,
                setting: SettingSpec? = nil) {
        self.name = name
        self.value = value
        self.help = help
        self.privateValue = privateValue
        self.shortName = shortName
        self.repeatable = repeatable
        self.setting = setting
    }

    /// `-a, --attach FILE` in help, the reference and the manual.
    public var synopsis: String { (shortName.map { $0 + ", " } ?? "") + name + (value.map { " " + $0 } ?? "") }

    /// Two options with one spelling but different help (`--timeout`, `--force`, `--raw`) are different options.
    public static func == (one: OptionSpec, other: OptionSpec) -> Bool {
        one.name == other.name && one.value == other.value && one.help == other.help
    }

    /// Every command's: the parser answers it with the command's help.
    public static let help = OptionSpec(name: "--help", value: nil, help: "show help for the command")
}

/// The options argv gave, by the option they belong to; only the parser (and tests) make one from names.
public struct ParsedOptions: Sendable, Equatable {
    /// Joins the values of a repeatable option: argv words are C strings, so none can hold a NUL.
    static let valueSeparator: Character = "\u{0}"

    private let byName: [String: String]

    public init(byName: [String: String] = [:]) { self.byName = byName }

    public static let none = ParsedOptions()

    public func flag(_ option: OptionSpec) -> Bool { byName[option.name] != nil }
    /// The value of an option; for a repeatable one, the last.
    public func value(_ option: OptionSpec) -> String? { values(option).last }
    /// Every value of a repeatable option, in the order given.
    public func values(_ option: OptionSpec) -> [String] {
        guard let joined = byName[option.name] else { return [] }
        return joined.split(separator: Self.valueSeparator, omittingEmptySubsequences: false).map(String.init)
    }
}
