/// What a provider knows of one of its models without asking it (its catalog): stage,
/// thinking levels, and where a retired id's requests go. The provider's model list stays the
/// word on what a key can use.
public struct ModelFacts: Sendable, Equatable {
    public enum Stage: String, Sendable {
        case stable = "GA", preview, released, retired, alias
    }

    public let stage: Stage
    /// The thinking levels the model takes, lowest first; empty when it takes a budget instead.
    public let levels: [String]
    public let defaultLevel: String?
    /// A retired id or an alias: the model that serves its requests, and since when.
    public let servedBy: String?
    public let since: String?

    public init(_ stage: Stage, levels: [String], default defaultLevel: String? = nil, servedBy: String? = nil, since: String? = nil) {
        self.stage = stage
        self.levels = levels
        self.defaultLevel = defaultLevel
        self.servedBy = servedBy
        self.since = since
    }

    /// A thinking level the model refuses, and the one to send instead: `minimal` → the lowest
    /// it takes, `xhigh` → the highest; nil when the level is fine or the model takes a budget.
    public func replacement(for level: String) -> String? {
        guard !levels.isEmpty, !levels.contains(level) else { return nil }
        return level == "xhigh" ? levels.last : levels.first
    }
}
