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
        client.errors.optionAdvice = ErrorMapper.OptionAdvice.gemvault
        return client
    }

    /// The first run's check: the shorter of the check's limit and the `timeout` setting.
    private static func checkGeminiKey(_ setup: Setup) throws {
        try geminiClient(setup).checkKey(within: min(setup.timeout ?? setup.settings[.timeout], setup.settings[.timeout]))
    }

    /// Gemini, unless a test chose another for the command it runs.
    @TaskLocal static var current: ProviderChoice = .gemini

    static func isModelName(_ name: String) -> Bool { (try? current.checkModelName(name)) != nil }

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
    /// An option the provider cannot honour is a usage error before anything is sent (Conversations decides).
    static func checkCapabilities(_ generation: GenerationOptions, of provider: any ChatProvider, _ call: Invocation) throws {
        if let refusal = provider.capabilities.refusal(of: generation, provider: provider.displayName) { throw UsageError(refusal, command: call.command) }
    }
}
