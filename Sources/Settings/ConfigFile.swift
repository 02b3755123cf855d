import FoundationEssentials
import SystemIO
import VaultCore

/// `$XDG_CONFIG_HOME/gemvault/config.json`: `{"version": 1, "model": "...", "temperature": 0.7}`.
///
/// Values may be JSON strings, numbers or booleans. Unknown keys are kept and reported as
/// warnings; a newer `version` is refused so an old gemvault never misreads a new file.
public struct ConfigFile: Sendable {
    public static let currentVersion = 1

    public let path: String
    public private(set) var values: [String: String]
    public private(set) var unknownKeys: [String]

    public init(path: String, values: [String: String] = [:], unknownKeys: [String] = []) {
        self.path = path
        self.values = values
        self.unknownKeys = unknownKeys
    }

    /// Loads the file, or an empty one when it does not exist. It can name a program to run
    /// (key_command) and where the key is sent (endpoint), so it must be the user's own, in a
    /// folder of the user's, and writable by nobody else; it may stay readable.
    public static func load(path: String) throws(ConfigError) -> ConfigFile {
        let (directory, name) = TrustedFolder.parent(of: path)
        let file: FileDescriptor?
        do throws(TrustedOpenError) {
            guard let folder = try TrustedFolder.open(directory) else { return ConfigFile(path: path) }
            file = try TrustedFile.open(name, in: folder, requirement: .configuration)
        } catch {
            switch error {
            case .refused(let failure): throw .refused(failure)
            case .failed(let failure): throw .unreadable(path: path, reason: failure.reason)
            }
        }
        guard let file else { return ConfigFile(path: path) }
        let bytes: [UInt8]
        do throws(FileDescriptor.ReadFailure) { bytes = try file.readAll(limit: 1 << 20) } catch {
            switch error {
            case .failed(let failure): throw .unreadable(path: path, reason: failure.reason)
            case .tooLarge: throw .invalidFile(path: path, reason: "larger than 1 MiB")
            }
        }
        return try parse(Data(bytes), path: path)
    }

    static func parse(_ data: Data, path: String) throws(ConfigError) -> ConfigFile {
        let object: [String: JSONScalar]
        do {
            object = try JSONDecoder().decode([String: JSONScalar].self, from: data)
        } catch {
            throw .invalidFile(path: path, reason: "not a JSON object of strings, numbers and booleans")
        }
        if let version = object["version"] {
            guard case .number(let number) = version, number == Double(currentVersion) else {
                throw .invalidFile(path: path, reason: "version \(version.text) is not supported (this gemvault reads version \(currentVersion))")
            }
        }
        var values: [String: String] = [:]
        var unknown: [String] = []
        for (key, value) in object where key != "version" {
            if SettingsSchema.spec(named: key) == nil { unknown.append(key) } else { values[key] = value.text }
        }
        return ConfigFile(path: path, values: values, unknownKeys: unknown.sorted())
    }

    public mutating func set(_ name: String, _ value: String) { values[name] = value }
    public mutating func unset(_ name: String) -> Bool { values.removeValue(forKey: name) != nil }

    /// Writes the file atomically, 0600 in a 0700 folder.
    public func save() throws(ConfigError) {
        var object: [String: JSONScalar] = ["version": .number(Double(Self.currentVersion))]
        for (key, value) in values {
            if case .number = SettingsSchema.spec(named: key)?.kind, let number = Double(value) {
                object[key] = .number(number)
            } else if case .integer = SettingsSchema.spec(named: key)?.kind, let number = Double(value) {
                object[key] = .number(number)
            } else {
                object[key] = .string(value)
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(object) else { throw .invalidFile(path: path, reason: "could not encode") }
        do {
            try VaultStore.writePlainFile(path, JSONLayout.tightenKeySeparators(Array(data)) + [0x0a])
        } catch .refused(let failure) {
            throw .refused(failure)
        } catch {
            throw .unreadable(path: path, reason: "\(error)")
        }
    }
}

/// A JSON string, number or boolean.
enum JSONScalar: Codable, Sendable {
    case string(String)
    case number(Double)
    case bool(Bool)

    init(from decoder: Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let bool = try? container.decode(Bool.self) { self = .bool(bool) }
        else if let number = try? container.decode(Double.self) { self = .number(number) }
        else { self = .string(try container.decode(String.self)) }
    }

    func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let text): try container.encode(text)
        case .number(let number):
            if number == number.rounded(), abs(number) < 1e15 { try container.encode(Int(number)) } else { try container.encode(number) }
        case .bool(let flag): try container.encode(flag)
        }
    }

    var text: String {
        switch self {
        case .string(let text): text
        case .number(let number): number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
        case .bool(let flag): flag ? "on" : "off"
        }
    }
}
