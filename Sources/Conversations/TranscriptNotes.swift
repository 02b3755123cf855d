import TerminalIO

extension Transcript {
    /// Each turn with what changed before it (the model, the system instruction, the files
    /// sent with it), as notes shown above it, their escapes neutralised.
    public var annotatedTurns: [(turn: SavedTurn, notes: [String])] {
        var model = meta?.model
        return turns.map { turn in
            defer { model = turn.modelName ?? model }
            return (turn, Self.notes(turn, previousModel: model))
        }
    }

    static func notes(_ turn: SavedTurn, previousModel: String?) -> [String] {
        var notes: [String] = []
        if let name = turn.modelName, name != previousModel { notes.append("model: \(name)") }
        if let system = turn.system { notes.append(system.isEmpty ? "system instruction removed" : "system instruction: \(system)") }
        for attachment in turn.attachments ?? [] { notes.append("attached: " + attachment.attachment.label) }
        return notes.map(EscapeNeutralizer.neutralize)
    }
}

extension SavedTurn {
    /// The saved reply as a `ChatReply`, for what a grounded answer shows (its marks and sources).
    public var reply: ChatReply {
        var reply = ChatReply(text: model)
        reply.grounding = grounding
        reply.urlRetrievals = urlContext ?? []
        return reply
    }
}
