import Conversations
import Foundation
import Testing
@testable import GeminiClient

/// A reply put together from Gemini's parts: grounding offsets checked against the text, the
/// parts counted as Google counts them, code run at Google as Markdown blocks.
@Suite struct ReplyAssemblyTests {
    private func candidate(_ json: String) throws -> Candidate {
        try JSONDecoder().decode(Candidate.self, from: Data(json.utf8))
    }

    private func grounded(_ pieces: [String], supports: String, thought: Bool = false) throws -> ChatReply {
        var assembly = ReplyAssembly()
        if thought { _ = assembly.add(try candidate(#"{"content":{"parts":[{"text":"**Plan**","thought":true}]}}"#).content) }
        for piece in pieces {
            let encoded = String(decoding: try JSONEncoder().encode(piece), as: UTF8.self)
            _ = assembly.add(try candidate(#"{"content":{"parts":[{"text":\#(encoded)}]}}"#).content)
        }
        assembly.note(try candidate(#"""
            {"groundingMetadata":{"webSearchQueries":["q"],
             "groundingChunks":[{"web":{"uri":"https://a.example","title":"A","domain":"a.example"}},{"web":{"uri":"https://b.example"}}],
             "groundingSupports":\#(supports)}}
            """#))
        return assembly.finish()
    }

    @Test func supportsArePlacedByBytesAcrossStreamedPiecesOfOnePart() throws {
        // "東京" is 6 bytes: the support ends after the full stop at byte 10.
        let reply = try grounded(["東京", "です。", " Next."], supports: #"[{"segment":{"startIndex":0,"endIndex":15,"text":"東京です。"},"groundingChunkIndices":[0]},{"segment":{"startIndex":16,"endIndex":21},"groundingChunkIndices":[1,0]}]"#)
        #expect(reply.droppedSupports == 0)
        #expect(reply.grounding?.supports == [Grounding.Support(start: 0, end: 15, sources: [0]), Grounding.Support(start: 16, end: 21, sources: [0, 1])])
        #expect(reply.grounding?.cited(reply.text) == "東京です。[1] Next.[1][2]")
    }

    @Test(arguments: [
        #"[{"segment":{"startIndex":0,"endIndex":99},"groundingChunkIndices":[0]}]"#,  // past the end
        #"[{"segment":{"startIndex":0,"endIndex":4},"groundingChunkIndices":[0]}]"#,   // inside 京
        #"[{"segment":{"startIndex":3,"endIndex":0},"groundingChunkIndices":[0]}]"#,   // backwards
        #"[{"segment":{"startIndex":-3,"endIndex":6},"groundingChunkIndices":[0]}]"#,  // negative
        #"[{"segment":{"startIndex":0,"endIndex":6},"groundingChunkIndices":[7]}]"#,   // no such source
        #"[{"segment":{"startIndex":0,"endIndex":6,"text":"大阪"},"groundingChunkIndices":[0]}]"#,  // other text
        #"[{"segment":{"partIndex":3,"endIndex":6},"groundingChunkIndices":[0]}]"#,   // no such part
        #"[{"groundingChunkIndices":[0]}]"#,                                          // no segment
    ])
    func aSupportThatDoesNotFitIsLeftOutNeverShifted(supports: String) throws {
        let reply = try grounded(["東京です。"], supports: supports)
        #expect(reply.droppedSupports == 1 && reply.grounding?.supports == [])
        #expect(reply.grounding?.cited(reply.text) == "東京です。")
    }

    @Test func overlappingSupportsKeepTheFirstAndSameRangesMergeTheirSources() throws {
        let reply = try grounded(["abcdefghij"], supports: #"[{"segment":{"startIndex":0,"endIndex":5},"groundingChunkIndices":[0]},{"segment":{"startIndex":3,"endIndex":8},"groundingChunkIndices":[1]},{"segment":{"startIndex":0,"endIndex":5},"groundingChunkIndices":[1]}]"#)
        #expect(reply.droppedSupports == 1)
        #expect(reply.grounding?.cited(reply.text) == "abcde[1][2]fghij")
    }

    @Test func aSegmentEndingInSpacesGetsItsMarkAfterItsLastWord() throws {
        let reply = try grounded(["Tall. \nBuilt."], supports: #"[{"segment":{"startIndex":0,"endIndex":7},"groundingChunkIndices":[0]}]"#)
        #expect(reply.grounding?.cited(reply.text) == "Tall.[1] \nBuilt.")
    }

    @Test func aThoughtPartComesFirstSoTheAnswerIsPartOne() throws {
        let reply = try grounded(["Yes."], supports: #"[{"segment":{"partIndex":1,"endIndex":4},"groundingChunkIndices":[0]},{"segment":{"partIndex":0,"endIndex":4},"groundingChunkIndices":[0]}]"#, thought: true)
        #expect(reply.text == "Yes." && reply.thoughts == "**Plan**")
        #expect(reply.grounding?.cited(reply.text) == "Yes.[1]" && reply.droppedSupports == 1)
    }

    @Test func codeRunAtGoogleIsFencedLongerThanAnyBacktickRunInside() throws {
        var assembly = ReplyAssembly()
        _ = assembly.add(try candidate(#"{"content":{"parts":[{"text":"Run:"},{"executableCode":{"language":"PYTHON","code":"print('```')"}},{"codeExecutionResult":{"outcome":"OUTCOME_DEADLINE_EXCEEDED","output":""}}]}}"#).content)
        #expect(assembly.finish().text == "Run:\n````python\nprint('```')\n````\n```output\n```\n*OUTCOME_DEADLINE_EXCEEDED*\n")
    }

    @Test func urlContextStatusesAreKept() throws {
        var assembly = ReplyAssembly()
        assembly.note(try candidate(#"{"urlContextMetadata":{"urlMetadata":[{"retrievedUrl":"https://x.example","urlRetrievalStatus":"URL_RETRIEVAL_STATUS_UNSAFE"},{"urlRetrievalStatus":"URL_RETRIEVAL_STATUS_ERROR"}]}}"#))
        #expect(assembly.finish().urlRetrievals == [URLRetrieval(url: "https://x.example", status: "URL_RETRIEVAL_STATUS_UNSAFE")])
    }
}

extension ReplyAssemblyTests {
    @Test func aSupportNamingACodePartIsLeftOutAndTheTextAfterItIsItsOwnPart() throws {
        var assembly = ReplyAssembly()
        _ = assembly.add(try JSONDecoder().decode(Candidate.self, from: Data(#"{"content":{"parts":[{"text":"Run:"},{"executableCode":{"language":"PYTHON","code":"x"}},{"text":"Done."}]}}"#.utf8)).content)
        assembly.note(try JSONDecoder().decode(Candidate.self, from: Data(#"""
            {"groundingMetadata":{"groundingChunks":[{"web":{"uri":"https://a.example"}}],
             "groundingSupports":[{"segment":{"partIndex":1,"endIndex":3},"groundingChunkIndices":[0]},
                                  {"segment":{"partIndex":0,"endIndex":9},"groundingChunkIndices":[0]},
                                  {"segment":{"partIndex":2,"endIndex":5},"groundingChunkIndices":[0]}]}}
            """#.utf8)))
        let reply = assembly.finish()
        #expect(reply.droppedSupports == 2)
        #expect(reply.grounding?.cited(reply.text) == "Run:\n```python\nx\n```\nDone.[1]")
    }

    @Test func citedIgnoresSupportsOutsideTheText() {
        let grounding = Grounding(sources: [Grounding.Source(title: nil, domain: nil, uri: "")],
                                  supports: [Grounding.Support(start: -5, end: -1, sources: [0]), Grounding.Support(start: 0, end: 99, sources: [0]),
                                             Grounding.Support(start: 0, end: 2, sources: [0])])
        #expect(grounding.cited("ab") == "ab[1]")
    }
}
