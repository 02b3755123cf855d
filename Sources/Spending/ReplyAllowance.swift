import Conversations
import FoundationEssentials
import SystemIO

/// The reply tokens a budget check counts a request at: `max_output_tokens` when set, else
/// the model's output limit capped by the `budget_reply_estimate` setting; plus the thinking
/// budget when one is set (thinking is billed as output).
public struct ReplyAllowance: Equatable, Sendable {
    public var tokens: Int
    /// Where the number comes from, for the refusal: `max_output_tokens 100`, …
    public var origin: String

    public init(options: GenerationOptions, outputLimit: Int?, estimate: Int) {
        var tokens: Int
        if let most = options.maxOutputTokens {
            tokens = most
            origin = "max_output_tokens \(most)"
        } else if let outputLimit, outputLimit > 0, outputLimit < estimate {
            tokens = outputLimit
            origin = "the model's output limit, \(outputLimit)"
        } else {
            tokens = estimate
            origin = "budget_reply_estimate \(estimate)" + (outputLimit == nil ? " (the model's output limit unknown)" : "")
        }
        if case .budget(let thinking)? = options.thinking, thinking > 0 {
            tokens += thinking
            origin += " + thinking budget \(thinking)"
        }
        self.tokens = tokens
    }
}

/// The models' output limits (`models.get`), kept a day in the user's cache folder so a
/// budget check asks Google once a day per model. Not secret; a file that does not parse is
/// asked again.
public struct ModelLimits {
    public let folder: String
    static let name = "model-limits.json"
    static let lifetime: Int64 = 86_400

    private struct Entry: Codable {
        var outputTokenLimit: Int?
        var fetched: Int64
    }

    public init(cacheDirectory: String) { folder = cacheDirectory + "/gemvault" }

    /// The model's output limit: cached when fetched less than a day ago, else from `fetch`
    /// (nil when it fails: the allowance then counts the setting).
    public func outputLimit(_ model: String, now: Int64, fetch: () throws -> Int?) -> Int? {
        var entries = load()
        if let entry = entries[model], entry.fetched <= now, now - entry.fetched < Self.lifetime { return entry.outputTokenLimit }
        guard let limit = try? fetch() else { return nil }
        entries = entries.filter { now - $0.value.fetched < Self.lifetime }
        entries[model] = Entry(outputTokenLimit: limit, fetched: now)
        if let folder = try? TrustedFolder.create(folder), let bytes = try? JSONEncoder().encode(entries) {
            try? folder.replace(Self.name, with: Array(bytes), tempPrefix: ".model-limits.tmp.")
        }
        return limit
    }

    private func load() -> [String: Entry] {
        guard let folder = try? TrustedFolder.open(folder), let file = try? TrustedFile.open(Self.name, in: folder, requirement: .configuration),
              let bytes = try? file.readAll(limit: 1 << 20) else { return [:] }
        return (try? JSONDecoder().decode([String: Entry].self, from: Data(bytes))) ?? [:]
    }
}
