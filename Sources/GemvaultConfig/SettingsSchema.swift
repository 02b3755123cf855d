import SystemIO
import VaultCore

/// The default model, named in this one place.
public let defaultModel = "gemini-3.6-flash"
public let defaultEndpoint = "https://generativelanguage.googleapis.com"

/// What values a setting accepts.
public enum SettingKind: Sendable {
    /// Free text; line breaks and tabs allowed, other control characters refused.
    case text
    /// One line without any control character (model names, commands).
    case line
    case number(ClosedRange<Double>)
    case integer(ClosedRange<Int>)
    case choice([String])
    /// A duration such as `15m`, `8h`, `1h30m` or `90` (seconds), within the range in seconds.
    case duration(ClosedRange<Double>)
    case endpoint
    case keyName
}

/// One setting: its name, accepted values, default and environment variable.
public struct SettingSpec: Sendable {
    public let name: String
    public let kind: SettingKind
    public let defaultValue: String?
    public let summary: String
    /// Values that may carry a secret (a key command's arguments) are masked when shown.
    public let mayHoldSecret: Bool

    public var environmentVariable: String { "GEMVAULT_" + name.uppercased() }

    /// The canonical form of `raw`, or a message saying why it is refused.
    public func validate(_ raw: String) -> Result<String, SettingProblem> {
        let value = raw.trimmedWhitespace
        switch kind {
        case .text, .line:
            let allowed: Set<Unicode.Scalar> = kind.isLine ? [] : ["\n", "\t"]
            if let bad = raw.unicodeScalars.first(where: { ($0.properties.generalCategory == .control || $0 == "\u{7f}") && !allowed.contains($0) }) {
                return .failure(SettingProblem("contains the control character U+\(String(bad.value, radix: 16, uppercase: true)), which could drive a terminal"))
            }
            return .success(raw)
        case .keyName:
            let ok = !value.isEmpty && value.utf8.allSatisfy { $0 == 0x2d || $0 == 0x5f || $0 == 0x2e || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) }
            return ok ? .success(value) : .failure(SettingProblem("\(quoted(value)) is not a key name (letters, digits, '-', '_', '.')"))
        case .number(let range):
            guard let number = Double(value), number.isFinite else { return .failure(SettingProblem("\(quoted(value)) is not a number")) }
            guard range.contains(number) else { return .failure(SettingProblem("\(value) is outside \(format(range.lowerBound))...\(format(range.upperBound))")) }
            return .success(format(number))
        case .integer(let range):
            guard let number = Int(value) else { return .failure(SettingProblem("\(quoted(value)) is not a whole number")) }
            guard range.contains(number) else { return .failure(SettingProblem("\(value) is outside \(range.lowerBound)...\(range.upperBound)")) }
            return .success(String(number))
        case .duration(let range):
            guard let seconds = DurationText.seconds(value) else {
                return .failure(SettingProblem("\(quoted(value)) is not a duration (like 90s, 15m, 8h or 1h30m)"))
            }
            guard range.contains(seconds) else {
                return .failure(SettingProblem("\(value) is outside \(DurationText.text(range.lowerBound))...\(DurationText.text(range.upperBound))"))
            }
            return .success(DurationText.text(seconds))
        case .choice(let options):
            let lowered = value.lowercased()
            guard options.contains(lowered) else { return .failure(SettingProblem("\(quoted(value)) is not one of \(options.joined(separator: ", "))")) }
            return .success(lowered)
        case .endpoint:
            guard let url = EndpointURL(value) else { return .failure(SettingProblem("\(quoted(value)) is not an http or https URL")) }
            return .success(url.normalized)
        }
    }

    private func quoted(_ value: String) -> String { "'\(value)'" }
    private func format(_ number: Double) -> String {
        number == number.rounded() && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}

/// Durations as people write them: `90`, `90s`, `15m`, `8h`, `2d`, `1h30m`.
public enum DurationText {
    public static func seconds(_ text: String) -> Double? {
        let trimmed = text.trimmedWhitespace.lowercased()
        if let plain = Double(trimmed) { return plain >= 0 ? plain : nil }
        var total = 0.0
        var number = ""
        for character in trimmed {
            if character.isNumber || character == "." { number.append(character); continue }
            guard let value = Double(number) else { return nil }
            switch character {
            case "s": total += value
            case "m": total += value * 60
            case "h": total += value * 3600
            case "d": total += value * 86400
            default: return nil
            }
            number = ""
        }
        return number.isEmpty && !trimmed.isEmpty ? total : nil
    }

    /// The shortest way to write it: `15m`, `8h`, `1h30m`, `45s`.
    public static func text(_ seconds: Double) -> String {
        var rest = Int(seconds.rounded())
        if rest == 0 { return "0s" }
        var parts = ""
        for (unit, size) in [("d", 86400), ("h", 3600), ("m", 60), ("s", 1)] where rest >= size {
            parts += "\(rest / size)\(unit)"
            rest %= size
        }
        return parts
    }
}

extension SettingKind {
    var isLine: Bool { if case .line = self { true } else { false } }
}

public struct SettingProblem: Error, Sendable, Equatable {
    public let message: String
    public init(_ message: String) { self.message = message }
}

/// Every setting, in the order `config explain` lists them.
public enum SettingsSchema {
    public static let all: [SettingSpec] = [
        SettingSpec(name: "model", kind: .line, defaultValue: defaultModel, summary: "Gemini model for chat and ask", mayHoldSecret: false),
        SettingSpec(name: "temperature", kind: .number(0...2), defaultValue: nil, summary: "sampling temperature (model default when unset)", mayHoldSecret: false),
        SettingSpec(name: "top_p", kind: .number(0...1), defaultValue: nil, summary: "nucleus sampling probability", mayHoldSecret: false),
        SettingSpec(name: "top_k", kind: .integer(1...1000), defaultValue: nil, summary: "top-k sampling", mayHoldSecret: false),
        SettingSpec(name: "max_output_tokens", kind: .integer(1...1_000_000), defaultValue: nil, summary: "upper bound on reply tokens", mayHoldSecret: false),
        SettingSpec(name: "system_prompt", kind: .text, defaultValue: nil, summary: "system instruction sent with every conversation", mayHoldSecret: false),
        SettingSpec(name: "endpoint", kind: .endpoint, defaultValue: defaultEndpoint, summary: "API base URL (https, or http on loopback)", mayHoldSecret: false),
        SettingSpec(name: "api_version", kind: .choice(["v1beta", "v1", "v1alpha"]), defaultValue: "v1beta", summary: "API version path segment", mayHoldSecret: false),
        SettingSpec(name: "timeout", kind: .number(1...3600), defaultValue: "60", summary: "seconds to wait for the first byte or between stream events", mayHoldSecret: false),
        SettingSpec(name: "retries", kind: .integer(0...10), defaultValue: "4", summary: "retries after 429, 5xx and connection failures", mayHoldSecret: false),
        SettingSpec(name: "key", kind: .keyName, defaultValue: "default", summary: "name of the vault key to use", mayHoldSecret: false),
        SettingSpec(name: "key_command", kind: .line, defaultValue: nil, summary: "command whose stdout is the API key (run without a shell)", mayHoldSecret: true),
        SettingSpec(name: "key_command_timeout", kind: .number(1...600), defaultValue: "10", summary: "seconds before key_command is stopped", mayHoldSecret: false),
        SettingSpec(name: "rotation_days", kind: .integer(0...3650), defaultValue: "90", summary: "age in days after which a key should be rotated (0: never)", mayHoldSecret: false),
        SettingSpec(name: "session_idle", kind: .duration(10...(7 * 86400)), defaultValue: "15m", summary: "an unlocked session locks after this long unused", mayHoldSecret: false),
        SettingSpec(name: "session_max", kind: .duration(10...(30 * 86400)), defaultValue: "8h", summary: "an unlocked session locks after this long, used or not", mayHoldSecret: false),
        SettingSpec(name: "history", kind: .choice(["on", "off"]), defaultValue: "on", summary: "keep encrypted conversation history", mayHoldSecret: false),
        SettingSpec(name: "color", kind: .choice(["auto", "always", "never"]), defaultValue: "auto", summary: "colour output", mayHoldSecret: false),
    ]

    public static func spec(named name: String) -> SettingSpec? { all.first { $0.name == name } }
    public static var names: [String] { all.map(\.name) }
}

