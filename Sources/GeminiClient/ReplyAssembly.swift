import Conversations

/// Builds a `ChatReply` from Gemini's responses as they come (one whole response, or a stream
/// of them): text, thought summaries, code run at Google as Markdown blocks, thought
/// signatures, and at the end the grounding, its byte offsets checked against the text.
struct ReplyAssembly {
    var reply = ChatReply(text: "")
    /// Where each part of the reply begins in `reply.text`, in UTF-8 bytes (nil for a thought
    /// part, which is not in the text). Pieces of one kind in a row are one part, as Google
    /// counts `segment.partIndex` in the reply put together.
    private var partStarts: [Int?] = []
    private var citable: [Bool] = []
    private var lastKind: Kind?
    private var byteCount = 0
    private var grounding: GroundingMetadata?
    private var urlContext: URLContextMetadata?

    private enum Kind { case text, thought, code }
    static let maxSupports = 10_000

    /// Adds one response's parts; returns the visible text and the thought text they added.
    mutating func add(_ content: Content?) -> (visible: String, thought: String) {
        var visible = "", thought = ""
        for part in content?.parts ?? [] {
            let kind: Kind
            let text: String
            if part.thought == true {
                (kind, text) = (.thought, part.text ?? "")
            } else if let code = part.executableCode {
                (kind, text) = (.code, freshLine + Self.markdown(code))
            } else if let result = part.codeExecutionResult {
                (kind, text) = (.code, freshLine + Self.markdown(result))
            } else if part.text != nil || part.thoughtSignature != nil {
                (kind, text) = (.text, part.text ?? "")
            } else {
                continue
            }
            // A code part stands alone; text and thoughts go on in the part before them. Only
            // text parts can be cited: the others have no start to place a mark by.
            if kind == .code || kind != lastKind {
                partStarts.append(kind == .thought ? nil : byteCount)
                citable.append(kind == .text)
            }
            lastKind = kind
            if kind == .thought {
                thought += text
                reply.thoughts += text
                // A thought's signature goes back on an empty part; its summary does not.
                if part.thoughtSignature != nil { reply.notePart(text: "", thoughtSignature: part.thoughtSignature) }
                continue
            }
            visible += text
            reply.text += text
            byteCount += text.utf8.count
            reply.notePart(text: text, thoughtSignature: part.thoughtSignature)
        }
        return (visible, thought)
    }

    /// A block starts on a line of its own.
    private var freshLine: String { reply.text.isEmpty || reply.text.hasSuffix("\n") ? "" : "\n" }

    /// Keeps a candidate's grounding and URL context metadata (the latest sent wins).
    mutating func note(_ candidate: Candidate?) {
        if let metadata = candidate?.groundingMetadata { grounding = metadata }
        if let metadata = candidate?.urlContextMetadata { urlContext = metadata }
    }

    /// The reply with its grounding: each support placed by its part and byte offsets, and
    /// left out (counted in `droppedSupports`) when they do not fit the text.
    func finish() -> ChatReply {
        var reply = self.reply
        reply.urlRetrievals = (urlContext?.urlMetadata ?? []).compactMap { entry in
            entry.retrievedUrl.map { URLRetrieval(url: $0, status: entry.urlRetrievalStatus ?? "URL_RETRIEVAL_STATUS_UNSPECIFIED") }
        }
        guard let grounding else { return reply }
        let sources = (grounding.groundingChunks ?? []).map {
            Grounding.Source(title: $0.web?.title, domain: $0.web?.domain, uri: $0.web?.uri ?? "")
        }
        let text = Array(reply.text.utf8)
        var supports: [Grounding.Support] = []
        // More supports than any answer has are not placed one by one (a hostile server's flood).
        let offered = grounding.groundingSupports ?? []
        reply.droppedSupports += max(0, offered.count - Self.maxSupports)
        for support in offered.prefix(Self.maxSupports) {
            if let placed = place(support, in: text, sourceCount: sources.count) { supports.append(placed) } else { reply.droppedSupports += 1 }
        }
        // Two supports over overlapping bytes cannot both be marked: the later one is left out.
        var kept: [Grounding.Support] = []
        for support in supports.sorted(by: { ($0.start, $0.end) < ($1.start, $1.end) }) {
            if let last = kept.last, last.start == support.start && last.end == support.end {
                kept[kept.count - 1].sources = Array(Set(last.sources + support.sources)).sorted()
            } else if let last = kept.last, support.start < last.end {
                reply.droppedSupports += 1
            } else {
                kept.append(support)
            }
        }
        reply.grounding = Grounding(queries: grounding.webSearchQueries ?? [], sources: sources, supports: kept)
        return reply
    }

    /// A support's bytes in the whole text, or nil when its part is not text (a thought, code), its offsets run
    /// out of its part or split a UTF-8 sequence, its `text` is not those bytes, or it names no
    /// known source.
    private func place(_ support: GroundingMetadata.Support, in text: [UInt8], sourceCount: Int) -> Grounding.Support? {
        guard let segment = support.segment, let endIndex = segment.endIndex else { return nil }
        let part = segment.partIndex ?? 0
        guard partStarts.indices.contains(part), citable[part], let base = partStarts[part] else { return nil }
        let partEnd = partStarts[(part + 1)...].lazy.compactMap { $0 }.first ?? text.count
        let startIndex = segment.startIndex ?? 0
        guard startIndex >= 0, startIndex <= endIndex, endIndex <= partEnd - base else { return nil }
        let (start, end) = (base + startIndex, base + endIndex)
        func boundary(_ offset: Int) -> Bool { offset == text.count || text[offset] & 0xC0 != 0x80 }
        guard boundary(start), boundary(end) else { return nil }
        if let said = segment.text, Array(said.utf8) != Array(text[start..<end]),
           said.trimmedWhitespace != String(decoding: text[start..<end], as: UTF8.self).trimmedWhitespace { return nil }
        let indices = Array(Set((support.groundingChunkIndices ?? []).filter { (0..<sourceCount).contains($0) })).sorted()
        guard !indices.isEmpty else { return nil }
        return Grounding.Support(start: start, end: end, sources: indices)
    }

    // MARK: Code run at Google, as Markdown

    static func markdown(_ code: ExecutableCode) -> String {
        fenced(code.code ?? "", info: (code.language ?? "").lowercased().replacing("language_unspecified", with: ""))
    }

    static func markdown(_ result: CodeExecutionResult) -> String {
        let block = fenced(result.output ?? "", info: "output")
        guard let outcome = result.outcome, outcome != "OUTCOME_OK" else { return block }
        return block + "*\(outcome)*\n"
    }

    /// A fenced block longer than any run of backticks inside, on lines of its own.
    static func fenced(_ body: String, info: String) -> String {
        var longest = 0, run = 0
        for character in body {
            run = character == "`" ? run + 1 : 0
            longest = max(longest, run)
        }
        let fence = String(repeating: "`", count: max(3, longest + 1))
        let info = info.filter { $0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" }
        return fence + info + "\n" + body + (body.hasSuffix("\n") || body.isEmpty ? "" : "\n") + fence + "\n"
    }
}
