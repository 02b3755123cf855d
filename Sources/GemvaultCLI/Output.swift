import CSystemShims
import Glibc
import FoundationEssentials
import Rendering
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
        var bytes = JSONLayout.escapingInvisibleControls(JSONLayout.tightenKeySeparators(Array(data)))
        bytes.append(0x0a)
        try Console.out(bytes)
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

    // One rule for times: what a person reads is local time with its zone (`localDate`);
    // --json, logs and file names carry ISO 8601 in UTC (`isoDate`).

    /// `2026-11-29T19:02:21Z`
    static func isoDate(_ seconds: Int64) -> String { Clock.isoDate(seconds) }

    static func now() -> Int64 { Clock.now() }

    /// `2026-11-29 20:02 CET` in the local time zone (TZ).
    static func localDate(_ seconds: Int64) -> String { Clock.localDate(seconds) }

    /// `14:32` in the local time zone.
    static func localTime(_ seconds: Int64) -> String { String(localDate(seconds).split(separator: " ")[1]) }

    /// A line cut to `width` terminal columns, with `…` where it was cut.
    static func fitted(_ line: String, width: Int) -> String {
        guard width > 1, DisplayWidth.of(line) > width else { return line }
        var kept = ""
        var used = 0
        for character in line {
            let wide = DisplayWidth.of(character)
            if used + wide > width - 1 { break }
            kept.append(character)
            used += wide
        }
        return kept + "…"
    }

    /// `20261129T190221Z`, for file names.
    static func compactDate(_ seconds: Int64) -> String { isoDate(seconds).filter { $0 != ":" && $0 != "-" } }

    /// Writes a file the user asked for (a share, a credential) atomically with `mode`, never
    /// over a link, and over an existing file only when `replacing`.
    static func save(_ bytes: [UInt8], to path: String, mode: mode_t, replacing: Bool) throws {
        do throws(TrustedOpenError) {
            try TrustedFile.save(path, bytes, mode: mode, replacing: replacing)
        } catch {
            switch error {
            case .refused(let failure): throw CommandFailure(.failure, "\(failure.message); nothing was written there", hint: failure.fix)
            case .failed(let system) where system.code == EEXIST:
                throw CommandFailure(.failure, "\(path) exists; nothing was written", hint: "--force replaces it")
            case .failed(let system): throw CommandFailure(.failure, "cannot write \(path): \(system.reason)")
            }
        }
    }

    /// "3 days", "5 hours" …
    static func age(since seconds: Int64, now: Int64 = now()) -> String { Clock.elapsedText(now - seconds) }

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

    /// The window's columns when `fd` is a terminal, for text wrapped to it; nil elsewhere
    /// (a pipe or a log keeps each line whole, for grep).
    static func windowColumns(_ fd: Int32 = FileDescriptor.standardOutput.raw) -> Int? {
        let columns = Int(gv_terminal_columns(fd))
        return Terminal.isTerminal(fd) && columns > 0 ? columns : nil
    }

    /// `text` for the window of `fd`: each line broken between words, its later rows indented by `indent`.
    static func fitted(_ text: String, fd: Int32 = FileDescriptor.standardError.raw, indent: Int = 0) -> String {
        DisplayWidth.wrapped(text, width: windowColumns(fd), indent: indent)
    }

    /// A table with a header row; wider than `columns` (a narrow window), a record per row
    /// instead: the row's first cell, then each other cell under its heading, wrapped between
    /// words, so nothing breaks mid-word at the window's edge.
    static func table(_ rows: [[String]], columns: Int?) -> String {
        let text = table(rows)
        guard let columns, rows.count > 1, let header = rows.first,
              text.split(separator: "\n").contains(where: { DisplayWidth.of($0) > columns }) else { return text }
        let label = (header.dropFirst().map(\.count).max() ?? 0) + 2
        return rows.dropFirst().map { row in
            ([row.first ?? ""] + zip(header, row).dropFirst().map { heading, cell in
                DisplayWidth.wrapped("  " + heading + String(repeating: " ", count: label - heading.count) + cell, width: columns, indent: label + 2)
            }).joined(separator: "\n") + "\n"
        }.joined(separator: "\n")
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
    case keyRotate = "key-rotate", keyUsage = "key-usage"
    case identity, keyShareList = "key-share-list", keyImport = "key-import", slotList = "slot-list"
    case prices

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
