import Conversations
import VaultCore

/// Request and response shapes of the Gemini REST API (v1beta), in its camelCase JSON, and
/// their mapping to and from the neutral types of Conversations (at the end).
/// Decoders ignore unknown keys and keep enums as strings, so new server values never fail a decode.

public struct Part: Codable, Sendable, Equatable {
    public var text: String?
    /// A file sent with the request (an image, a PDF).
    public var inlineData: InlineData?
    /// Thought-summary parts; never printed and never kept in history.
    public var thought: Bool?
    /// Gemini 3's opaque signature of its thinking, on any part: sent back verbatim.
    public var thoughtSignature: String?
    /// Code the model ran at Google (`codeExecution`), and what it gave.
    public var executableCode: ExecutableCode?
    public var codeExecutionResult: CodeExecutionResult?

    public init(text: String) {
        self.text = text
        self.inlineData = nil
        self.thought = nil
    }

    init(text: String, thoughtSignature: String?) {
        self.init(text: text)
        self.thoughtSignature = thoughtSignature
    }

    public init(inlineData: InlineData) {
        self.text = nil
        self.inlineData = inlineData
        self.thought = nil
    }
}

public struct ExecutableCode: Codable, Sendable, Equatable {
    public var language: String?
    public var code: String?
}

public struct CodeExecutionResult: Codable, Sendable, Equatable {
    /// `OUTCOME_OK`, `OUTCOME_FAILED`, `OUTCOME_DEADLINE_EXCEEDED`.
    public var outcome: String?
    public var output: String?
}

/// `{"mimeType": "image/png", "data": "<base64>"}`: Google's `Blob`, a file inside the request.
public struct InlineData: Codable, Sendable, Equatable {
    public var mimeType: String
    /// The file's bytes in standard base64.
    public var data: String

    public init(mimeType: String, data: String) {
        self.mimeType = mimeType
        self.data = data
    }
}

public struct Content: Codable, Sendable, Equatable {
    public var role: String?
    public var parts: [Part]?

    public init(role: String, text: String) {
        self.role = role
        self.parts = [Part(text: text)]
    }

    public init(role: String, parts: [Part]) {
        self.role = role
        self.parts = parts
    }

    /// The visible text: thought parts left out.
    public var visibleText: String {
        (parts ?? []).filter { $0.thought != true }.compactMap(\.text).joined()
    }

    /// The thought summaries' text.
    public var thoughtText: String {
        (parts ?? []).filter { $0.thought == true }.compactMap(\.text).joined()
    }
}

public struct GenerationConfig: Codable, Sendable, Equatable {
    public var temperature: Double?
    public var topP: Double?
    public var topK: Int?
    public var maxOutputTokens: Int?
    /// `application/json` with a schema: structured output.
    public var responseMimeType: String?
    public var responseJsonSchema: JSONValue?
    public var thinkingConfig: ThinkingConfig?

    public struct ThinkingConfig: Codable, Sendable, Equatable {
        public var thinkingLevel: String?
        public var thinkingBudget: Int?
        public var includeThoughts: Bool?
    }

    public init(temperature: Double? = nil, topP: Double? = nil, topK: Int? = nil, maxOutputTokens: Int? = nil,
                responseMimeType: String? = nil, responseJsonSchema: JSONValue? = nil) {
        self.temperature = temperature
        self.topP = topP
        self.topK = topK
        self.maxOutputTokens = maxOutputTokens
        self.responseMimeType = responseMimeType
        self.responseJsonSchema = responseJsonSchema
    }
}

/// One tool of a request: `{"googleSearch": {}}`, `{"urlContext": {}}` or `{"codeExecution": {}}`.
public struct Tool: Codable, Sendable, Equatable {
    public struct Empty: Codable, Sendable, Equatable {}
    public var googleSearch: Empty?
    public var urlContext: Empty?
    public var codeExecution: Empty?

    static func list(_ tools: ModelTools) -> [Tool]? {
        var list: [Tool] = []
        if tools.search { list.append(Tool(googleSearch: Empty())) }
        if tools.urlContext { list.append(Tool(urlContext: Empty())) }
        if tools.codeExecution { list.append(Tool(codeExecution: Empty())) }
        return list.isEmpty ? nil : list
    }
}

public struct GenerateContentRequest: Codable, Sendable, Equatable {
    /// `models/NAME`: set only inside a countTokens request (the URL names it otherwise).
    public var model: String?
    public var contents: [Content]
    public var systemInstruction: Content?
    public var generationConfig: GenerationConfig?
    public var tools: [Tool]?
    /// Whether Google keeps the request (logs and datasets); gemvault sends false unless told.
    public var store: Bool?

    public init(contents: [Content], systemInstruction: Content? = nil, generationConfig: GenerationConfig? = nil, store: Bool? = false) {
        self.contents = contents
        self.systemInstruction = systemInstruction
        self.generationConfig = generationConfig
        self.store = store
    }
}

/// Gemini's `usageMetadata`: only decoded, then read as the neutral `TokenUsage` (`usage`).
struct UsageMetadata: Codable, Sendable {
    var promptTokenCount: Int?
    var candidatesTokenCount: Int?
    var thoughtsTokenCount: Int?
    var toolUsePromptTokenCount: Int?
    var cachedContentTokenCount: Int?
    var totalTokenCount: Int?
}

public struct Candidate: Codable, Sendable {
    public var content: Content?
    public var finishReason: String?
    public var finishMessage: String?
    var groundingMetadata: GroundingMetadata?
    var urlContextMetadata: URLContextMetadata?
}

/// Google Search's `groundingMetadata`; `searchEntryPoint` (HTML for a web page) is not read.
struct GroundingMetadata: Codable, Sendable {
    struct Chunk: Codable, Sendable {
        struct Web: Codable, Sendable {
            var uri: String?
            var title: String?
            var domain: String?
        }
        var web: Web?
    }

    struct Support: Codable, Sendable {
        struct Segment: Codable, Sendable {
            var partIndex: Int?
            var startIndex: Int?
            var endIndex: Int?
            var text: String?
        }
        var segment: Segment?
        var groundingChunkIndices: [Int]?
    }

    var webSearchQueries: [String]?
    var groundingChunks: [Chunk]?
    var groundingSupports: [Support]?
}

struct URLContextMetadata: Codable, Sendable {
    struct Entry: Codable, Sendable {
        var retrievedUrl: String?
        var urlRetrievalStatus: String?
    }
    var urlMetadata: [Entry]?
}

public struct PromptFeedback: Codable, Sendable {
    public var blockReason: String?
}

public struct GenerateContentResponse: Codable, Sendable {
    public var candidates: [Candidate]?
    public var promptFeedback: PromptFeedback?
    var usageMetadata: UsageMetadata?
    public var modelVersion: String?

    public var visibleText: String { candidates?.first?.content?.visibleText ?? "" }

    /// The tokens used, mapped once from the wire's `usageMetadata`.
    public var usage: TokenUsage? {
        usageMetadata.map {
            TokenUsage(inputTokens: $0.promptTokenCount, outputTokens: $0.candidatesTokenCount,
                       thinkingTokens: $0.thoughtsTokenCount, totalTokens: $0.totalTokenCount,
                       toolInputTokens: $0.toolUsePromptTokenCount, cachedInputTokens: $0.cachedContentTokenCount)
        }
    }
}

public struct ModelInfo: Codable, Sendable, Equatable {
    public var name: String
    public var displayName: String?
    public var description: String?
    public var inputTokenLimit: Int?
    public var outputTokenLimit: Int?
    public var supportedGenerationMethods: [String]?
    /// Whether the model supports thinking (the API's own word).
    public var thinking: Bool?

    public var shortName: String { name.hasPrefix("models/") ? String(name.dropFirst(7)) : name }
}

struct ListModelsResponse: Codable, Sendable {
    var models: [ModelInfo]?
    var nextPageToken: String?
}

/// `{"generateContentRequest": {...}}`: the whole request is counted, not only its contents.
struct CountTokensRequest: Codable, Sendable {
    var generateContentRequest: GenerateContentRequest
}

public struct CountTokensResponse: Codable, Sendable {
    public var totalTokens: Int?
}

// MARK: The neutral types, in Gemini's words

extension GenerateContentRequest {
    /// Gemini's request for a neutral one: a system instruction is a user turn of its own, and
    /// options left all to the server are not sent.
    public init(_ request: ChatRequest) {
        var options = request.options
        options.tools = ModelTools()
        options.store = false
        self.init(contents: request.messages.map(Content.init), systemInstruction: request.system.map { Content(role: "user", text: $0) },
                  generationConfig: options == GenerationOptions() ? nil : GenerationConfig(request.options))
        tools = Tool.list(request.options.tools)
        store = request.options.store
    }
}

extension Content {
    init(_ message: ChatMessage) {
        self.init(role: message.role == .user ? "user" : "model", parts: message.parts.map(Part.init))
    }
}

extension Part {
    /// A file goes as inline data, its bytes in standard base64.
    init(_ part: MessagePart) {
        switch part {
        case .text(let text): self.init(text: text)
        case .file(let mimeType, let bytes): self.init(inlineData: InlineData(mimeType: mimeType, data: Sodium.base64(bytes)))
        case .reply(let part): self.init(text: part.text, thoughtSignature: part.thoughtSignature)
        }
    }
}

extension GenerationConfig {
    init(_ options: GenerationOptions) {
        self.init(temperature: options.temperature, topP: options.topP, topK: options.topK, maxOutputTokens: options.maxOutputTokens,
                  responseMimeType: options.responseJSONSchema == nil ? nil : "application/json", responseJsonSchema: options.responseJSONSchema)
        switch options.thinking {
        case .level(let level)?: thinkingConfig = ThinkingConfig(thinkingLevel: level)
        case .budget(let tokens)?: thinkingConfig = ThinkingConfig(thinkingBudget: tokens)
        case nil: break
        }
        if options.includeThoughts { thinkingConfig = ThinkingConfig(thinkingLevel: thinkingConfig?.thinkingLevel, thinkingBudget: thinkingConfig?.thinkingBudget, includeThoughts: true) }
    }
}

extension FinishReason {
    /// A candidate's `finishReason` and the prompt's `blockReason`, typed: a blocked prompt
    /// wins; nil when Gemini named neither.
    init?(gemini finishReason: String?, blockReason: String?) {
        if let blockReason { self = .blocked(blockReason); return }
        switch finishReason {
        case nil: return nil
        case "STOP", "FINISH_REASON_UNSPECIFIED": self = .complete
        case "MAX_TOKENS": self = .maxTokens
        case "SAFETY": self = .safety
        case "RECITATION": self = .recitation
        case let other?: self = .other(other)
        }
    }

    /// Gemini's word for it, and `blocked:REASON` for a blocked prompt: the reason `ask --json` prints.
    var reasonName: String {
        switch self {
        case .complete: "STOP"
        case .maxTokens: "MAX_TOKENS"
        case .safety: "SAFETY"
        case .recitation: "RECITATION"
        case .blocked(let reason): "blocked:" + reason
        case .other(let name): name
        }
    }
}
