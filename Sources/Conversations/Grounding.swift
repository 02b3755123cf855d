/// Where a grounded answer's claims come from (Google Search, URL context): the queries run,
/// the pages, and which bytes of the reply's text each page supports. Offsets are UTF-8 bytes
/// of `ChatReply.text`, checked by the provider before they get here.
public struct Grounding: Codable, Sendable, Equatable {
    public struct Source: Codable, Sendable, Equatable {
        public var title: String?
        public var domain: String?
        public var uri: String

        public init(title: String?, domain: String?, uri: String) {
            self.title = title
            self.domain = domain
            self.uri = uri
        }
    }

    /// Bytes `start..<end` of the reply's text are supported by `sources` (indices into `sources`).
    public struct Support: Codable, Sendable, Equatable {
        public var start: Int
        public var end: Int
        public var sources: [Int]

        public init(start: Int, end: Int, sources: [Int]) {
            self.start = start
            self.end = end
            self.sources = sources
        }
    }

    /// The searches the model ran (Google's Search Suggestions).
    public var queries: [String]
    public var sources: [Source]
    public var supports: [Support]

    public init(queries: [String] = [], sources: [Source] = [], supports: [Support] = []) {
        self.queries = queries
        self.sources = sources
        self.supports = supports
    }

    public var isEmpty: Bool { queries.isEmpty && sources.isEmpty && supports.isEmpty }

    /// `text` with a numbered mark (`[1]`, `[1][3]`) after each supported segment, the number
    /// being the source's place in `sources` from 1. Supports that do not fit `text` are left
    /// out (the provider checked them against the same text).
    public func cited(_ text: String) -> String {
        let bytes = Array(text.utf8)
        var marks: [Int: Set<Int>] = [:]
        for support in supports where 0 <= support.start && support.start <= support.end && support.end <= bytes.count {
            guard support.end == bytes.count || bytes[support.end] & 0xC0 != 0x80 else { continue }
            marks[support.end, default: []].formUnion(support.sources.filter { sources.indices.contains($0) })
        }
        // One pass from the front: the text up to each mark, then the mark.
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + marks.count * 4)
        var copied = 0
        for (offset, numbers) in marks.sorted(by: { $0.key < $1.key }) where !numbers.isEmpty {
            // A segment ending in spaces gets its mark after its last word, not alone after them.
            var at = offset
            while at > copied, bytes[at - 1] == 0x20 || bytes[at - 1] == 0x0A || bytes[at - 1] == 0x09 { at -= 1 }
            out += bytes[copied..<at]
            out += numbers.sorted().map { "[\($0 + 1)]" }.joined().utf8
            out += bytes[at..<offset]
            copied = offset
        }
        out += bytes[copied...]
        return String(decoding: out, as: UTF8.self)
    }
}

/// A page URL context was asked to read, and how that went (Google's `urlRetrievalStatus`).
public struct URLRetrieval: Codable, Sendable, Equatable {
    public var url: String
    public var status: String

    public init(url: String, status: String) {
        self.url = url
        self.status = status
    }

    public var succeeded: Bool { status == "URL_RETRIEVAL_STATUS_SUCCESS" }
}

/// The tools a request lets the model use at Google.
public struct ModelTools: Sendable, Equatable {
    /// Google Search grounding (`--search`).
    public var search = false
    /// Reading the pages the prompt names (`--url-context`).
    public var urlContext = false
    /// Running code at Google (`--code`).
    public var codeExecution = false

    public init(search: Bool = false, urlContext: Bool = false, codeExecution: Bool = false) {
        self.search = search
        self.urlContext = urlContext
        self.codeExecution = codeExecution
    }

    /// Whether replies can come with grounding, whose marks are placed once the reply is whole.
    public var grounds: Bool { search || urlContext }
}
