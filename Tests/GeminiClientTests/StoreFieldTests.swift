import Conversations
import GemvaultTesting
import Testing
import VaultCore
@testable import GeminiClient

/// `store`: sent at the top level, false unless asked, and left out where the endpoint refuses it.
@Suite struct StoreFieldTests {
    let fixtures = Fixtures()

    private func sentBody(endpoint: String, store: Bool) throws -> String {
        let transport = FakeTransport([.stream(200, try fixtures.text("streaming-success-text.sse"), pieceSize: 1 << 20)])
        let errors = ErrorMapper(keyOrigin: "the test", keyReplaceHint: "replace it", keyKind: .auth, model: "gemini-test", apiVersion: "v1beta")
        let client = GeminiClient(configuration: ClientConfiguration(endpoint: endpoint, apiVersion: "v1beta", timeout: 5, maxAttempts: 1),
                                  apiKey: SecretBytes(utf8: "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"), errors: errors, transport: transport)
        var options = GenerationOptions(temperature: 0.5)
        options.store = store
        let request = ChatRequest(messages: [ChatMessage(role: .user, parts: [.text("hi")])], options: options)
        _ = try client.stream(request, model: "gemini-test", handlers: StreamHandlers())
        return String(decoding: try #require(transport.sent.first?.body), as: UTF8.self)
    }

    @Test func theDeveloperAPIIsToldNotToKeepTheRequestUnlessAsked() throws {
        let kept = try sentBody(endpoint: "https://generativelanguage.googleapis.com", store: false)
        #expect(kept.contains(#""store":false"#))
        #expect(!kept.contains(#""generationConfig":{"store""#))
        #expect(try sentBody(endpoint: "https://generativelanguage.googleapis.com", store: true).contains(#""store":true"#))
    }

    @Test(arguments: ["https://aiplatform.googleapis.com", "https://us-central1-aiplatform.googleapis.com"])
    func anAgentPlatformEndpointGetsNoStoreField(endpoint: String) throws {
        #expect(!(try sentBody(endpoint: endpoint, store: false)).contains("store"))
        #expect(!ClientConfiguration(endpoint: endpoint, apiVersion: "v1", timeout: 1, maxAttempts: 1).honoursStore)
    }
}
