import GeminiClient

/// The turns of one chat and the options they are sent with.
///
/// Invariant: `turns` changes only when a model turn completes, or is stopped with partial
/// text (then the partial text is kept and marked interrupted). A failed turn leaves it as it was.
public struct Conversation: Sendable {
    public struct Turn: Sendable, Equatable {
        public let user: String
        public let model: String
        public let interrupted: Bool

        public init(user: String, model: String, interrupted: Bool) {
            self.user = user
            self.model = model
            self.interrupted = interrupted
        }
    }

    public private(set) var turns: [Turn] = []
    public var model: String
    public var systemPrompt: String?
    public var generation: GenerationConfig
    /// usageMetadata of the last completed reply.
    public var lastUsage: UsageMetadata?
    public private(set) var sessionTokens = 0

    public init(model: String, systemPrompt: String?, generation: GenerationConfig) {
        self.model = model
        self.systemPrompt = systemPrompt
        self.generation = generation
    }

    /// The request for a new user message: every earlier turn, then the message.
    public func request(for message: String) -> GenerateContentRequest {
        var contents: [Content] = []
        for turn in turns {
            contents.append(Content(role: "user", text: turn.user))
            contents.append(Content(role: "model", text: turn.model))
        }
        contents.append(Content(role: "user", text: message))
        let system = systemPrompt.flatMap { $0.isEmpty ? nil : Content(role: "user", text: $0) }
        let config = generation == GenerationConfig() ? nil : generation
        return GenerateContentRequest(contents: contents, systemInstruction: system, generationConfig: config)
    }

    /// Records a finished or stopped reply and returns the turn kept; a stop before any text
    /// keeps nothing.
    @discardableResult
    public mutating func record(user: String, result: TurnResult) -> Turn? {
        if let usage = result.usage {
            lastUsage = usage
            sessionTokens += usage.totalTokenCount ?? 0
        }
        guard !(result.interrupted && result.text.isEmpty) else { return nil }
        let turn = Turn(user: user, model: result.text, interrupted: result.interrupted)
        turns.append(turn)
        return turn
    }

    /// The turns of a saved conversation, to go on with it.
    public mutating func restore(_ saved: [SavedTurn]) {
        turns = saved.map { Turn(user: $0.user, model: $0.model, interrupted: $0.interrupted) }
    }

    /// Removes the last exchange and returns its user message.
    @discardableResult
    public mutating func undo() -> String? { turns.popLast()?.user }

    public mutating func clear() {
        turns.removeAll()
        lastUsage = nil
    }

    /// The conversation as Markdown, for /save.
    public func markdown() -> String {
        var text = "# gemvault chat (\(model))\n\n"
        if let systemPrompt, !systemPrompt.isEmpty { text += "_System: \(systemPrompt)_\n\n" }
        for turn in turns {
            text += "## You\n\n\(turn.user)\n\n## Gemini\n\n\(turn.model)\(turn.interrupted ? "\n\n_[interrupted]_" : "")\n\n"
        }
        return text
    }
}
