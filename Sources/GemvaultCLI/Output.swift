import FoundationEssentials
import SystemIO
import TerminalIO
import VaultCore

enum Output {
    /// Pretty JSON with sorted keys on stdout: one object, with its schema's `version` among
    /// its fields (the schemas are Docs/schemas/NAME.schema.json).
    static func json<T: Encodable>(_ value: T, schema: JSONSchema) throws(StandardOutputFailure) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        let data = (try? encoder.encode(Versioned(version: schema.version, body: value))) ?? Data("null".utf8)
        var bytes = escapingC1Controls(JSONLayout.tightenKeySeparators(Array(data)))
        bytes.append(0x0a)
        try Console.out(bytes)
    }

    /// JSONEncoder escapes C0 controls but passes C1 controls (U+0080–U+009F) through raw, and
    /// a terminal may act on them (U+009B is CSI). They can only sit inside strings, where
    /// `\u009b` means the same character. In UTF-8 each is C2 80…C2 9F, and C2 is never a
    /// continuation byte, so the byte pair finds exactly them.
    static func escapingC1Controls(_ json: [UInt8]) -> [UInt8] {
        guard json.contains(0xc2) else { return json }
        var result: [UInt8] = []
        result.reserveCapacity(json.count)
        let hex = Array("0123456789abcdef".utf8)
        var index = 0
        while index < json.count {
            if json[index] == 0xc2, index + 1 < json.count, (0x80...0x9f).contains(json[index + 1]) {
                let value = json[index + 1]
                result += Array("\\u00".utf8) + [hex[Int(value >> 4)], hex[Int(value & 0x0f)]]
                index += 2
            } else {
                result.append(json[index])
                index += 1
            }
        }
        return result
    }

    /// Writes secret bytes and a newline to stdout without building a `String`.
    static func writeSecret(_ secret: SecretBytes) throws(StandardOutputFailure) {
        try secret.withUnsafeBytes { raw throws(StandardOutputFailure) in try Console.out(raw) }
        try Console.out("\n")
    }

    /// The same on stderr, best effort: there is nowhere left to report a failure.
    static func writeSecretToStandardError(_ secret: SecretBytes) {
        secret.withUnsafeBytes { raw in _ = try? FileDescriptor.standardError.writeAll(raw) }
        try? FileDescriptor.standardError.writeAll("\n")
    }

    /// `2026-11-29T19:02:21Z`
    static func isoDate(_ seconds: Int64) -> String { Clock.isoDate(seconds) }

    static func now() -> Int64 { Clock.now() }

    /// `20261129T190221Z`, for file names.
    static func compactDate(_ seconds: Int64) -> String { isoDate(seconds).filter { $0 != ":" && $0 != "-" } }

    /// "3 days", "5 hours" …
    static func age(since seconds: Int64, now: Int64 = now()) -> String {
        let elapsed = max(0, now - seconds)
        switch elapsed {
        case ..<120: return "\(elapsed) seconds"
        case ..<7200: return "\(elapsed / 60) minutes"
        case ..<172_800: return "\(elapsed / 3600) hours"
        default: return "\(elapsed / 86400) days"
        }
    }

    /// `1,048,576`: a count a person reads at a glance (JSON keeps the bare number).
    static func grouped(_ number: Int) -> String {
        let digits = String(number.magnitude)
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { text += "," }
            text.append(digit)
        }
        return (number < 0 ? "-" : "") + text
    }

    static func table(_ rows: [[String]]) -> String {
        guard let first = rows.first else { return "" }
        // Each cell's width is counted once (in characters): key list prints thousands.
        let counts = rows.map { $0.map(\.count) }
        var widths = Array(repeating: 0, count: first.count)
        for row in counts { for (i, count) in row.enumerated() { widths[i] = max(widths[i], count) } }
        var text = ""
        for (r, row) in rows.enumerated() {
            for (i, cell) in row.enumerated() {
                text += cell
                if i < row.count - 1 { text += String(repeating: " ", count: widths[i] + 1 - counts[r][i]) }
            }
            text += "\n"
        }
        return text
    }
}

/// The scripting contract: every `--json` output has a schema committed under Docs/schemas/.
/// Adding a field keeps a schema's version; changing or removing one raises it.
enum JSONSchema: String, CaseIterable {
    case initResult = "init", keyList = "key-list", keyHistory = "key-history", inspect, status
    case configList = "config-list", configExplain = "config-explain", keyWhich = "key-which", doctor
    case ask, models, historyList = "history-list", historyExport = "history-export", historySearch = "history-search", recoveryCode = "recovery-code"
    case keyRotate = "key-rotate"

    var version: Int { 1 }
    var file: String { "Docs/schemas/\(rawValue).schema.json" }
}

/// An object's fields with `version` added beside them.
private struct Versioned<Body: Encodable>: Encodable {
    let version: Int
    let body: Body

    private enum Keys: String, CodingKey { case version }

    func encode(to encoder: Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(version, forKey: .version)
        try body.encode(to: encoder)
    }
}

/// An optional that encodes as `null` when absent, so a JSON shape never changes.
@propertyWrapper
struct Nullable<Value: Encodable>: Encodable {
    var wrappedValue: Value?

    init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }

    func encode(to encoder: Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}
