import ChatUI
import Conversations
import CSystemShims
import KeyResolution
import Rendering
import Settings
import Spending
import SystemIO
import TerminalIO
import VaultCore

let chatCommands: [CommandSpec] = [
    CommandSpec(path: ["chat"], arguments: "", argumentRange: 0...0,
                summary: "chat with Gemini (Ctrl-C stops a reply, Ctrl-D leaves)",
                options: generationOptions + toolOptions + keySourceOptions + [.attach, .keepAttachments, .allowSecrets, .noSave, .continueChat, .resume, .bubbles, .rawReply, .thoughts, .overBudget],
                details: """
                Type /help inside the chat for its commands. Multi-line input: paste it, or open and close a block with \"\"\".
                Files given with -a go with the first message; /attach FILE adds one to the next.
                """,
                usesNetwork: true, run: ChatCommand.chat),
    CommandSpec(path: ["ask"], arguments: "[PROMPT...]", argumentRange: 0...Int.max,
                summary: "ask once and stream the answer to stdout (stdin is added to the prompt)",
                options: generationOptions + toolOptions + keySourceOptions + [.attach, .keepAttachments, .noStream, .countTokens, .allowSecrets, .noSave,
                                                                 .rawReply, .schema, .thoughts, .overBudget, .json],
                details: """
                Example: git diff | gemvault ask "review this"
                Attached files: text goes inline under its name; PNG, JPEG, WebP, GIF, HEIC, HEIF and PDF files go as inline data, \
                told apart by their first bytes. A file may have 10 MiB, a message's files 14 MiB together (Gemini takes 20 MB a request). \
                Directories, devices, FIFOs and sockets are refused, and text files are scanned for credentials like the prompt.
                With --json, stdout always carries one JSON object, also when the request fails (see Docs/cli.md).
                With --schema FILE (a JSON Schema), Gemini answers in JSON shaped by it; gemvault checks the reply against the schema itself \
                and prints it, or exits 8 with the first violation on stderr (or, when the check would take more than \
                5,000,000 steps or 10 seconds, with a message that it stopped). Patterns run without backtracking; \
                backreferences, lookaround, groups nested more than 256 deep, a pattern whose repetitions come to more than \
                20,000 steps, and a $ref back to the same value are refused (exit 64), before any request.
                """,
                privateArguments: true, usesNetwork: true, run: ChatCommand.ask),
    CommandSpec(path: ["models"], arguments: "", argumentRange: 0...0,
                summary: "list the models that support generateContent, with token limits, thinking levels, stage and prices",
                options: [.json, .firstByteTimeout] + keySourceOptions,
                details: """
                THINKING: the thinking levels a model takes (budget: a token budget instead), from gemvault's catalog of December 2026, \
                else the API's word. STAGE: GA, preview, released, retired or alias, and the model that serves a retired id. \
                PRICE TODAY and FROM 2027-01-01: input/output per million tokens from the price table ('gemvault prices').
                """, usesNetwork: true, run: ChatCommand.models),
]

enum ChatCommand {
    /// A prompt holding something credential-shaped is sent only when the user says so: asked
    /// on a terminal (default no), refused otherwise unless --allow-secrets.
    static func checkForSecrets(_ text: String, _ call: Invocation, what subject: String = "prompt") throws {
        switch SecretGate.check(text, what: subject, interactive: Terminal.stdinIsTerminal, allowed: call.flag(.allowSecrets)) {
        case .send: return
        case .declined: throw CommandFailure(.failure, "not sent", hint: "remove the secret, or pass --allow-secrets")
        case .refused(let what): throw CommandFailure(.failure, "not sent: \(what)", hint: "remove it, or pass --allow-secrets to send it anyway")
        }
    }

    /// The files of `-a`, read and checked before anything is asked or sent; a key inside a
    /// text file is handled like one in the prompt. A file given twice is sent once, with a warning.
    static func attachedFiles(_ call: Invocation) throws -> [AttachmentReader.AttachedFile] {
        let paths = call.values(.attach).map(ProcessIdentity.expandingTilde)
        guard !paths.isEmpty else { return [] }
        let files: [AttachmentReader.AttachedFile]
        do {
            let read = try AttachmentReader.read(paths, secretFiles: secretFiles(call.context))
            read.warnings.forEach(Console.warning)
            files = read.files
        } catch {
            throw CommandFailure(.failure, error.message, hint: error.hint)
        }
        for (name, text) in AttachmentReader.scannedText(files.map(\.attachment)) {
            try checkForSecrets(text, call, what: "attached file \(EscapeNeutralizer.neutralize(name))")
        }
        return files
    }

    static func attachments(_ call: Invocation) throws -> [Attachment] { try attachedFiles(call).map(\.attachment) }

    /// The passphrase files this command was given: never attached, whatever they hold.
    static func secretFiles(_ context: Context) -> [AttachmentReader.SecretFile] {
        [OptionSpec.passphraseFile, .newPassphraseFile].compactMap { option in
            context.options.value(option).map { AttachmentReader.SecretFile(path: ProcessIdentity.expandingTilde($0), role: "the passphrase file \(option.name) names") }
        }
    }

    /// Resolves the key and settings, then builds the provider.
    static func client(_ call: Invocation) throws -> (any ChatProvider, Settings) {
        let (client, settings, _) = try clientWithKey(call)
        return (client, settings)
    }

    /// The same, with where the key came from; the provider is the one `ProviderChoice` picks.
    static func clientWithKey(_ call: Invocation, modelsAdvice: String? = nil) throws -> (any ChatProvider, Settings, ResolvedKey) {
        let resolver = try call.context.keyResolver(call)
        let (key, settings, identity) = try KeylessCommand.resolve(resolver, call)
        if identity == nil { call.context.rotationReminder.remind(key: key, settings: settings, warn: { Console.warning($0) }) }
        var setup = ProviderChoice.Setup(settings: settings, key: key.secret, keyOrigin: key.source.label, keyReplaceHint: key.source.replaceHint,
                                         modelsAdvice: modelsAdvice)
        setup.accessToken = identity
        return (try ProviderChoice.current.build(setup), settings, key)
    }

    static func conversation(_ settings: Settings, _ provider: any ChatProvider, _ call: Invocation) throws -> Conversation {
        try provider.checkModelName(settings[.model])
        var generation = GenerationOptions(temperature: settings[.temperature], topP: settings[.topP],
                                           topK: settings[.topK], maxOutputTokens: settings[.maxOutputTokens])
        generation.thinking = try checkedThinking(try thinking(call, settings), model: settings[.model], call)
        generation.includeThoughts = call.flag(.thoughts) || settings[.showThoughts]
        generation.tools = ModelTools(search: call.flag(.search) || settings[.search], urlContext: call.flag(.urlContext), codeExecution: call.flag(.code))
        generation.store = call.flag(.store) || settings[.store]
        try checkCapabilities(generation, of: provider, call)
        if !provider.capabilities.store {
            Console.note("this endpoint does not take \"store\": whether Google keeps the requests is its project's logging setting")
        }
        warnOfDeprecatedSampling(settings)
        var conversation = Conversation(model: settings[.model], systemPrompt: settings[.systemPrompt], generation: generation)
        conversation.sendsSignatures = provider.capabilities.signatures
        return conversation
    }

    /// Google deprecated the sampling parameters on 2026-07-21 (current models ignore them):
    /// they are sent only when set, and a set one is named once, with where it was set.
    static func warnOfDeprecatedSampling(_ settings: Settings) {
        let set = [Setting.temperature.name, Setting.topP.name, Setting.topK.name].map { settings[$0] }.filter { $0.value != nil }
        guard !set.isEmpty else { return }
        let named = set.map { "\($0.name) (\($0.origin.label))" }.joined(separator: ", ")
        Console.warning("\(named): Google deprecated temperature, top_p and top_k on 2026-07-21 and current models ignore them; they are still sent")
    }

    /// A thinking level the model refuses with a 400 (`minimal` on 3.7/3.8 Flash, the Pro and
    /// Gemini 4 models; `xhigh` but on Neon and Hydrogen) is sent as the nearest it takes, with a
    /// note; with --strict it is a usage error instead.
    static func checkedThinking(_ thinking: GenerationOptions.Thinking?, model: String, _ call: Invocation) throws -> GenerationOptions.Thinking? {
        guard case .level(let level)? = thinking, let facts = ProviderChoice.current.facts(model), let replacement = facts.replacement(for: level) else {
            return thinking
        }
        let levels = facts.levels.joined(separator: ", ")
        let shown = EscapeNeutralizer.neutralize(model)
        if call.flag(.strict) {
            throw UsageError("\(shown) does not take the thinking level '\(level)' (Google refuses it with 400); it takes \(levels)", command: call.command)
        }
        Console.note("\(shown) does not take the thinking level '\(level)' (it takes \(levels)): '\(replacement)' is sent instead (--strict refuses)")
        return .level(replacement)
    }

    /// --think-budget over --think or the `thinking` setting; both flags are refused, as Gemini
    /// refuses a level and a budget together.
    static func thinking(_ call: Invocation, _ settings: Settings) throws -> GenerationOptions.Thinking? {
        guard let text = call.value(.thinkBudget) else { return settings[.thinking].map { .level($0) } }
        if call.value(.think) != nil { throw UsageError("give --think or --think-budget, not both (Gemini refuses a level and a budget together)", command: call.command) }
        guard let tokens = Int(text), (-1...32_768).contains(tokens) else {
            throw UsageError("--think-budget takes a number of tokens from 0 to 32768, or -1 for the model's choice, not '\(text)'", command: call.command)
        }
        return .budget(tokens)
    }

    /// Markdown is rendered only on a terminal that can redraw (not TERM=dumb) and without
    /// --raw or --json: piped output is never styled.
    static func markdownRenderer(_ call: Invocation, _ style: Style) -> MarkdownRenderer? {
        guard Terminal.canRedraw, !call.flag(.rawReply), !(call.command.offers(.json) && call.flag(.json)) else { return nil }
        return MarkdownRenderer(styled: style.enabled)
    }

    /// The window as it is now, read again for every redraw.
    static func windowSize() -> TerminalSize { Terminal.size ?? .fallback }

    static func chat(_ call: Invocation) throws {
        let attachments = try attachedFiles(call)
        // A wrong id is found before the key is resolved: it needs no passphrase.
        let resumed = try call.value(.resume).map(call.context.history.resolve)
        let (client, settings, key) = try clientWithKey(call, modelsAdvice: "type /models to list the models your key can use")
        let keySource = key.source
        let context = call.context
        // A key the unlocked session handed over is the session's: when it is locked, the chat
        // stops using the key and saving turns.
        let keyFromSession = if case .vault = keySource { context.vault.answeredBySession } else { false }
        var conversation = try conversation(settings, client, call)
        var writer: HistoryWriter?
        var system: String?
        if call.flag(.continueChat) || resumed != nil {
            (writer, system) = try goOn(with: &conversation, resumed: resumed, client: client, call)
        }
        let (recorder, notice) = context.recorder(call, settings: settings, kind: .chat, resuming: writer, system: system)
        if let notice { Console.note(notice) }
        let chatStyle = context.style(settings, fd: FileDescriptor.standardOutput.raw)
        // Bubbles are frames, not colours: NO_COLOR draws them without colour. They need a
        // terminal that can move the cursor; asked for where there is none, the chat says so.
        let wantsBubbles = call.flag(.bubbles) || settings[.chatStyle] == .bubbles
        let bubbles = wantsBubbles && Terminal.canRedraw
        if wantsBubbles && !bubbles && (call.flag(.bubbles) || Terminal.stdoutIsTerminal) { Console.note(ChatREPL.noBubbles) }
        let repl = ChatREPL(conversation: conversation, client: client, style: chatStyle,
                            interactive: Terminal.stdinIsTerminal, allowSecrets: call.flag(.allowSecrets), recorder: recorder,
                            bubbles: bubbles, markdown: markdownRenderer(call, chatStyle), attachments: attachments,
                            secretFiles: secretFiles(context),
                            clipboard: TerminalClipboard(environment: context.helperEnvironment, outputIsTerminal: Terminal.stdoutIsTerminal))
        repl.hyperlinks = Terminal.showsHyperlinks(environment: context.environment)
        let spending = try SpendGuard(context: context, settings: settings, key: key, overBudget: call.flag(.overBudget))
        spending.overBudgetAdvice = "type /over-budget (or /retry --over-budget) to send it anyway"
        watchSpending(spending, in: repl, client: client)
        if keyFromSession {
            repl.stopCheck = {
                context.vault.sessionStillOpen() ? nil
                    : "the session was locked ('gemvault lock', or its time limit): the chat stopped, as its key came from the session; nothing more was sent or saved"
            }
        }
        try repl.run()
        if let reason = repl.stopReason {
            throw CommandFailure(.failure, reason, hint: "'gemvault unlock', then 'gemvault chat --continue' goes on with this conversation")
        }
        if repl.refusedMessages > 0 {
            throw CommandFailure(.failure, "\(repl.refusedMessages) message\(repl.refusedMessages == 1 ? " was" : "s were") not sent for holding what looks like a credential",
                                 hint: "pass --allow-secrets to send such messages")
        }
    }

    /// Goes on with a saved chat (`--continue`, `--resume`): its turns, and its model and system
    /// instruction unless given again; the writer that appends to it and the instruction in effect.
    private static func goOn(with conversation: inout Conversation, resumed: String?, client: any ChatProvider,
                             _ call: Invocation) throws -> (HistoryWriter?, String?) {
        let context = call.context
        let history = context.history
        let keys = try context.historyKeys()
        guard let id = try resumed ?? history.latestChat(with: keys) else {
            throw CommandFailure(.failure, "there is no saved chat to continue",
                                 hint: "start one with 'gemvault chat'; 'gemvault chat --resume ID' goes on with any conversation 'gemvault history list' shows")
        }
        let transcript = try history.load(id, with: keys)
        conversation.goOn(with: transcript, modelGiven: call.value(.model) != nil, systemGiven: call.value(.system) != nil, isModelName: client.isModelName)
        let writer = try history.reopen(id, after: transcript)
        Console.note("going on with conversation \(id.prefix(8)) (\(transcript.turns.count) turn\(transcript.turns.count == 1 ? "" : "s"), \(conversation.model))")
        return (writer, transcript.systemInEffect)
    }

    /// The budget checked before each request, and the chat's spending shown after each reply.
    private static func watchSpending(_ spending: SpendGuard, in repl: ChatREPL, client: any ChatProvider) {
        repl.beforeRequest = { request, model in
            defer { spending.overBudgetOnce = false }
            do {
                try spending.check(request, model: model, provider: client)
                return true
            } catch {
                _ = ErrorReport.report(error)
                return false
            }
        }
        repl.overBudget = { spending.overBudgetOnce = true }
        repl.budgetReport = { spending.report() }
        repl.afterReply = { reply, model in
            // The conversation so far, once its model has a price.
            guard spending.record(reply, requested: model) != nil else { return nil }
            return "this chat: \(spending.conversationTokens) tokens, about \(spending.money(spending.conversationCost))"
        }
    }

    struct ModelListing: Encodable {
        let name: String
        @Nullable var displayName: String?
        @Nullable var inputTokenLimit: Int?
        @Nullable var outputTokenLimit: Int?
        /// The API's word on thinking, else gemvault's catalog; null when neither knows.
        @Nullable var thinking: Bool?
        /// The thinking levels the model takes (empty: a budget instead); null when unknown.
        @Nullable var thinkingLevels: [String]?
        /// GA, preview, released, retired or alias, from gemvault's catalog.
        @Nullable var stage: String?
        @Nullable var servedBy: String?
        @Nullable var servedSince: String?
        /// Input and output per million tokens today and on 2027-01-01 (the price table's currency).
        @Nullable var priceToday: ModelPriceListing?
        @Nullable var price2027: ModelPriceListing?
    }

    struct ModelPriceListing: Encodable {
        let input: Double
        let output: Double
    }

    static func models(_ call: Invocation) throws {
        let (client, settings) = try client(call)
        let printer = ReplyPrinter(spinner: ProgressLine.isWanted, provider: client.displayName)
        // The spinner goes before anything else is written, an error line included.
        defer { printer.clearSpinner() }
        let models = try client.chatModels(handlers: printer.handlers())
        printer.clearSpinner()
        let prices = try SpendGuard.prices(settings)
        let listings = models.map { listing($0, prices: prices) }
        ModelCache(paths: call.context.paths).save(listings.map(\.name))
        if call.flag(.json) { try Output.json(["models": listings], schema: .models); return }
        func price(_ price: ModelPriceListing?) -> String {
            price.map { "\(SpendGuard.money($0.input, currency: prices.currency))/\(SpendGuard.money($0.output, currency: prices.currency))" } ?? "-"
        }
        let rows = listings.map { model -> [String] in
            let thinking = model.thinkingLevels.map { $0.isEmpty ? "budget" : $0.joined(separator: ",") } ?? model.thinking.map { $0 ? "yes" : "no" } ?? "?"
            let stage = model.servedBy.map { "\(model.stage ?? "retired") → \($0)" } ?? model.stage ?? "-"
            return [model.name, model.inputTokenLimit.map(Output.grouped) ?? "-", model.outputTokenLimit.map(Output.grouped) ?? "-", thinking, stage,
                    price(model.priceToday), price(model.price2027)].map(EscapeNeutralizer.neutralize)
        }
        try Console.out(Output.table([["MODEL", "INPUT TOKENS", "OUTPUT TOKENS", "THINKING", "STAGE", "PRICE TODAY", "FROM 2027-01-01"]] + rows,
                                     columns: Output.windowColumns()))
    }

    /// One model of the API's list, with what gemvault's catalog and price table say of it.
    static func listing(_ model: ChatModel, prices: PriceTable) -> ModelListing {
        let facts = ProviderChoice.current.facts(model.name)
        func price(on day: UsageDay) -> ModelPriceListing? { prices.price(of: model.name, on: day).map { ModelPriceListing(input: $0.input, output: $0.output) } }
        return ModelListing(name: model.name, displayName: model.displayName, inputTokenLimit: model.inputTokenLimit, outputTokenLimit: model.outputTokenLimit,
                            thinking: model.thinking ?? facts.map { _ in true }, thinkingLevels: facts?.levels, stage: facts?.stage.rawValue,
                            servedBy: facts?.servedBy, servedSince: facts?.since, priceToday: price(on: UsageDay(seconds: Clock.now())),
                            price2027: price(on: UsageDay(year: 2027, month: 1, day: 1)))
    }
}
