import Conversations
import GemvaultTesting
import GoogleHTTP
import Testing
import VaultCore
@testable import GeminiClient

/// `streamGenerateContent` over a scripted transport, driven by the fixture files: text as it
/// arrives, usage, each finish reason, errors before and after text, and what is not Gemini.
@Suite struct StreamingTests {
    static let key = "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"
    let fixtures = Fixtures()

    /// What the caller saw through its handlers.
    final class Seen: @unchecked Sendable {
        var texts: [String] = []
        var thinking = 0
        var retries: [RetryNotice] = []
    }

    private func client(_ transport: FakeTransport, attempts: Int = 3) -> GeminiClient {
        let errors = ErrorMapper(keyOrigin: "the test", keyReplaceHint: "replace it", keyKind: .auth, model: "gemini-test", apiVersion: "v1beta")
        return GeminiClient(configuration: ClientConfiguration(endpoint: "https://gemini.test", apiVersion: "v1beta", timeout: 5, maxAttempts: attempts,
                                                               initialBackoff: 0, maxBackoff: 0),
                            apiKey: SecretBytes(utf8: Self.key), errors: errors, transport: transport)
    }

    private func stream(_ transport: FakeTransport, attempts: Int = 3, _ seen: Seen = Seen()) throws -> ChatReply {
        let handlers = StreamHandlers(onText: { seen.texts.append($0) }, onRetry: { seen.retries.append($0) }, onThinking: { seen.thinking += 1 })
        let request = ChatRequest(messages: [ChatMessage(role: .user, parts: [.text("What is the capital of Wyoming?")])])
        return try client(transport, attempts: attempts).stream(request, model: "gemini-test", handlers: handlers)
    }

    private func sse(_ name: String, pieceSize: Int = 1 << 20) throws -> FakeTransport.Reply {
        .stream(200, try fixtures.text(name), pieceSize: pieceSize)
    }

    /// The reply is the same however the network cuts the bytes (inside `data:`, a CRLF, a UTF-8 character).
    @Test(arguments: [1, 3, 7, 64, 1 << 20])
    func textArrivesInOrderWithUsageAndTheModelVersion(pieceSize: Int) throws {
        let transport = FakeTransport([try sse("streaming-success-text.sse", pieceSize: pieceSize)])
        let seen = Seen()
        let reply = try stream(transport, seen)
        #expect(seen.texts == ["Cheyenne", " is the capital", " of Wyoming — ünïcode ✓.\n"])
        #expect(reply.text == seen.texts.joined())
        #expect(reply.finish == .complete && reply.finishName == "STOP" && !reply.interrupted && reply.isKept)
        #expect(reply.usage == TokenUsage(inputTokens: 9, outputTokens: 12, totalTokens: 21))
        #expect(reply.modelVersion == "gemini-test-001")
    }

    @Test func theRequestGoesToTheStreamingMethodWithTheKeyOnlyInItsHeader() throws {
        let transport = FakeTransport([try sse("streaming-success-text.sse")])
        _ = try stream(transport)
        let sent = try #require(transport.sent.first)
        #expect(sent.method == "POST" && sent.url == "https://gemini.test/v1beta/models/gemini-test:streamGenerateContent?alt=sse")
        #expect(sent.secretHeader == "x-goog-api-key: " + Self.key)
        #expect(!sent.url.contains(Self.key) && !sent.headers.joined().contains(Self.key))
        let body = String(decoding: try #require(sent.body), as: UTF8.self)
        #expect(body.contains(#""text":"What is the capital of Wyoming?""#) && body.contains(#""role":"user""#))
    }

    @Test func thoughtsAreNeverShownButSaidToBeHappening() throws {
        let seen = Seen()
        let reply = try stream(FakeTransport([try sse("streaming-success-thought-summary.sse")]), seen)
        #expect(reply.text == "Rayleigh scattering." && seen.texts == ["Rayleigh scattering."])
        #expect(seen.thinking == 1 && reply.usage?.thinkingTokens == 36)
    }

    /// A finish reason other than STOP is thrown as `CutReply` with what came, typed.
    @Test(arguments: [
        ("streaming-failure-max-tokens.sse", FinishReason.maxTokens, "MAX_TOKENS", "A long answer that stops here", true),
        ("streaming-failure-safety.sse", FinishReason.safety, "SAFETY", "Here is how", false),
        ("streaming-failure-prompt-blocked.sse", FinishReason.blocked("SAFETY"), "blocked:SAFETY", "", false),
        ("streaming-failure-unknown-finish-reason.sse", FinishReason.other("NEW_REASON_FROM_THE_FUTURE"), "NEW_REASON_FROM_THE_FUTURE", "Some text", false),
    ])
    func aReplyThatEndedEarlyIsCutWithWhatCame(fixture: String, finish: FinishReason, reason: String, text: String, kept: Bool) throws {
        let transport = FakeTransport([try sse(fixture)])
        let cut = expectError(CutReply.self, { try stream(transport) })
        #expect(cut?.reply.finish == finish && cut?.reply.text == text && cut?.reply.isKept == kept)
        #expect(cut?.failure.reason == reason && cut?.failure.kind == .refused)
        #expect(transport.sent.count == 1)
    }

    /// Each signature stays on the part it came with; unsigned pieces are joined, never into a
    /// signed part; a thought's signature is kept on an empty part, its summary left out.
    @Test(arguments: [1, 5, 1 << 20])
    func thoughtSignaturesAreKeptWithTheirParts(pieceSize: Int) throws {
        let reply = try stream(FakeTransport([try sse("streaming-success-signed.sse", pieceSize: pieceSize)]))
        #expect(reply.text == "Signed plain, 末尾。")
        let expected = [ReplyPart(text: "", thoughtSignature: "dGhvdWdodA=="), ReplyPart(text: "Signed ", thoughtSignature: "c2lnbmVkK/8="),
                        ReplyPart(text: "plain, 末尾。"), ReplyPart(text: "", thoughtSignature: "ZW5k/w==")]
        #expect(reply.signedParts == expected)
        // Sent back on the next turn exactly so.
        var conversation = Conversation(model: "gemini-test", systemPrompt: nil, generation: GenerationOptions())
        conversation.record(user: "q", reply: reply)
        let next = GenerateContentRequest(conversation.request(for: "again"))
        let model = try #require(next.contents.dropFirst().first?.parts)
        #expect(model.map(\.text) == expected.map(\.text) && model.map(\.thoughtSignature) == expected.map(\.thoughtSignature))
        #expect(model.allSatisfy { $0.thought == nil })
    }

    @Test func aReplyWithoutSignaturesGoesBackAsOnePlainPart() throws {
        let reply = try stream(FakeTransport([try sse("streaming-success-text.sse")]))
        #expect(reply.signedParts == nil)
        var conversation = Conversation(model: "gemini-test", systemPrompt: nil, generation: GenerationOptions())
        conversation.record(user: "q", reply: reply)
        let next = GenerateContentRequest(conversation.request(for: "again"))
        #expect(next.contents[1].parts == [Part(text: reply.text)])
    }

    @Test func unknownFieldsAndEnumValuesDoNotFailTheDecode() throws {
        let reply = try stream(FakeTransport([try sse("streaming-success-unknown-enums.sse")]))
        #expect(reply.text == "Fine." && reply.finish == .complete)
    }

    /// Google's bare JSON error after some text: the text reached the caller, so even a 503
    /// is not retried; the error is Google's, a network failure.
    @Test func anErrorAfterTextEndsTheReplyWithoutARetry() throws {
        let transport = FakeTransport([try sse("streaming-failure-error-mid-stream.txt"), try sse("streaming-success-text.sse")])
        let seen = Seen()
        let error = expectError(GeminiError.self, { try stream(transport, seen) })
        #expect(error?.status == 503 && error?.reason == "UNAVAILABLE" && error?.category == .network)
        #expect(seen.texts == ["Part one, ", "part two"] && seen.retries.isEmpty && transport.sent.count == 1)
    }

    /// An error event before any text is retried like an HTTP 503, and the retry is told.
    @Test func anErrorEventBeforeAnyTextIsRetried() throws {
        let transport = FakeTransport([try sse("streaming-failure-error-event.sse"), try sse("streaming-success-text.sse")])
        let seen = Seen()
        let reply = try stream(transport, seen)
        #expect(reply.finish == .complete && transport.sent.count == 2)
        #expect(seen.retries.count == 1 && seen.retries.first?.reason.hasPrefix("503 UNAVAILABLE: The model is overloaded") == true)
    }

    @Test func retriesAreBoundedByTheAttempts() throws {
        let transport = FakeTransport(answering: { _ in .stream(200, (try? Fixtures().text("streaming-failure-error-event.sse")) ?? "", pieceSize: 1 << 20) })
        let error = expectError(GeminiError.self, { try stream(transport, attempts: 2) })
        #expect(error?.status == 503 && error?.category == .network && transport.sent.count == 2)
    }

    /// A 429 with RetryInfo is retried; a key Google calls invalid is not, and says so.
    @Test func anHTTPErrorIsTypedByItsReason() throws {
        let limited = FakeTransport([.json(429, try fixtures.text("error-429-retry-info.json")), try sse("streaming-success-text.sse")])
        #expect(try stream(limited).finish == .complete && limited.sent.count == 2)

        let invalid = FakeTransport(answering: { _ in .json(400, (try? Fixtures().text("error-400-api-key-invalid.json")) ?? "") })
        let error = expectError(GeminiError.self, { try stream(invalid) })
        #expect(error?.reason == "API_KEY_INVALID" && error?.status == 400 && error?.category == .refused && invalid.sent.count == 1)
        #expect(error?.message.contains(Self.key) == false)
    }

    /// A body that is no event stream (a proxy's HTML page with status 200) is an error, not an empty reply.
    @Test func aBodyThatIsNotAnEventStreamIsRefused() throws {
        let transport = FakeTransport([try sse("streaming-failure-not-sse.txt")])
        let error = expectError(GeminiError.self, { try stream(transport, attempts: 1) })
        #expect(error?.reason == "bad-stream" && error?.category == .network)
    }

    /// A line that is no SSE field among the events: the stream is not Gemini's, even though
    /// every event decoded and the last one said STOP.
    @Test func aStrayLineAmongTheEventsFailsTheReply() throws {
        let seen = Seen()
        let error = expectError(GeminiError.self, { try stream(FakeTransport([try sse("streaming-failure-stray-line.txt")]), seen) })
        #expect(error?.reason == "bad-stream" && seen.texts == ["Half an answer", " and the rest"])
    }

    @Test func aStreamCutInsideAnEventIsNotTakenForAReply() throws {
        let whole = try fixtures.text("streaming-success-text.sse")
        let cut = String(whole.prefix(whole.count - 40))
        let error = expectError(GeminiError.self, { try stream(FakeTransport([.stream(200, cut, pieceSize: 16)]), attempts: 1) })
        #expect(error?.reason == "cut-stream")
    }
}
