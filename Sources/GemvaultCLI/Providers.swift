import Conversations
import GeminiClient
import GoogleHTTP
import Settings
import SystemIO
import VaultCore

/// The chat provider `ask`, `chat` and `models` talk to, chosen in this one place: Gemini,
/// built from the settings and the key. A Swift test passes another (GemvaultTesting's scripted
/// provider) to `GemvaultMain.run(arguments:environment:provider:)`; the binary has no way to.
public struct ProviderChoice: Sendable {
    /// What a provider is built from: the settings in effect, the key and where it came from.
    public struct Setup {
        public let settings: Settings
        public let key: SecretBytes
        public let keyOrigin: String
        public let keyReplaceHint: String
        /// What to suggest when a model is unknown (the chat names /models).
        public var modelsAdvice: String?
        /// Shorter than the settings' own, for a check that must end sooner.
        public var timeout: Double?
        /// A Google identity's token to send instead of the key (`auth` = `google`).
        public var accessToken: (any AccessTokenSource)?
    }

    public let build: @Sendable (Setup) throws -> any ChatProvider
    /// A model name's check without a key, for completion and `--model`.
    public let checkModelName: @Sendable (String) throws -> Void
    /// What the provider knows of a model without asking it (its catalog).
    public let facts: @Sendable (String) -> ModelFacts?
    /// Starts loading what its requests need while the key is resolved.
    public let prepare: @Sendable () -> Void
    /// The first run's check of a pasted key: one cheap request, all of it within `setup.timeout`.
    public let checkKey: @Sendable (Setup) throws -> Void

    public init(build: @escaping @Sendable (Setup) throws -> any ChatProvider, checkModelName: @escaping @Sendable (String) throws -> Void,
                facts: @escaping @Sendable (String) -> ModelFacts? = { _ in nil }, prepare: @escaping @Sendable () -> Void = {},
                checkKey: (@Sendable (Setup) throws -> Void)? = nil) {
        self.build = build
        self.checkModelName = checkModelName
        self.facts = facts
        self.prepare = prepare
        self.checkKey = checkKey ?? { _ = try build($0).chatModels(handlers: StreamHandlers()) }
    }

    /// The one place the chat's Gemini client is made.
    static let gemini = ProviderChoice(build: geminiClient, checkModelName: { _ = try GeminiClient.modelResource($0) }, facts: ModelCatalog.facts(for:),
                                       prepare: GeminiClient.prepareNetwork, checkKey: checkGeminiKey)

    private static func geminiClient(_ setup: Setup) throws -> GeminiClient {
        let client = try GeminiClient(settings: setup.settings, apiKey: setup.key, keyOrigin: setup.keyOrigin, keyReplaceHint: setup.keyReplaceHint,
                                      timeout: setup.timeout, accessToken: setup.accessToken)
        if let advice = setup.modelsAdvice { client.errors.modelsAdvice = advice }
        client.errors.optionAdvice = geminiOptionAdvice
        return client
    }

    /// Lists the models, the cheapest call a key can make; the time limit covers retries too.
    private static func checkGeminiKey(_ setup: Setup) throws {
        let limit = min(setup.timeout ?? setup.settings[.timeout], setup.settings[.timeout])
        let client = try geminiClient(setup)
        let start = Clock.monotonicSeconds()
        do {
            _ = try client.listModels(handlers: StreamHandlers(isCancelled: { Clock.monotonicSeconds() - start > limit }))
        } catch let error as GeminiError where error.category == .interrupted || error.cause == .timeout {
            throw GeminiError(category: .network, message: "the Gemini API at \(client.configuration.endpoint) did not answer within \(Int(limit)) s",
                              cause: .timeout)
        }
    }

    /// Gemini, unless a test chose another for the command it runs.
    @TaskLocal static var current: ProviderChoice = .gemini

    static func isModelName(_ name: String) -> Bool { (try? current.checkModelName(name)) != nil }

    /// What to change when Gemini refuses an option (a 400 that names it), said once for ask and chat.
    static let geminiOptionAdvice = [
        ErrorMapper.OptionAdvice(words: ["include_thoughts", "includethoughts"],
                                 hint: "this model does not think, so it has no thought summaries: leave out --thoughts (in a chat, /thoughts off), or 'gemvault config set show_thoughts off'"),
        // The Developer API's words for any thinkingConfig sent to a model that does not think.
        ErrorMapper.OptionAdvice(words: ["thinking is not enabled"],
                                 hint: "this model does not think: leave out --think, --think-budget and --thoughts (in a chat, /think and /thoughts off), and the 'thinking' and 'show_thoughts' settings"),
        ErrorMapper.OptionAdvice(words: ["thinking_level", "thinking level", "thinkinglevel", "thinking_budget", "thinking budget", "thinkingbudget", "thinking_config"],
                                 hint: "change --think or --think-budget (in a chat, /think), or the 'thinking' setting: this model takes another level or budget, or none",
                                 namesThinkingLevels: true),
        ErrorMapper.OptionAdvice(words: ["google_search", "googlesearch", "search grounding"],
                                 hint: "this model cannot search with Google: leave out --search (in a chat, /search off), or 'gemvault config set search off'"),
        ErrorMapper.OptionAdvice(words: ["url_context", "urlcontext"], hint: "this model cannot read web pages: leave out --url-context"),
        ErrorMapper.OptionAdvice(words: ["code_execution", "codeexecution"], hint: "this model cannot run code: leave out --code"),
        ErrorMapper.OptionAdvice(words: ["response_schema", "response_json_schema", "responsejsonschema", "responseschema"],
                                 hint: "Gemini refused the schema given with --schema: simplify it (fewer nesting levels, no unsupported keywords) or try another model"),
    ]

    /// Before the process exits: a network load `prepare` began must end first.
    static func settle() { GeminiClient.settleNetwork() }

    /// The check a rotation makes of a new key (Gemini's probes), over the given transport.
    static func keyChecker(_ settings: Settings, _ transport: any HTTPTransport) -> any KeyChecker {
        GeminiKeyChecker(settings: settings, transport: transport)
    }

    /// What to say when a reply came from another model than the one asked for (Google routed
    /// the request); nil when the model that ran is the one asked for.
    static func routingNotice(requested: String, served: String) -> String? {
        ModelCatalog.isRouted(requested: requested, served: served) ? ModelCatalog.routingNotice(requested: requested, served: served) : nil
    }
}

extension ChatCommand {
    /// An option the provider cannot honour is a usage error before anything is sent, not a
    /// refusal after: its tools, its kind of thinking, thought summaries.
    static func checkCapabilities(_ generation: GenerationOptions, of provider: any ChatProvider, _ call: Invocation) throws {
        let can = provider.capabilities
        let name = provider.displayName
        let tools = [(generation.tools.search, can.tools.search, "--search (or the 'search' setting)", "search the web"),
                     (generation.tools.urlContext, can.tools.urlContext, "--url-context", "read web pages"),
                     (generation.tools.codeExecution, can.tools.codeExecution, "--code", "run code")]
        for (asked, offered, option, what) in tools where asked && !offered {
            throw UsageError("\(option): \(name) cannot \(what)", command: call.command)
        }
        switch generation.thinking {
        case .level?: if !can.thinking.takesLevels { throw UsageError("--think (or the 'thinking' setting): \(name) takes no thinking level", command: call.command) }
        case .budget?: if !can.thinking.takesBudget { throw UsageError("--think-budget: \(name) takes no thinking budget", command: call.command) }
        case nil: break
        }
        if generation.includeThoughts && !can.thoughtSummaries {
            throw UsageError("--thoughts (or the 'show_thoughts' setting): \(name) sends no thought summaries", command: call.command)
        }
    }
}
