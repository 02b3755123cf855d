import Conversations
import Rendering
import TerminalIO

/// What a grounded answer shows beyond its text: numbered citation marks in it, then its
/// sources, its Google searches (Search Suggestions, each linking to its results page) and the
/// pages URL context could not read. Links are written here, never taken from the model's
/// text: OSC 8 hyperlinks where the terminal shows them, plain URLs elsewhere.
public enum GroundedAnswer {
    /// The text to show: with citation marks when the reply was grounded.
    public static func text(_ reply: ChatReply) -> String {
        reply.grounding?.cited(reply.text) ?? reply.text
    }

    /// Why some marks are missing, when Google's offsets for them did not fit the answer.
    public static func warning(_ reply: ChatReply) -> String? {
        guard reply.droppedSupports > 0 else { return nil }
        return "\(reply.droppedSupports) citation\(reply.droppedSupports == 1 ? " was" : "s were") left out: Google's offsets for \(reply.droppedSupports == 1 ? "it" : "them") did not fit the answer (out of range, overlapping another, inside a UTF-8 character, or naming no source)"
    }

    /// The lines under the answer, each ending in a newline; empty when there is nothing to add.
    /// On a terminal `columns` wide, titles and queries wrap between words under their number;
    /// a plain URL has a line of its own.
    public static func footer(_ reply: ChatReply, style: Style, hyperlinks: Bool, columns: Int? = nil) -> String {
        let grounding = reply.grounding ?? Grounding()
        let lines = sourceLines(grounding.sources, style: style, hyperlinks: hyperlinks, columns: columns)
            + searchLines(grounding.queries, style: style, hyperlinks: hyperlinks, columns: columns)
            + unreadLines(reply.urlRetrievals.filter { !$0.succeeded }, style: style)
        return lines.isEmpty ? "" : "\n" + lines.joined(separator: "\n") + "\n"
    }

    /// The sources, numbered as the marks are: each title wrapped under its number, its domain
    /// after it (or below, when the line is full), and its link.
    private static func sourceLines(_ sources: [Grounding.Source], style: Style, hyperlinks: Bool, columns: Int?) -> [String] {
        guard !sources.isEmpty else { return [] }
        var lines = [style.bold("Sources")]
        for (index, source) in sources.enumerated() {
            let title = clean(source.title ?? source.domain ?? source.uri)
            let domain = source.domain.map { clean($0) }.flatMap { $0 == title ? nil : $0 }
            let link = webLink(source.uri)
            let number = " [\(index + 1)] "
            var entry = wrapped(number + title, columns: columns, indent: number.count).map { line in
                let text = String(line.dropFirst(number.count))
                return String(line.prefix(number.count)) + (hyperlinks && link != nil ? hyperlink(text, to: link!) : text)
            }
            if let domain {
                let last = DisplayWidth.of(entry.last.map { String($0.dropFirst(number.count)) } ?? "") + number.count
                if let columns, last + 3 + DisplayWidth.of(domain) > columns { entry.append(String(repeating: " ", count: number.count) + style.dim("— " + domain)) }
                else { entry[entry.count - 1] += style.dim(" — " + domain) }
            }
            lines += entry
            if !hyperlinks, let link { lines.append("     " + style.dim(link)) }
        }
        return lines
    }

    /// A Google results page, before its query.
    static let resultsPage = "https://www.google.com/search?q="

    /// The Search Suggestions, each linking to its Google results page.
    private static func searchLines(_ queries: [String], style: Style, hyperlinks: Bool, columns: Int?) -> [String] {
        guard !queries.isEmpty else { return [] }
        if hyperlinks {
            let searches = queries.map { query in (clean(query), resultsPage + queryEncoded(query)) }
            return [style.bold("Searches") + " " + searches.map { hyperlink($0.0, to: $0.1) }.joined(separator: style.dim(" · "))]
        }
        // Each query, then its results page on a line of its own, readable as typed.
        var lines = [style.bold("Searches")]
        for query in queries {
            lines += wrapped(" " + clean(query), columns: columns, indent: 1)
            lines.append("     " + style.dim(resultsPage + readableQuery(query)))
        }
        return lines
    }

    /// The pages URL context could not read, with why.
    private static func unreadLines(_ unread: [URLRetrieval], style: Style) -> [String] {
        guard !unread.isEmpty else { return [] }
        return [style.bold("Not read")] + unread.map { " " + clean($0.url) + style.dim(" (" + readableStatus($0.status) + ")") }
    }

    private static func wrapped(_ text: String, columns: Int?, indent: Int) -> [String] {
        DisplayWidth.wrapped(text, width: columns, indent: indent).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    /// A query in a results page's URL as a browser shows it: letters and digits of any script
    /// as they are, a space as `+`, anything else (`&`, `#`, `%`, controls, invisible
    /// characters) as `%XX`, so the URL stays one word that asks for the same query.
    static func readableQuery(_ query: String) -> String {
        var out = ""
        for scalar in query.unicodeScalars {
            if scalar.value > 0x7F && (scalar.properties.isAlphabetic || scalar.properties.numericType != nil) && !scalar.properties.isWhitespace {
                out.unicodeScalars.append(scalar)
            } else {
                out += queryEncoded(String(scalar))
            }
        }
        return out
    }

    /// `URL_RETRIEVAL_STATUS_PAYWALL` → `paywall`.
    static func readableStatus(_ status: String) -> String {
        let word = status.hasPrefix("URL_RETRIEVAL_STATUS_") ? String(status.dropFirst(21)) : status
        return clean(word.lowercased().replacing("_", with: " "))
    }

    /// Text from Google on one line, with nothing that could drive the terminal.
    static func clean(_ text: String) -> String {
        EscapeNeutralizer.neutralize(text.split(whereSeparator: \.isNewline).joined(separator: " "))
    }

    /// An http(s) URL safe to write inside an escape sequence or on its own: nil for anything
    /// else (another scheme, a space, a control or non-ASCII character).
    static func webLink(_ uri: String) -> String? {
        let lowered = uri.lowercased()
        guard lowered.hasPrefix("https://") || lowered.hasPrefix("http://"), uri.count <= 4096,
              uri.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else { return nil }
        return uri
    }

    static func hyperlink(_ text: String, to uri: String) -> String {
        "\u{1B}]8;;" + uri + "\u{1B}\\" + text + "\u{1B}]8;;\u{1B}\\"
    }

    /// A query for a URL: unreserved characters as they are, a space as `+`, the rest `%XX`.
    static func queryEncoded(_ query: String) -> String {
        var out = ""
        for byte in query.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(Character(Unicode.Scalar(byte)))
            case UInt8(ascii: " "):
                out.append("+")
            default:
                out += "%" + (byte < 16 ? "0" : "") + String(byte, radix: 16, uppercase: true)
            }
        }
        return out
    }
}
