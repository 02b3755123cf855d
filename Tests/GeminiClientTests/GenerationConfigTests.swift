import Conversations
import Foundation
import Testing
import VaultCore
@testable import GeminiClient

/// The neutral options as Gemini's generationConfig: thinking, thought summaries, a schema.
@Suite struct GenerationConfigTests {
    func config(_ options: GenerationOptions) throws -> JSONValue? {
        let request = GenerateContentRequest(ChatRequest(messages: [ChatMessage(role: .user, parts: [.text("hi")])], options: options))
        return try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(request))["generationConfig"]
    }

    @Test func aLevelOrABudgetNeverBoth() throws {
        var options = GenerationOptions()
        #expect(try config(options) == nil)
        options.thinking = .level("low")
        #expect(try config(options) == .object(["thinkingConfig": .object(["thinkingLevel": .string("low")])]))
        options.thinking = .budget(0)
        options.includeThoughts = true
        #expect(try config(options) == .object(["thinkingConfig": .object(["thinkingBudget": .number(0), "includeThoughts": .bool(true)])]))
    }

    @Test func aSchemaGoesWithTheJSONMimeType() throws {
        let schema = JSONValue.object(["type": .string("object")])
        let options = GenerationOptions(responseJSONSchema: schema)
        #expect(try config(options) == .object(["responseMimeType": .string("application/json"), "responseJsonSchema": schema]))
    }

    @Test func thoughtPartsAreKeptApartFromTheText() throws {
        let content = try JSONDecoder().decode(Content.self, from: Data(#"{"role":"model","parts":[{"text":"Hmm.","thought":true},{"text":"Yes."}]}"#.utf8))
        #expect(content.visibleText == "Yes." && content.thoughtText == "Hmm.")
    }
}
