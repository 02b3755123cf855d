import Glibc
import FoundationEssentials
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

    /// Loads the file, or an empty one when it does not exist.
    public static func load(path: String) throws(ConfigError) -> ConfigFile {
        guard FileSecurity.mode(of: path) != nil else { return ConfigFile(path: path) }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        do {
            return try parse(Data(try PlainIO.readAll(fd: fd, limit: 1 << 20)), path: path)
        } catch let error as ConfigError {
            throw error
        } catch PlainIO.ReadFailure.failed(let code) {
            throw .unreadable(path: path, reason: String(cString: strerror(code)))
        } catch {
            throw .invalidFile(path: path, reason: "larger than 1 MiB")
        }
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
            try VaultStore(path: path).writePlainFile(Array(data) + [0x0a])
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
