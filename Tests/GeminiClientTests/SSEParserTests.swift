import Conversations
import Foundation
import GoogleKeys
import Testing
@testable import GeminiClient
import GoogleHTTP

/// The fixture files the fake server also replays, in Google's wire format.
func fixture(_ name: String) throws -> [UInt8] {
    let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("EndToEnd/fixtures/\(name)")
    return [UInt8](try Data(contentsOf: url))
}

private func texts(_ events: [[UInt8]]) throws -> String {
    try events.map { try JSONDecoder().decode(GenerateContentResponse.self, from: Data($0)).visibleText }.joined()
}

private func parseAll(_ bytes: [UInt8], chunkSize: Int) -> (events: [[UInt8]], extra: [UInt8]) {
    var parser = SSEParser()
    var events: [[UInt8]] = []
    var index = 0
    while index < bytes.count {
        let end = min(bytes.count, index + chunkSize)
        events += Array(bytes[index..<end]).withUnsafeBytes { parser.feed($0) }
        index = end
    }
    events += parser.finish()
    return (events, parser.extra)
}

@Suite struct SSEParserTests {
    static let expected = "Bonjour, the fake server says héllo wörld 你好 🚀.\n"

    /// Gemini's usageMetadata reaches the neutral type field by field (the names `ask --json` prints).
    @Test func usageIsReadFromTheWireOnce() throws {
        let (events, _) = parseAll(try fixture("stream-thinking.sse"), chunkSize: 100_000)
        let usage = try events.compactMap { try JSONDecoder().decode(GenerateContentResponse.self, from: Data($0)).usage }.last
        #expect(usage == TokenUsage(inputTokens: 5, outputTokens: 3, thinkingTokens: 40, totalTokens: 48))
    }

    @Test(arguments: [1, 2, 3, 7, 64, 100_000])
    func crlfStreamSplitAnywhere(chunkSize: Int) throws {
        let (events, extra) = parseAll(try fixture("stream-basic.sse"), chunkSize: chunkSize)
        #expect(events.count == 3)
        #expect(try texts(events) == Self.expected)
        #expect(extra.isEmpty)
    }

    @Test func lfFramingAndAMissingFinalBlankLine() throws {
        var bytes = try fixture("stream-basic.sse").filter { $0 != 0x0D }
        bytes.removeLast(2)
        let (events, _) = parseAll(bytes, chunkSize: 5)
        #expect(try texts(events) == Self.expected)
    }

    @Test func bareErrorAfterEventsLandsInExtra() throws {
        let (events, extra) = parseAll(try fixture("stream-error-mid.txt"), chunkSize: 1)
        #expect(events.count == 1)
        let error = GoogleStatus.decode(extra)
        #expect(error?.code == 499 && error?.status == "CANCELLED")
    }

    @Test func thoughtPartsAreNotVisibleText() throws {
        let (events, _) = parseAll(try fixture("stream-thinking.sse"), chunkSize: 9)
        #expect(try texts(events) == "Forty-two.")
    }

    @Test func anEndlessLineIsCutOffAtTheLimit() {
        var parser = SSEParser(limit: 1024)
        let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 300)
        for _ in 0..<10 { _ = chunk.withUnsafeBytes { parser.feed($0) } }
        #expect(parser.overflowed)
        #expect(parser.finish().isEmpty)
    }

    @Test func commentsAndOtherFieldsAreIgnored() {
        var parser = SSEParser()
        let input = Array(": keep-alive\nevent: message\nid: 7\ndata:{\"a\":1}\n\n".utf8)
        let events = input.withUnsafeBytes { parser.feed($0) }
        #expect(events == [Array("{\"a\":1}".utf8)])
        #expect(parser.extra.isEmpty)
    }
}

@Suite struct ErrorMapperTests {
    let mapper = ErrorMapper(keyOrigin: "environment variable GEMINI_API_KEY", keyReplaceHint: "unset GEMINI_API_KEY",
                             keyKind: .auth, model: "gemini-x", apiVersion: "v1beta")

    func mapper(_ kind: GoogleKeyKind) -> ErrorMapper {
        var copy = mapper
        copy.keyKind = kind
        return copy
    }

    @Test func invalidKeyNamesTheSourceAndHidesDetails() throws {
        let body = Array(String(decoding: try fixture("error-invalid-key.json"), as: UTF8.self)
            .replacingOccurrences(of: "{KEY_PREFIX}", with: "AIzaSyLEAKED").utf8)
        let error = mapper.apiError(status: 400, body: body)
        #expect(error.category == .refused && error.reason == "API_KEY_INVALID")
        #expect(error.message.contains("environment variable GEMINI_API_KEY") && error.message.contains("wrong, revoked or deleted"))
        #expect(!error.message.contains("AIzaSyLEAKED") && error.hint == "unset GEMINI_API_KEY")
    }

    @Test(arguments: ["error-401-token-type.json", "error-401-oauth-only.json", "error-invalid-key.json"])
    func aRefusedStandardKeyGetsTheMigrationHint(file: String) throws {
        let error = mapper(.standard).apiError(status: file.hasPrefix("error-401") ? 401 : 400, body: try fixture(file))
        #expect(error.category == .refused)
        #expect(error.reason == (file.hasPrefix("error-401") ? "ACCESS_TOKEN_TYPE_UNSUPPORTED" : "API_KEY_INVALID"))
        #expect(error.message.contains("standard") && !error.message.contains("OAuth"))
        #expect(error.hint?.contains("https://aistudio.google.com/apikey") == true && error.hint?.contains("unset GEMINI_API_KEY") == true)
    }

    @Test func aRefusedAuthKeyPointsAtItsServiceAccount() throws {
        for file in ["error-401-token-type.json", "error-401-oauth-only.json"] {
            let error = mapper(.auth).apiError(status: 401, body: try fixture(file))
            #expect(error.reason == "ACCESS_TOKEN_TYPE_UNSUPPORTED" && error.message.contains("auth key from environment variable GEMINI_API_KEY"))
            #expect(error.hint?.contains("service account") == true)
        }
    }

    @Test func theOAuthMessageAloneDecidesNothingWhenAReasonIsGiven() {
        let body = Array(#"{"error":{"code":401,"message":"Expected OAuth 2 access token","status":"UNAUTHENTICATED","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"CREDENTIALS_MISSING"}]}}"#.utf8)
        #expect(mapper(.standard).apiError(status: 401, body: body).reason == "CREDENTIALS_MISSING")
    }

    @Test func restrictionsAndDisabledServiceSayWhatToDo() throws {
        let blocked = mapper.apiError(status: 403, body: try fixture("error-403-service-blocked.json"))
        #expect(blocked.cause == .google(.apiKeyServiceBlocked) && blocked.reason == "API_KEY_SERVICE_BLOCKED" && blocked.hint?.contains("Generative Language API") == true)
        #expect(blocked.hint?.contains("Gemini for Google Cloud API") == true)
        let disabled = mapper.apiError(status: 403, body: try fixture("error-403-disabled.json"))
        #expect(disabled.reason == "SERVICE_DISABLED" && disabled.category == .refused)
        #expect(disabled.hint?.contains("https://console.developers.google.com/apis/api/generativelanguage.googleapis.com/overview?project=99999999") == true)
        #expect(disabled.hint?.contains("few minutes") == true)
        // A link that is not a plain https URL is not printed.
        let hostile = Array(#"{"error":{"code":403,"status":"PERMISSION_DENIED","details":[{"@type":"type.googleapis.com/google.rpc.Help","links":[{"url":"https://x\u001b]0;t\u0007"}]},{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"SERVICE_DISABLED"}]}}"#.utf8)
        #expect(mapper.apiError(status: 403, body: hostile).hint?.contains("https://x") == false)
    }

    @Test func statusesMapToCategories() throws {
        #expect(mapper.apiError(status: 404, body: try fixture("error-not-found.json")).hint?.contains("gemvault models") == true)
        #expect(mapper.apiError(status: 403, body: try fixture("error-403-disabled.json")).reason == "SERVICE_DISABLED")
        let overloaded = mapper.apiError(status: 503, body: try fixture("error-503.json"))
        #expect(overloaded.category == .network && overloaded.serverMessage?.hasPrefix("The model is overloaded") == true)
        let garbage = mapper.apiError(status: 502, body: Array("<html>bad gateway</html>".utf8))
        #expect(garbage.category == .network && garbage.status == 502)
    }

    @Test func retryInfoAndDailyQuota() throws {
        #expect(GoogleStatus.decode(try fixture("error-429-retryinfo.json"))?.retryDelay == 1)
        #expect(GoogleStatus.decode(Array(#"{"error":{"code":429,"details":[{"@type":"x","retryDelay":"250ms"}]}}"#.utf8))?.retryDelay == 0.25)
        let client = GeminiClient(configuration: ClientConfiguration(endpoint: "http://127.0.0.1:9", apiVersion: "v1beta", timeout: 1, maxAttempts: 5),
                                  apiKey: .init(utf8: "k"), errors: mapper)
        let daily: GeminiClient.Attempt<Int> = client.failure(429, try fixture("error-429-daily.json"), retryAfter: nil, errors: mapper)
        guard case .failed(let dailyError, let dailyFailure) = daily else { Issue.record("no failure"); return }
        #expect(dailyError.message.hasPrefix("the daily quota") && client.retryPolicy.decision(attempt: 1, dailyFailure) == .stop)
        let minute: GeminiClient.Attempt<Int> = client.failure(429, try fixture("error-429-retryinfo.json"), retryAfter: nil, errors: mapper)
        guard case .failed(_, let minuteFailure) = minute else { Issue.record("no failure"); return }
        #expect(client.retryPolicy.decision(attempt: 1, minuteFailure) == .retry(after: 1))
    }

    @Test func finishReasons() {
        func problem(_ finishReason: String?, blocked: String? = nil) -> GeminiError? {
            mapper.finishProblem(FinishReason(gemini: finishReason, blockReason: blocked))
        }
        #expect(problem("STOP") == nil && problem("FINISH_REASON_UNSPECIFIED") == nil && problem(nil) == nil)
        let blocked = problem("STOP", blocked: "SAFETY")
        #expect(blocked?.cause == .finish(.blocked("SAFETY")) && blocked?.reason == "blocked:SAFETY")
        for reason in ["SAFETY", "RECITATION", "MAX_TOKENS", "OTHER"] {
            #expect(problem(reason)?.reason == reason)
        }
        #expect(problem("MAX_TOKENS")?.cause == .finish(.maxTokens) && problem("OTHER")?.cause == .finish(.other("OTHER")))
    }

    @Test func redactionDropsKeyShapedWords() {
        #expect(ErrorMapper.redact("Invalid API key: AIzaSyABC123 please") == "Invalid API key: [redacted] please")
        #expect(ErrorMapper.redact("bad credential AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp.") == "bad credential [redacted].")
        #expect(ErrorMapper.redact("token ya29.a0AfB_byC123 expired") == "token [redacted] expired")
    }
}

@Suite struct ClientPolicyTests {
    @Test func modelNamesAreCheckedBeforeTheyReachAURL() throws {
        #expect(try GeminiClient.modelResource("gemini-3.6-flash") == "models/gemini-3.6-flash")
        #expect(try GeminiClient.modelResource("tunedModels/mine") == "tunedModels/mine")
        for bad in ["", "../admin", "a?key=1", "a b", "x#y"] {
            #expect(throws: GeminiError.self) { try GeminiClient.modelResource(bad) }
        }
    }

    @Test func retriesStopAtTheLimitAndHonourRetryInfo() throws {
        let client = GeminiClient(configuration: ClientConfiguration(endpoint: "http://127.0.0.1:9", apiVersion: "v1beta", timeout: 1,
                                                                     maxAttempts: 3, initialBackoff: 0.01, maxBackoff: 0.02),
                                  apiKey: .init(utf8: "k"), errors: ErrorMapper(keyOrigin: "", keyReplaceHint: "", keyKind: .auth, model: "m", apiVersion: "v1beta"))
        var notices: [RetryNotice] = []
        var calls = 0
        let unavailable = GeminiError(category: .network, message: "m", status: 503, cause: .status("UNAVAILABLE"))
        #expect(throws: unavailable) {
            try client.withRetries(handlers: StreamHandlers(onRetry: { notices.append($0) })) { () -> GeminiClient.Attempt<Int> in
                calls += 1
                return .failed(unavailable, .status(503, serverDelay: nil, dailyQuota: false))
            }
        }
        #expect(calls == 3 && notices.count == 2)
        calls = 0
        let value = try client.withRetries(handlers: StreamHandlers(onRetry: { notices.append($0) })) { () -> GeminiClient.Attempt<Int> in
            calls += 1
            return calls == 1 ? .failed(GeminiError(category: .refused, message: "m", status: 429, cause: .status("R")), .status(429, serverDelay: 0.05, dailyQuota: false)) : .done(7)
        }
        #expect(value == 7 && notices.last?.delay == 0.05)
        // Text already shown is never repeated by a retry.
        #expect(throws: unavailable) {
            try client.withRetries(handlers: StreamHandlers()) { () -> GeminiClient.Attempt<Int> in .failed(unavailable, .final) }
        }
    }

    @Test func requestsEncodeInCamelCase() throws {
        let request = GenerateContentRequest(contents: [Content(role: "user", text: "hi")], systemInstruction: Content(role: "user", text: "s"),
                                             generationConfig: GenerationConfig(temperature: 0.5, topK: 3, maxOutputTokens: 9))
        let json = String(decoding: try JSONEncoder().encode(request), as: UTF8.self)
        #expect(json.contains("\"systemInstruction\"") && json.contains("\"maxOutputTokens\":9") && json.contains("\"topK\":3"))
        #expect(!json.contains("topP"))
    }

    /// The neutral request in Gemini's words: roles, a file as base64 inline data, the system
    /// instruction as a user turn, and no generationConfig when every option is left to the server.
    @Test func aNeutralRequestBecomesGeminisRequest() throws {
        let bytes: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0xFF]
        let neutral = ChatRequest(messages: [ChatMessage(role: .user, parts: [.text("look"), .file(mimeType: "image/png", bytes: bytes)]),
                                             ChatMessage(role: .model, parts: [.text("a picture")])],
                                  system: "terse", options: GenerationOptions(topK: 3))
        let wire = GenerateContentRequest(neutral)
        #expect(wire.contents.map(\.role) == ["user", "model"])
        #expect(wire.contents[0].parts == [Part(text: "look"), Part(inlineData: InlineData(mimeType: "image/png", data: Data(bytes).base64EncodedString()))])
        #expect(wire.systemInstruction == Content(role: "user", text: "terse") && wire.generationConfig == GenerationConfig(topK: 3))
        #expect(GenerateContentRequest(ChatRequest(messages: [])).generationConfig == nil)
    }

    @Test func finishReasonsAreTypedAndABlockWins() {
        #expect(FinishReason(gemini: nil, blockReason: nil) == nil)
        #expect(FinishReason(gemini: "STOP", blockReason: nil) == .complete)
        #expect(FinishReason(gemini: "FINISH_REASON_UNSPECIFIED", blockReason: nil) == .complete)
        #expect(FinishReason(gemini: "MAX_TOKENS", blockReason: nil) == .maxTokens)
        #expect(FinishReason(gemini: "SAFETY", blockReason: nil) == .safety)
        #expect(FinishReason(gemini: "RECITATION", blockReason: nil) == .recitation)
        #expect(FinishReason(gemini: "SPII", blockReason: nil) == .other("SPII"))
        #expect(FinishReason(gemini: "MAX_TOKENS", blockReason: "OTHER") == .blocked("OTHER"))
    }

    /// Building a request and parsing a stream need no network library. Compared before and
    /// after, since other tests in this process may load it (that no command loads it before a
    /// request is test_session.py's `test_key_get_through_the_session_loads_no_network_library`).
    @Test func buildingAndParsingLoadNoNetworkLibrary() {
        let before = CurlTransport.libraryLoaded
        var parser = SSEParser()
        _ = Array("data: {\"candidates\": []}\n\n".utf8).withUnsafeBytes { parser.feed($0) }
        _ = GenerateContentRequest(ChatRequest(messages: []))
        #expect(CurlTransport.libraryLoaded == before)
    }
}
