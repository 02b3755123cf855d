import Conversations
import Foundation
import GemvaultTesting
import Testing
import VaultCore
@testable import GeminiClient

/// countTokens counts the whole request, in the shape Google takes: `generateContentRequest`
/// naming the model, with the system instruction, tools and config, and `store` only inside it.
@Suite struct CountTokensTests {
    static let key = "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"

    private func client(_ transport: FakeTransport) -> GeminiClient {
        let errors = ErrorMapper(keyOrigin: "the test", keyReplaceHint: "replace it", keyKind: .auth, model: "gemini-test", apiVersion: "v1beta")
        return GeminiClient(configuration: ClientConfiguration(endpoint: "https://gemini.test", apiVersion: "v1beta", timeout: 5, maxAttempts: 1),
                            apiKey: SecretBytes(utf8: Self.key), errors: errors, transport: transport)
    }

    @Test func theWholeRequestIsCountedWithStoreInsideIt() throws {
        let transport = FakeTransport([.json(200, #"{"totalTokens": 42}"#)])
        var options = GenerationOptions(maxOutputTokens: 50)
        options.tools.search = true
        let request = ChatRequest(messages: [ChatMessage(role: .user, parts: [.text("hello")])], system: "be brief", options: options)
        #expect(try client(transport).countTokens(request, model: "gemini-test", handlers: StreamHandlers()) == 42)
        let sent = try #require(transport.sent.first)
        #expect(sent.method == "POST" && sent.url == "https://gemini.test/v1beta/models/gemini-test:countTokens")
        let body = try JSONDecoder().decode(JSONValue.self, from: Data(try #require(sent.body)))
        guard case .object(let top) = body else { Issue.record("not an object"); return }
        #expect(Array(top.keys) == ["generateContentRequest"])
        let inner = try #require(top["generateContentRequest"])
        #expect(inner["model"] == .string("models/gemini-test") && inner["store"] == .bool(false))
        #expect(inner["systemInstruction"] != nil && inner["tools"] == .array([.object(["googleSearch": .object([:])])]))
        #expect(inner["generationConfig"] == .object(["maxOutputTokens": .number(50)]))
    }

    @Test func aModelsFactsComeFromModelsGet() throws {
        let transport = FakeTransport([.json(200, #"{"name": "models/gemini-test", "inputTokenLimit": 1000, "outputTokenLimit": 64}"#)])
        let facts = try client(transport).modelFacts("gemini-test", handlers: StreamHandlers())
        #expect(facts.name == "gemini-test" && facts.outputTokenLimit == 64)
        #expect(transport.sent.map(\.method) == ["GET"] && transport.sent[0].url == "https://gemini.test/v1beta/models/gemini-test" && transport.sent[0].body == nil)
    }
}
