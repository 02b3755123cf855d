import Conversations
import Foundation
import Synchronization

/// A second chat provider, for tests: it answers from a script (a fixture file of replies),
/// remembers every request and model it was asked for, and has the capabilities and name it
/// is given. `GemvaultCLITests` drive `ask` and `chat` with it through the CLI's entry
/// (`GemvaultMain.run(arguments:environment:provider:)`), which the shipped binary never calls.
public final class ScriptedProvider: ChatProvider, Sendable {
    /// One scripted reply, as the fixture file spells it.
    public struct Reply: Decodable, Sendable {
        public var text: String
        /// `complete` (the default), `maxTokens` or `safety`.
        public var finish: String?
        public var inputTokens: Int?
        public var outputTokens: Int?

        public init(text: String, finish: String? = nil, inputTokens: Int? = nil, outputTokens: Int? = nil) {
            self.text = text
            self.finish = finish
            self.inputTokens = inputTokens
            self.outputTokens = outputTokens
        }
    }

    /// What the provider was asked, in order.
    public struct Asked: Sendable {
        public let request: ChatRequest
        public let model: String
        public let streamed: Bool
    }

    private struct Failure: ChatFailure {
        let kind: ChatErrorKind
        let message: String
        let hint: String? = nil
        let status: Int? = nil
        let reason: String
    }

    public let displayName: String
    public let capabilities: ProviderCapabilities
    private let state: Mutex<(replies: [Reply], asked: [Asked])>

    public init(displayName: String = "Scripted", capabilities: ProviderCapabilities = ProviderCapabilities(), replies: [Reply]) {
        self.displayName = displayName
        self.capabilities = capabilities
        state = Mutex((replies: replies, asked: []))
    }

    /// The replies of a fixture file: a JSON array of `{"text": …, "finish": …, "inputTokens": …, "outputTokens": …}`.
    public convenience init(displayName: String = "Scripted", capabilities: ProviderCapabilities = ProviderCapabilities(), fixture path: String) throws {
        let replies = try JSONDecoder().decode([Reply].self, from: Data(contentsOf: URL(fileURLWithPath: path)))
        self.init(displayName: displayName, capabilities: capabilities, replies: replies)
    }

    public var asked: [Asked] { state.withLock { $0.asked } }

    /// A model name is one word of letters, digits, `-` and `.`.
    public func checkModelName(_ name: String) throws {
        guard !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." }) else {
            throw Failure(kind: .refused, message: "'\(name)' is not a model name of \(displayName)", reason: "invalid-model")
        }
    }

    public func stream(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply {
        try answer(request, model: model, streamed: true, handlers: handlers)
    }

    public func reply(to request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply {
        try answer(request, model: model, streamed: false, handlers: handlers)
    }

    public func countTokens(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> Int {
        request.messages.reduce(0) { $0 + $1.text.split(separator: " ").count }
    }

    public func modelFacts(_ name: String, handlers: StreamHandlers) throws -> ChatModel { ChatModel(name: name, outputTokenLimit: 1000) }

    public func chatModels(handlers: StreamHandlers) throws -> [ChatModel] { [ChatModel(name: "scripted-1", displayName: "Scripted One")] }

    /// The next scripted reply, its words streamed one by one; a script that ran out is a refusal.
    private func answer(_ request: ChatRequest, model: String, streamed: Bool, handlers: StreamHandlers) throws -> ChatReply {
        let next: Reply? = state.withLock { state in
            state.asked.append(Asked(request: request, model: model, streamed: streamed))
            return state.replies.isEmpty ? nil : state.replies.removeFirst()
        }
        guard let next else { throw Failure(kind: .refused, message: "the script has no more replies", reason: "script-ended") }
        if streamed {
            var first = true
            for word in next.text.split(separator: " ", omittingEmptySubsequences: false) {
                handlers.onText((first ? "" : " ") + word)
                first = false
            }
        }
        let usage = TokenUsage(inputTokens: next.inputTokens, outputTokens: next.outputTokens,
                               totalTokens: next.inputTokens.flatMap { input in next.outputTokens.map { input + $0 } })
        let finish: FinishReason = switch next.finish ?? "complete" {
        case "maxTokens": .maxTokens
        case "safety": .safety
        default: .complete
        }
        let reply = ChatReply(text: next.text, finish: finish, finishName: next.finish?.uppercased() ?? "STOP", usage: usage, modelVersion: model)
        if finish != .complete { throw CutReply(failure: Failure(kind: .refused, message: "the reply was cut (\(finish))", reason: "\(finish)"), reply: reply) }
        return reply
    }
}
