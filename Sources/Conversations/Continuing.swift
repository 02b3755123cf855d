extension HistoryStore {
    /// `--continue`'s conversation: the chat written to most recently (an `ask` is passed over).
    public func latestChat(with keys: HistoryKeys) throws(Failure) -> String? {
        for id in try ids().reversed() {
            // A damaged file is reported when it is the one loaded, not skipped silently.
            guard (try? loadIntact(id, with: keys).meta?.conversationKind) == .ask else { return id }
        }
        return nil
    }
}

extension Conversation {
    /// Goes on with a saved conversation as it was: its turns, and its model and system
    /// instruction unless the command gave them again (`modelGiven`, `systemGiven`); a saved
    /// model the provider does not take (`isModelName`) gives way to the one in effect.
    public mutating func goOn(with transcript: Transcript, modelGiven: Bool, systemGiven: Bool, isModelName: (String) -> Bool) {
        restore(transcript.turns)
        if !modelGiven, let model = transcript.currentModel, isModelName(model) { self.model = model }
        if !systemGiven, transcript.currentSystem != nil || transcript.meta?.system != nil { systemPrompt = transcript.systemInEffect }
    }
}
