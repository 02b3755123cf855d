import SystemIO

/// A line of a saved conversation that holds the text searched for.
public struct SearchMatch: Sendable, Equatable {
    public enum Place: String, Sendable, Equatable {
        case title, user, model, attachment
    }

    /// 1 for the first exchange; 0 for the title.
    public let turn: Int
    public let place: Place
    /// The line as saved (trimmed, and shortened when long); not yet safe for a terminal.
    public let line: String
}

/// A conversation with its matching lines.
public struct SearchResult: Sendable, Equatable {
    public let summary: ConversationSummary
    public let matches: [SearchMatch]
}

extension HistoryStore {
    /// Every conversation holding `query`, ignoring case, in its title, prompts, replies or
    /// attachment names; decrypted in memory only. The least recently written comes first;
    /// `unreadable` hears of each file that cannot be read, and the others are still searched.
    public func search(_ query: String, with keys: HistoryKeys, unreadable: (String, Failure) -> Void) throws(Failure) -> [SearchResult] {
        let needle = query.lowercased()
        var results: [SearchResult] = []
        for id in try ids() {
            let transcript: Transcript
            do { transcript = try load(id, with: keys) } catch {
                unreadable(id, error)
                continue
            }
            var matches: [SearchMatch] = []
            func look(_ text: String, turn: Int, place: SearchMatch.Place) {
                for line in text.split(whereSeparator: \.isNewline) where line.lowercased().contains(needle) {
                    let trimmed = String(line).trimmedWhitespace
                    matches.append(SearchMatch(turn: turn, place: place, line: trimmed.count > 200 ? String(trimmed.prefix(200)) + "…" : trimmed))
                }
            }
            look(transcript.meta?.title ?? "", turn: 0, place: .title)
            for (index, turn) in transcript.turns.enumerated() {
                look(turn.user, turn: index + 1, place: .user)
                for attachment in turn.attachments ?? [] { look(attachment.name, turn: index + 1, place: .attachment) }
                look(turn.model, turn: index + 1, place: .model)
            }
            if !matches.isEmpty { results.append(SearchResult(summary: ConversationSummary(transcript), matches: matches)) }
        }
        return results
    }
}
