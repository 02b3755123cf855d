import VaultCore
/// What the conversation asks of a model provider, in words no provider owns: the request
/// (messages, system instruction, generation options), the reply (text, usage, a typed finish
/// reason), the failure kinds, and the `ChatProvider` protocol a client (Gemini's) implements.
/// A provider maps its own wire format to and from these types; nothing above it reads that format.

/// Who wrote a message.
public enum ChatRole: Sendable, Equatable {
    case user
    case model
}

/// One piece of a message: text, or a file (an image, a PDF) with its MIME type.
public enum MessagePart: Sendable, Equatable {
    case text(String)
    case file(mimeType: String, bytes: [UInt8])
    /// A part of an earlier reply as the model sent it, its thought signature with it: Gemini 3
    /// wants both back, byte for byte, on the next turn.
    case reply(ReplyPart)
}

/// One part of a model's reply as it came: text, and the opaque thought signature the provider
/// attached to it (its own encoding, kept verbatim).
public struct ReplyPart: Codable, Sendable, Equatable {
    public var text: String
    public var thoughtSignature: String?

    public init(text: String, thoughtSignature: String? = nil) {
        self.text = text
        self.thoughtSignature = thoughtSignature
    }
}

public struct ChatMessage: Sendable, Equatable {
    public var role: ChatRole
    public var parts: [MessagePart]

    public init(role: ChatRole, parts: [MessagePart]) {
        self.role = role
        self.parts = parts
    }

    /// The text parts, joined.
    public var text: String {
        parts.compactMap {
            switch $0 {
            case .text(let text): text
            case .reply(let part): part.text
            case .file: nil
            }
        }.joined()
    }
}

/// How the reply is generated; nil leaves a value to the provider.
public struct GenerationOptions: Sendable, Equatable {
    public var temperature: Double?
    public var topP: Double?
    public var topK: Int?
    public var maxOutputTokens: Int?
    /// A JSON Schema the reply must follow (`ask --schema`): the reply is then JSON.
    public var responseJSONSchema: JSONValue?
    /// How much the model thinks: a level (`minimal` … `high`), or a token budget (0 off, -1
    /// the model's choice); never both, which Gemini refuses.
    public var thinking: Thinking?
    /// Ask for thought summaries (`--thoughts`).
    public var includeThoughts = false
    /// Search, URL context and code execution at Google.
    public var tools = ModelTools()
    /// Whether the provider may keep the request and reply (Gemini's `store`); false asks it
    /// not to, and is sent on every request a provider takes it on.
    public var store = false

    public enum Thinking: Sendable, Equatable {
        case level(String)
        case budget(Int)
    }

    public init(temperature: Double? = nil, topP: Double? = nil, topK: Int? = nil, maxOutputTokens: Int? = nil, responseJSONSchema: JSONValue? = nil) {
        self.temperature = temperature
        self.topP = topP
        self.topK = topK
        self.maxOutputTokens = maxOutputTokens
        self.responseJSONSchema = responseJSONSchema
    }
}

/// One request: every message so far, the system instruction, the options.
public struct ChatRequest: Sendable, Equatable {
    public var messages: [ChatMessage]
    public var system: String?
    public var options: GenerationOptions

    public init(messages: [ChatMessage], system: String? = nil, options: GenerationOptions = GenerationOptions()) {
        self.messages = messages
        self.system = system
        self.options = options
    }
}

/// Tokens a reply used, in words no provider owns. Encoded (`ask --json`'s `usage`) under
/// the names gemvault has always printed, which are Gemini's.
public struct TokenUsage: Codable, Sendable, Equatable {
    public var inputTokens: Int?
    public var outputTokens: Int?
    public var thinkingTokens: Int?
    /// The input tokens of tools (Search results, fetched pages): billed as input.
    public var toolInputTokens: Int?
    /// The part of the input served from a cache: billed at the cached rate.
    public var cachedInputTokens: Int?
    public var totalTokens: Int?

    enum CodingKeys: String, CodingKey {
        case inputTokens = "promptTokenCount", outputTokens = "candidatesTokenCount", thinkingTokens = "thoughtsTokenCount"
        case toolInputTokens = "toolUsePromptTokenCount", cachedInputTokens = "cachedContentTokenCount", totalTokens = "totalTokenCount"
    }

    public init(inputTokens: Int? = nil, outputTokens: Int? = nil, thinkingTokens: Int? = nil, totalTokens: Int? = nil,
                toolInputTokens: Int? = nil, cachedInputTokens: Int? = nil) {
        self.inputTokens = inputTokens
        self.outputTokens = outputTokens
        self.thinkingTokens = thinkingTokens
        self.toolInputTokens = toolInputTokens
        self.cachedInputTokens = cachedInputTokens
        self.totalTokens = totalTokens
    }
}

/// Why a reply ended.
public enum FinishReason: Sendable, Equatable {
    /// It ended on its own (or the provider did not say why).
    case complete
    /// It reached the output token limit: what came is kept, cut short.
    case maxTokens
    /// The provider's safety filters stopped it.
    case safety
    /// It was stopped for reciting source material.
    case recitation
    /// The prompt was refused before any reply, for the reason named (the provider's word).
    case blocked(String)
    /// Any other early end, by the provider's word for it.
    case other(String)
}

/// The outcome of one model turn.
public struct ChatReply: Sendable {
    public var text: String
    /// Why it ended; nil when the stream stopped before the provider said (Ctrl-C).
    public var finish: FinishReason?
    /// The provider's own word for the end (`STOP`, `MAX_TOKENS`), as `ask --json` prints it.
    public var finishName: String?
    public var usage: TokenUsage?
    /// The model version that answered, when the provider names it.
    public var modelVersion: String?
    /// The service tier that served it (`standard`, `flex`, `priority`, `batch`), when the provider says.
    public var serviceTier: String?
    /// True when the caller cancelled; `text` is the partial reply.
    public var interrupted: Bool
    /// The thought summaries that came with it (when asked for): never part of `text`.
    public var thoughts = ""
    /// Where the answer's claims come from, when it was grounded; checked against `text`.
    public var grounding: Grounding?
    /// Supports whose offsets did not fit the text (out of range, overlapping, splitting a
    /// UTF-8 sequence, or naming no source): left out of `grounding`, counted here.
    public var droppedSupports = 0
    /// The pages URL context read, or failed to.
    public var urlRetrievals: [URLRetrieval] = []
    /// The Google Search queries the model ran (grounding is billed per query).
    public var searchQueryCount: Int { grounding?.queries.count ?? 0 }
    /// `text` as the parts it came in, each with its thought signature; parts are joined only
    /// where neither carries a signature, as Google requires of what is sent back.
    public private(set) var parts: [ReplyPart] = []

    /// Notes a part of the reply (the caller adds its text to `text` itself).
    public mutating func notePart(text: String, thoughtSignature: String?) {
        if thoughtSignature == nil, let last = parts.indices.last, parts[last].thoughtSignature == nil {
            parts[last].text += text
        } else if thoughtSignature != nil || !text.isEmpty {
            parts.append(ReplyPart(text: text, thoughtSignature: thoughtSignature))
        }
    }

    /// The parts to keep with the turn: only when a signature came, and only when they spell
    /// `text` exactly (else the plain text goes back).
    public var signedParts: [ReplyPart]? {
        guard parts.contains(where: { $0.thoughtSignature != nil }), parts.map(\.text).joined() == text else { return nil }
        return parts
    }

    public init(text: String, finish: FinishReason? = nil, finishName: String? = nil, usage: TokenUsage? = nil, modelVersion: String? = nil,
                interrupted: Bool = false) {
        self.text = text
        self.finish = finish
        self.finishName = finishName
        self.usage = usage
        self.modelVersion = modelVersion
        self.interrupted = interrupted
    }

    /// The one rule for a reply that did not end on its own, shared by `ask` and `chat`: one
    /// stopped by Ctrl-C or cut at the output token limit is kept (marked interrupted when
    /// stopped) if any text came; one blocked, filtered or ended for another reason is not.
    public var isKept: Bool {
        guard !text.isEmpty else { return !interrupted && (finish == nil || finish == .complete) }
        if interrupted { return true }
        switch finish {
        case nil, .complete?, .maxTokens?: return true
        default: return false
        }
    }
}

/// What kind of failure a provider reports; each has one outcome, so one exit code.
public enum ChatErrorKind: Sendable, Equatable {
    /// The API answered and refused (4xx, a blocked prompt, a final quota): exit 6.
    case refused
    /// No usable answer: connection failures and 5xx after retries, timeouts: exit 7.
    case network
    /// The user pressed Ctrl-C: exit 130.
    case interrupted
}

/// A provider's failure, already worded for a person.
public protocol ChatFailure: ReportableError, Sendable {
    var kind: ChatErrorKind { get }
    var message: String { get }
    var hint: String? { get }
    /// The HTTP status, when there was one.
    var status: Int? { get }
    /// The provider's status name, a finish or block reason, or a local reason (`timeout`),
    /// as `ask --json` prints it.
    var reason: String { get }
}

/// A reply the user stopped (Ctrl-C) while it came: exit 130, `interrupted` in `ask --json`.
public struct ReplyInterrupted: ChatFailure {
    public let kind = ChatErrorKind.interrupted
    /// Empty where a person watched the reply stop: nothing more needs saying.
    public let message: String
    public let hint: String? = nil
    public let status: Int? = nil
    public let reason = "interrupted"

    public init(message: String) { self.message = message }
}

/// A reply that ended with a problem (cut at the token limit, filtered, blocked) after some
/// text may have arrived: the failure to report and what came.
public struct CutReply: Error {
    public let failure: any ChatFailure
    public let reply: ChatReply

    public init(failure: any ChatFailure, reply: ChatReply) {
        self.failure = failure
        self.reply = reply
    }
}

/// A retry about to happen, for the caller to show.
public struct RetryNotice: Sendable, Equatable {
    public let delay: Double
    public let attempt: Int
    public let reason: String

    public init(delay: Double, attempt: Int, reason: String) {
        self.delay = delay
        self.attempt = attempt
        self.reason = reason
    }
}

/// How the caller follows a request: text as it arrives, retries, ticks while waiting, cancellation.
public struct StreamHandlers {
    public var onText: (String) -> Void
    public var onRetry: (RetryNotice) -> Void
    public var onTick: () -> Void
    public var isCancelled: () -> Bool
    /// A thought part arrived: the model is thinking, not silent.
    public var onThinking: () -> Void
    /// A thought summary's text, as it streams (asked for with includeThoughts).
    public var onThought: (String) -> Void

    public init(onText: @escaping (String) -> Void = { _ in }, onRetry: @escaping (RetryNotice) -> Void = { _ in },
                onTick: @escaping () -> Void = {}, isCancelled: @escaping () -> Bool = { false }, onThinking: @escaping () -> Void = {},
                onThought: @escaping (String) -> Void = { _ in }) {
        self.onThinking = onThinking
        self.onThought = onThought
        self.onText = onText
        self.onRetry = onRetry
        self.onTick = onTick
        self.isCancelled = isCancelled
    }
}

/// A model a provider offers for chat.
public struct ChatModel: Sendable, Equatable {
    /// The name to ask for (`gemini-2.5-flash`).
    public var name: String
    public var displayName: String?
    public var inputTokenLimit: Int?
    public var outputTokenLimit: Int?
    /// Whether it thinks, when the provider says.
    public var thinking: Bool?

    public init(name: String, displayName: String? = nil, inputTokenLimit: Int? = nil, outputTokenLimit: Int? = nil) {
        self.name = name
        self.displayName = displayName
        self.inputTokenLimit = inputTokenLimit
        self.outputTokenLimit = outputTokenLimit
    }
}

/// What a provider can do, asked by `ask` and `chat` before a request instead of assuming
/// Gemini: an option the provider cannot honour is refused, not sent.
public struct ProviderCapabilities: Sendable, Equatable {
    /// How the provider is told how much to think.
    public enum ThinkingStyle: Sendable, Equatable {
        /// It takes no thinking setting.
        case none
        /// Named levels only (`--think`).
        case levels
        /// A token budget only (`--think-budget`).
        case budget
        /// A level or a budget, never both.
        case levelsOrBudget

        public var takesLevels: Bool { self == .levels || self == .levelsOrBudget }
        public var takesBudget: Bool { self == .budget || self == .levelsOrBudget }
    }

    /// The tools it runs: web search, reading the pages a prompt names, running code.
    public var tools: ModelTools
    /// Whether a searched or read reply comes with its sources and the bytes each supports
    /// (shown whole, its citation marks placed once it is complete).
    public var grounding: Bool
    public var thinking: ThinkingStyle
    /// Whether it sends thought summaries when asked (`--thoughts`).
    public var thoughtSummaries: Bool
    /// Whether its replies carry signatures that must go back verbatim with the next turn.
    public var signatures: Bool
    /// Whether a request's `store` choice reaches it; where it does not, the provider's own
    /// setting decides what it keeps.
    public var store: Bool

    public init(tools: ModelTools = ModelTools(), grounding: Bool = false, thinking: ThinkingStyle = .none, thoughtSummaries: Bool = false,
                signatures: Bool = false, store: Bool = false) {
        self.tools = tools
        self.grounding = grounding
        self.thinking = thinking
        self.thoughtSummaries = thoughtSummaries
        self.signatures = signatures
        self.store = store
    }
}

/// A model provider: what `ask` and `chat` need from one. Failures are `ChatFailure`s; a
/// reply that ended with a problem is thrown as `CutReply` with what came.
public protocol ChatProvider: AnyObject {
    /// Its name for people: labels (`gemini ›`), progress lines, notes.
    var displayName: String { get }
    /// What it can do; an option it cannot honour is refused before any request.
    var capabilities: ProviderCapabilities { get }
    /// Refuses a name that cannot name a model at all (whether the provider has it is its answer to a request).
    func checkModelName(_ name: String) throws
    /// The reply, streamed to `handlers.onText` as it comes.
    func stream(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply
    /// The whole reply at once.
    func reply(to request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply
    /// The tokens the whole request takes (messages, system instruction, tools, options).
    func countTokens(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> Int
    /// One model's facts (its token limits).
    func modelFacts(_ name: String, handlers: StreamHandlers) throws -> ChatModel
    /// The models that can chat.
    func chatModels(handlers: StreamHandlers) throws -> [ChatModel]
}

extension ChatProvider {
    public func isModelName(_ name: String) -> Bool { (try? checkModelName(name)) != nil }
    /// The label before its replies in a chat or transcript: its name in lower case.
    public var replyLabel: String { displayName.lowercased() + " ›" }
}
