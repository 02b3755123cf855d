import Conversations

/// What gemvault knows of Gemini's models as of December 2026 (gemini-2026-features.md and
/// gemini-prices-2026-12.md): stage, thinking levels, and where a retired id's requests go.
/// Prices are the price table's (Spending); the API's model list stays the word on what a key
/// can use.
public enum ModelCatalog {
    static let allLevels = ["minimal", "low", "medium", "high"]
    static let noMinimal = ["low", "medium", "high"]
    static let extraHigh = ["low", "medium", "high", "xhigh"]

    static let facts: [String: ModelFacts] = [
        "gemini-4-argon": ModelFacts(.stable, levels: noMinimal, default: "medium"),
        "gemini-4-carbon": ModelFacts(.stable, levels: noMinimal, default: "medium"),
        "gemini-4-neon": ModelFacts(.stable, levels: extraHigh, default: "high"),
        "gemini-4-hydrogen": ModelFacts(.released, levels: extraHigh, default: "high"),
        "gemini-3.8-flash": ModelFacts(.stable, levels: noMinimal, default: "medium"),
        "gemini-3.7-flash": ModelFacts(.retired, levels: noMinimal, default: "medium", servedBy: "gemini-3.8-flash", since: "2026-10-08"),
        "gemini-flash-latest": ModelFacts(.alias, levels: noMinimal, default: "medium", servedBy: "gemini-3.8-flash", since: "2026-09-11"),
        "gemini-3.6-flash": ModelFacts(.stable, levels: allLevels, default: "medium"),
        "gemini-3.5-flash": ModelFacts(.retired, levels: allLevels, default: "medium", servedBy: "gemini-3.6-flash", since: "2026-10-08"),
        "gemini-3.5-flash-lite": ModelFacts(.stable, levels: allLevels, default: "minimal"),
        "gemini-3.1-flash-lite": ModelFacts(.stable, levels: allLevels),
        "gemini-3.1-pro": ModelFacts(.preview, levels: noMinimal, default: "high"),
        "gemini-3-flash": ModelFacts(.preview, levels: allLevels, default: "high"),
        "gemini-3-pro": ModelFacts(.retired, levels: noMinimal, default: "high", servedBy: "gemini-3.1-pro-preview", since: "2026-03-09"),
        "gemini-2.5-pro": ModelFacts(.stable, levels: []),
        "gemini-2.5-flash": ModelFacts(.stable, levels: []),
        "gemini-2.5-flash-lite": ModelFacts(.stable, levels: []),
    ]

    /// The facts of `model` (a `models/` prefix and a version suffix allowed: the longest name it
    /// starts with at a `-`), or nil for a model gemvault knows nothing of.
    public static func facts(for model: String) -> ModelFacts? {
        let name = model.hasPrefix("models/") ? String(model.dropFirst(7)) : model
        return facts.keys.filter { name == $0 || name.hasPrefix($0 + "-") || name.hasPrefix($0 + "~") }.max { $0.count < $1.count }.flatMap { facts[$0] }
    }

    /// Whether `served` (a reply's modelVersion) is another model than `requested`, not the same
    /// one with a version suffix.
    public static func isRouted(requested: String, served: String) -> Bool {
        func bare(_ name: String) -> String { name.hasPrefix("models/") ? String(name.dropFirst(7)) : name }
        let (asked, ran) = (bare(requested), bare(served))
        return !(asked == ran || ran.hasPrefix(asked + "-") || asked.hasPrefix(ran + "-") || asked.hasPrefix(ran + "~"))
    }

    /// "gemini-3.7-flash is served by gemini-3.8-flash since 2026-10-08", said once when a reply
    /// names another model than the one asked for.
    public static func routingNotice(requested: String, served: String) -> String {
        if let facts = facts(for: requested), let target = facts.servedBy, !isRouted(requested: target, served: served) {
            return "\(requested) is served by \(served)\(facts.since.map { " since \($0)" } ?? ""): priced as \(served)"
        }
        return "\(requested) was answered by \(served): priced as \(served)"
    }

    /// The levels `model` takes, for a hint; nil when unknown.
    public static func levels(of model: String) -> [String]? {
        facts(for: model).map(\.levels)
    }
}
