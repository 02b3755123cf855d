/// The turns of one chat and the options they are sent with.
///
/// Invariant: `turns` changes only when a model turn completes, is cut at the token limit, or is
/// stopped with partial text (then the partial text is kept and marked interrupted): the rule of
/// `ChatReply.isKept`. A failed, filtered or blocked turn leaves it as it was.
public struct Conversation: Sendable {
    public struct Turn: Sendable, Equatable {
        public let user: String
        /// The reply's text (the role's name, as in Gemini's `contents`).
        public let model: String
        public let interrupted: Bool
        /// The model that answered; nil for turns saved before it was recorded.
        public let modelName: String?
        /// Files sent with the user's message, sent again with every later request.
        public let attachments: [Attachment]
        /// The reply as the parts that came with thought signatures, sent back as they came;
        /// nil when none came (the text goes back as one part).
        public let replyParts: [ReplyPart]?
        /// Where a grounded reply's claims come from, and the pages URL context read.
        public let grounding: Grounding?
        public let urlRetrievals: [URLRetrieval]

        public init(user: String, model: String, interrupted: Bool, modelName: String? = nil, attachments: [Attachment] = [], replyParts: [ReplyPart]? = nil,
                    grounding: Grounding? = nil, urlRetrievals: [URLRetrieval] = []) {
            self.user = user
            self.model = model
            self.interrupted = interrupted
            self.modelName = modelName
            self.attachments = attachments
            self.replyParts = replyParts.flatMap { $0.map(\.text).joined() == model ? $0 : nil }
            self.grounding = grounding
            self.urlRetrievals = urlRetrievals
        }

        /// The reply as it goes back to the model.
        var replyMessage: ChatMessage {
            ChatMessage(role: .model, parts: replyParts?.map(MessagePart.reply) ?? [.text(model)])
        }
    }

    public private(set) var turns: [Turn] = []
    public var model: String
    public var systemPrompt: String?
    public var generation: GenerationOptions
    /// The usage of the last completed reply.
    public var lastUsage: TokenUsage?
    public private(set) var sessionTokens = 0
    /// Whether replies go back as the signed parts they came in (a provider that takes
    /// signatures); else as their text alone.
    public var sendsSignatures = true

    public init(model: String, systemPrompt: String?, generation: GenerationOptions) {
        self.model = model
        self.systemPrompt = systemPrompt
        self.generation = generation
    }

    /// The request for a new user message: every earlier turn, then the message and its files.
    public func request(for message: String, attachments: [Attachment] = []) -> ChatRequest {
        var messages: [ChatMessage] = []
        for turn in turns {
            messages.append(Self.userMessage(turn.user, turn.attachments))
            messages.append(sendsSignatures ? turn.replyMessage : ChatMessage(role: .model, parts: [.text(turn.model)]))
        }
        messages.append(Self.userMessage(message, attachments))
        let system = systemPrompt.flatMap { $0.isEmpty ? nil : $0 }
        return ChatRequest(messages: messages, system: system, options: generation)
    }

    /// The message first, then its files; a message of files alone has no empty text part.
    static func userMessage(_ message: String, _ attachments: [Attachment]) -> ChatMessage {
        let parts = (message.isEmpty && !attachments.isEmpty ? [] : [MessagePart.text(message)]) + attachments.map(\.part)
        return ChatMessage(role: .user, parts: parts)
    }

    /// Records a reply by the one rule for cut-off replies (`ChatReply.isKept`) and returns the
    /// turn kept. The usage of a reply that was kept or stopped by Ctrl-C counts.
    @discardableResult
    public mutating func record(user: String, attachments: [Attachment] = [], reply: ChatReply) -> Turn? {
        if let usage = reply.usage, reply.isKept || reply.interrupted {
            lastUsage = usage
            sessionTokens += usage.totalTokens ?? 0
        }
        guard reply.isKept else { return nil }
        let turn = Turn(user: user, model: reply.text, interrupted: reply.interrupted, modelName: model, attachments: attachments,
                        replyParts: reply.signedParts, grounding: reply.grounding, urlRetrievals: reply.urlRetrievals)
        turns.append(turn)
        return turn
    }

    /// The turns of a saved conversation, to go on with it.
    public mutating func restore(_ saved: [SavedTurn]) {
        turns = saved.map {
            Turn(user: $0.user, model: $0.model, interrupted: $0.interrupted, modelName: $0.modelName,
                 attachments: ($0.attachments ?? []).map(\.attachment), replyParts: $0.parts, grounding: $0.grounding, urlRetrievals: $0.urlContext ?? [])
        }
    }

    /// Removes the last exchange and returns it.
    @discardableResult
    public mutating func undo() -> Turn? { turns.popLast() }

    public mutating func clear() {
        turns.removeAll()
        lastUsage = nil
    }

    /// The conversation as Markdown, for /save; `provider` heads the replies.
    public func markdown(provider: String) -> String {
        var text = "# gemvault chat (\(model))\n\n"
        if let systemPrompt, !systemPrompt.isEmpty { text += "_System: \(systemPrompt)_\n\n" }
        for turn in turns {
            let attached = turn.attachments.map { "_Attached: \($0.label)_\n\n" }.joined()
            text += "## You\n\n\(attached)\(turn.user)\n\n## \(provider)\n\n\(turn.model)\(turn.interrupted ? "\n\n_[interrupted]_" : "")\n\n"
        }
        return text
    }
}
