/// When to colour output.
public enum ColorMode: String, Sendable, CaseIterable {
    case auto, always, never
}

/// ANSI styling that is switched off for non-terminals, `NO_COLOR` and `color=never`.
public struct Style: Sendable {
    public let enabled: Bool

    public init(enabled: Bool) { self.enabled = enabled }

    /// Decides for a stream: `always` wins, then `NO_COLOR`, then whether the stream is a terminal.
    public static func decide(mode: ColorMode, environment: [String: String], isTerminal: Bool) -> Style {
        switch mode {
        case .always: return Style(enabled: true)
        case .never: return Style(enabled: false)
        case .auto:
            let noColor = environment["NO_COLOR"].map { !$0.isEmpty } ?? false
            let dumb = environment["TERM"] == "dumb"
            return Style(enabled: isTerminal && !noColor && !dumb)
        }
    }

    private func wrap(_ code: String, _ text: String) -> String { enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text }

    public func bold(_ text: String) -> String { wrap("1", text) }
    public func dim(_ text: String) -> String { wrap("2", text) }
    public func yellow(_ text: String) -> String { wrap("33", text) }
    public func blue(_ text: String) -> String { wrap("34", text) }
    public func gray(_ text: String) -> String { wrap("90", text) }
    /// A found match: reverse video, seen in any colour scheme.
    public func highlight(_ text: String) -> String { wrap("7", text) }

    /// `text` with every occurrence of `query` (ignoring ASCII case) highlighted.
    public func highlighting(_ query: String, in text: String) -> String {
        guard enabled, !query.isEmpty else { return text }
        let needle = query.map { $0.lowercased() }
        let characters = Array(text)
        let lowered = characters.map { $0.lowercased() }
        var result = ""
        var index = 0
        while index < characters.count {
            if index + needle.count <= characters.count, Array(lowered[index..<index + needle.count]) == needle {
                result += highlight(String(characters[index..<index + needle.count]))
                index += needle.count
            } else {
                result.append(characters[index])
                index += 1
            }
        }
        return result
    }
}
