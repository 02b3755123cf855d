import Testing
@testable import GeminiClient

/// What gemvault knows of each model: thinking levels, routing, and the hint a 400 gets.
@Suite struct ModelCatalogTests {
    @Test func minimalIsReplacedOnlyWhereTheModelRefusesIt() {
        for model in ["gemini-3.8-flash", "gemini-3.7-flash", "gemini-flash-latest", "gemini-3.1-pro-preview", "gemini-4-argon", "models/gemini-4-neon"] {
            #expect(ModelCatalog.facts(for: model)?.replacement(for: "minimal") == "low", "\(model)")
        }
        for model in ["gemini-3.6-flash", "gemini-3.5-flash-lite", "gemini-3-flash-preview", "unknown-model"] {
            #expect(ModelCatalog.facts(for: model)?.replacement(for: "minimal") == nil, "\(model)")
        }
        #expect(ModelCatalog.facts(for: "gemini-3.8-flash")?.replacement(for: "xhigh") == "high")
        #expect(ModelCatalog.facts(for: "gemini-4-hydrogen")?.replacement(for: "xhigh") == nil)
        #expect(ModelCatalog.facts(for: "gemini-3.8-flash")?.replacement(for: "high") == nil)
    }

    @Test func aRoutedReplyIsToldFromAVersionSuffix() {
        #expect(ModelCatalog.isRouted(requested: "gemini-3.7-flash", served: "gemini-3.8-flash"))
        #expect(!ModelCatalog.isRouted(requested: "gemini-3.8-flash", served: "gemini-3.8-flash-001"))
        #expect(!ModelCatalog.isRouted(requested: "gemini-3.1-pro-preview-customtools", served: "gemini-3.1-pro-preview"))
        #expect(!ModelCatalog.isRouted(requested: "models/gemini-3.8-flash", served: "gemini-3.8-flash"))
        #expect(!ModelCatalog.isRouted(requested: "metered~tag", served: "metered"))
        #expect(ModelCatalog.routingNotice(requested: "gemini-3.7-flash", served: "gemini-3.8-flash")
                == "gemini-3.7-flash is served by gemini-3.8-flash since 2026-10-08: priced as gemini-3.8-flash")
        #expect(ModelCatalog.routingNotice(requested: "x", served: "y") == "x was answered by y: priced as y")
    }

    static func refusal(_ message: String, model: String) -> GeminiError {
        var mapper = ErrorMapper(keyOrigin: "the test", keyReplaceHint: "replace it", keyKind: .auth, model: model, apiVersion: "v1beta")
        mapper.optionAdvice = [
            ErrorMapper.OptionAdvice(words: ["thinking is not enabled"], hint: "this model does not think"),
            ErrorMapper.OptionAdvice(words: ["thinking level"], hint: "change --think", namesThinkingLevels: true),
        ]
        let body = #"{"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "\#(message)"}}"#
        return mapper.apiError(status: 400, body: Array(body.utf8))
    }

    @Test func aRefusedLevelGetsAHintWithTheLevelsTheModelTakes() {
        let minimal = Self.refusal("Thinking level MINIMAL is not supported for this model. Please retry with other thinking level.", model: "gemini-3.8-flash")
        #expect(minimal.hint == "change --think (gemini-3.8-flash takes the thinking levels low, medium, high)")
        #expect(Self.refusal("Thinking level MINIMAL is not supported for this model.", model: "somebody-else").hint == "change --think")
        #expect(Self.refusal("Thinking level X", model: "gemini-2.5-flash").hint == "change --think (gemini-2.5-flash takes a thinking budget (--think-budget), not a level)")
        // The Developer API's words for thinking asked of a model without it.
        #expect(Self.refusal("Thinking is not enabled for models/gemma-3-27b-it", model: "gemma-3-27b-it").hint == "this model does not think")
    }
}
