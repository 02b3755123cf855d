import Conversations
import VaultCore

/// Gemini as a `ChatProvider`: the neutral request becomes Gemini's wire request, and the
/// wire reply the neutral one (WireTypes.swift holds both mappings).
extension GeminiClient: ChatProvider {
    public var displayName: String { "Gemini" }

    /// Search, URL context and code execution, grounded replies, a level or a budget for
    /// thinking, thought summaries and signatures; `store` where the endpoint takes it.
    public var capabilities: ProviderCapabilities {
        ProviderCapabilities(tools: ModelTools(search: true, urlContext: true, codeExecution: true), grounding: true, thinking: .levelsOrBudget,
                             thoughtSummaries: true, signatures: true, store: configuration.honoursStore)
    }

    public func checkModelName(_ name: String) throws { _ = try Self.modelResource(name) }

    public func stream(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply {
        try streamGenerateContent(model: model, request: wire(request), handlers: handlers)
    }

    public func reply(to request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply {
        try generateContent(model: model, request: wire(request), handlers: handlers)
    }

    /// The wire request, without `store` where the endpoint does not take it.
    private func wire(_ request: ChatRequest) -> GenerateContentRequest {
        var wire = GenerateContentRequest(request)
        if !configuration.honoursStore { wire.store = nil }
        return wire
    }

    public func countTokens(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> Int {
        try countTokens(model: model, request: GenerateContentRequest(request), handlers: handlers)
    }

    public func modelFacts(_ name: String, handlers: StreamHandlers) throws -> ChatModel {
        let info = try getModel(name, handlers: handlers)
        return ChatModel(name: info.shortName, displayName: info.displayName, inputTokenLimit: info.inputTokenLimit, outputTokenLimit: info.outputTokenLimit)
    }

    public func chatModels(handlers: StreamHandlers) throws -> [ChatModel] {
        try listModels(handlers: handlers).filter { $0.supportedGenerationMethods?.contains("generateContent") ?? false }.map {
            var model = ChatModel(name: $0.shortName, displayName: $0.displayName, inputTokenLimit: $0.inputTokenLimit, outputTokenLimit: $0.outputTokenLimit)
            model.thinking = $0.thinking
            return model
        }
    }
}

extension GeminiError: ChatFailure {
    public var kind: ChatErrorKind { category }
}
