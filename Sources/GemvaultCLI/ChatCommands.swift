import ChatUI
import Conversations
import CSystemShims
import GeminiClient
import KeyResolution
import Rendering
import Settings
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
                and prints it, or exits 8 with the first violation on stderr.
                """,
                privateArguments: true, usesNetwork: true, run: ChatCommand.ask),
    CommandSpec(path: ["models"], arguments: "", argumentRange: 0...0,
                summary: "list the models that support generateContent, with token limits",
                options: [.json, .firstByteTimeout] + keySourceOptions,
                details: "", usesNetwork: true, run: ChatCommand.models),
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

    /// The same, with where the key came from. The one place that picks the provider: Gemini.
    static func clientWithKey(_ call: Invocation, modelsAdvice: String? = nil) throws -> (any ChatProvider, Settings, KeySource) {
        let resolver = try call.context.keyResolver(call)
        let (key, settings) = try resolver.resolve()
        RotationReminder(context: call.context).remind(key: key, settings: settings)
        let configuration = ClientConfiguration(endpoint: try settings.endpoint(.endpoint), apiVersion: settings[.apiVersion], timeout: settings[.timeout],
                                                maxAttempts: settings[.retries] + 1)
        var errors = ErrorMapper(keyOrigin: key.source.label, keyReplaceHint: key.source.replaceHint, keyKind: key.secret.googleKeyKind,
                                 model: settings[.model], apiVersion: settings[.apiVersion])
        if let modelsAdvice { errors.modelsAdvice = modelsAdvice }
        errors.optionAdvice = optionAdvice
        return (GeminiClient(configuration: configuration, apiKey: key.secret, errors: errors), settings, key.source)
    }

    /// What to change when Gemini refuses an option (a 400 that names it), said once for ask and chat.
    static let optionAdvice = [
        ErrorMapper.OptionAdvice(words: ["include_thoughts", "includethoughts"],
                                 hint: "this model does not think, so it has no thought summaries: leave out --thoughts (in a chat, /thoughts off), or 'gemvault config set show_thoughts off'"),
        ErrorMapper.OptionAdvice(words: ["thinking_level", "thinking level", "thinkinglevel", "thinking_budget", "thinking budget", "thinkingbudget", "thinking_config"],
                                 hint: "change --think or --think-budget (in a chat, /think), or the 'thinking' setting: this model takes another level or budget, or none"),
        ErrorMapper.OptionAdvice(words: ["google_search", "googlesearch", "search grounding"],
                                 hint: "this model cannot search with Google: leave out --search (in a chat, /search off), or 'gemvault config set search off'"),
        ErrorMapper.OptionAdvice(words: ["url_context", "urlcontext"], hint: "this model cannot read web pages: leave out --url-context"),
        ErrorMapper.OptionAdvice(words: ["code_execution", "codeexecution"], hint: "this model cannot run code: leave out --code"),
        ErrorMapper.OptionAdvice(words: ["response_schema", "response_json_schema", "responsejsonschema", "responseschema"],
                                 hint: "Gemini refused the schema given with --schema: simplify it (fewer nesting levels, no unsupported keywords) or try another model"),
    ]

    static func conversation(_ settings: Settings, _ provider: any ChatProvider, _ call: Invocation) throws -> Conversation {
        try provider.checkModelName(settings[.model])
        var generation = GenerationOptions(temperature: settings[.temperature], topP: settings[.topP],
                                           topK: settings[.topK], maxOutputTokens: settings[.maxOutputTokens])
        generation.thinking = try thinking(call, settings)
        generation.includeThoughts = call.flag(.thoughts) || settings[.showThoughts]
        generation.tools = ModelTools(search: call.flag(.search) || settings[.search], urlContext: call.flag(.urlContext), codeExecution: call.flag(.code))
        return Conversation(model: settings[.model], systemPrompt: settings[.systemPrompt], generation: generation)
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


    /// `--continue`'s conversation: the chat written to most recently (an `ask` is passed over).
    static func latestChat(_ context: Context, keys: HistoryKeys) throws -> String? {
        let history = context.history
        for id in try history.ids().reversed() {
            // A damaged file is reported when it is the one loaded below, not skipped silently.
            guard (try? history.loadIntact(id, with: keys).meta?.conversationKind) == .ask else { return id }
        }
        return nil
    }

    static func chat(_ call: Invocation) throws {
        let attachments = try attachedFiles(call)
        // A wrong id is found before the key is resolved: it needs no passphrase.
        let resumed = try call.value(.resume).map(call.context.history.resolve)
        let (client, settings, keySource) = try clientWithKey(call, modelsAdvice: "type /models to list the models your key can use")
        let context = call.context
        // A key the unlocked session handed over is the session's: when it is locked, the chat
        // stops using the key and saving turns.
        let keyFromSession = if case .vault = keySource { (try? context.vault.sessionIsOpen()) == true } else { false }
        var conversation = try conversation(settings, client, call)
        var writer: HistoryWriter?
        var system: String?
        if call.flag(.continueChat) || resumed != nil {
            let history = context.history
            let keys = try context.historyKeys()
            guard let id = try resumed ?? latestChat(context, keys: keys) else {
                throw CommandFailure(.failure, "there is no saved chat to continue",
                                     hint: "start one with 'gemvault chat'; 'gemvault chat --resume ID' goes on with any conversation 'gemvault history list' shows")
            }
            let transcript = try history.load(id, with: keys)
            conversation.restore(transcript.turns)
            // The conversation goes on as it was: its model and system instruction, unless given again.
            if call.value(.model) == nil, let model = transcript.currentModel, client.isModelName(model) {
                conversation.model = model
            }
            if call.value(.system) == nil, transcript.currentSystem != nil || transcript.meta?.system != nil {
                conversation.systemPrompt = transcript.systemInEffect
            }
            system = transcript.systemInEffect
            writer = try history.reopen(id, after: transcript)
            Console.note("going on with conversation \(id.prefix(8)) (\(transcript.turns.count) turn\(transcript.turns.count == 1 ? "" : "s"), \(EscapeNeutralizer.neutralize(conversation.model)))")
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
        let spending = try SpendGuard(context: context, settings: settings, keySource: keySource, overBudget: call.flag(.overBudget))
        repl.beforeRequest = { request, model in
            do {
                try spending.check(request, model: model, provider: client)
                return true
            } catch {
                _ = ErrorReport.report(error)
                return false
            }
        }
        repl.afterReply = { usage, model in
            // The conversation so far, once its model has a price.
            guard spending.record(usage, model: model) != nil else { return nil }
            return "this chat: \(spending.conversationTokens) tokens, about \(spending.money(spending.conversationCost))"
        }
        if keyFromSession {
            repl.stopCheck = {
                (try? context.vault.sessionIsOpen()) == true ? nil
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

    /// `ask --json` output: always one object, with `error` set when the request failed.
    struct AskResult: Encodable {
        var text: String = ""
        @Nullable var model: String?
        @Nullable var finishReason: String?
        @Nullable var blockReason: String?
        @Nullable var usage: TokenUsage?
        /// The reply's estimated cost, when its model has a price.
        @Nullable var cost: ReplyCost?
        var interrupted = false
        @Nullable var totalTokens: Int?
        /// With --schema: the reply parsed, once it matched.
        var data: JSONValue??
        /// With --thoughts: the thought summaries, never part of `text`.
        var thoughts: String?
        /// With --search or --url-context: the searches, the sources and which bytes of `text` each supports.
        var grounding: Grounding?
        /// With --url-context: each page asked for and how reading it went.
        var urlContext: [URLRetrieval]?
        @Nullable var error: AskError?

        enum CodingKeys: String, CodingKey { case text, model, finishReason, blockReason, usage, cost, interrupted, totalTokens, data, thoughts, grounding, urlContext, error }

        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(text, forKey: .text)
            try container.encode(_model, forKey: .model)
            try container.encode(_finishReason, forKey: .finishReason)
            try container.encode(_blockReason, forKey: .blockReason)
            try container.encode(_usage, forKey: .usage)
            try container.encode(_cost, forKey: .cost)
            try container.encode(interrupted, forKey: .interrupted)
            try container.encode(_totalTokens, forKey: .totalTokens)
            // Present (null until it matched) only with --schema: the envelope stays as it was otherwise.
            if let data { try container.encode(data ?? .null, forKey: .data) }
            try container.encodeIfPresent(thoughts, forKey: .thoughts)
            try container.encodeIfPresent(grounding, forKey: .grounding)
            try container.encodeIfPresent(urlContext, forKey: .urlContext)
            try container.encode(_error, forKey: .error)
        }
    }

    struct ReplyCost: Encodable {
        let amount: Double
        let currency: String
        let prices: String
    }

    struct AskError: Encodable {
        /// gemvault's exit code.
        let exitCode: Int32
        /// The HTTP status, when the API answered.
        @Nullable var status: Int?
        /// Google's status name, a finish or block reason, or a local reason.
        let reason: String
        let message: String
        @Nullable var hint: String?

        init(exitCode: Int32, reason: String, message: String) {
            self.exitCode = exitCode
            self.reason = reason
            self.message = message
        }

        init(_ error: Error) {
            let (code, message, hint) = ErrorReport.describe(error)
            exitCode = code.rawValue
            let failure = error as? any ChatFailure
            status = failure?.status
            reason = failure?.reason ?? code.reason
            // stdout is not redacted the way stderr is: the text could quote the key.
            self.message = Redaction.redact(message)
            self.hint = hint.map(Redaction.redact)
        }

    }

    /// SIGTERM or SIGHUP ended a reply: the exit code is 128 plus the signal, as if it had killed us.
    struct Terminated: Error {
        let signal: Int32
    }

    /// `ask --json` whose arguments did not parse still gives a script its one object.
    static func reportUsageError(_ error: UsageError, arguments: [String]) throws(StandardOutputFailure) {
        guard error.command?.path == ["ask"], arguments.contains(OptionSpec.json.name) else { return }
        var result = AskResult()
        result.error = AskError(error)
        try Output.json(result, schema: .ask)
    }

    static func ask(_ call: Invocation) throws {
        let json = call.flag(.json)
        var result = AskResult()
        do {
            try askOnce(call, &result)
        } catch let stop as Terminated {
            if json {
                result.interrupted = true
                result.error = AskError(exitCode: 128 + stop.signal, reason: "terminated", message: "stopped by signal \(stop.signal)")
                try Output.json(result, schema: .ask)
            }
            throw ExitStatus(code: 128 + stop.signal)
        } catch {
            // A script reads stdout only: the failure goes there too, then to stderr as usual.
            if json {
                result.error = AskError(error)
                try Output.json(result, schema: .ask)
            }
            throw error
        }
        if json { try Output.json(result, schema: .ask) }
    }

    /// One prompt; `result` is filled for --json as the facts become known.
    private static func askOnce(_ call: Invocation, _ result: inout AskResult) throws {
        var prompt = call.positionals.joined(separator: " ")
        if !Terminal.stdinIsTerminal {
            let input = try readStandardInput()
            if !input.isEmpty { prompt = prompt.isEmpty ? input : prompt + "\n\n" + input }
        }
        guard !prompt.trimmedWhitespace.isEmpty || !call.values(.attach).isEmpty else {
            throw UsageError("nothing to ask: give a prompt or pipe text in", command: call.command)
        }
        try checkForSecrets(prompt, call)
        let attachments = try attachments(call)
        let schema = try call.value(.schema).map { try StructuredReply.load($0, call) }
        if schema != nil { result.data = .some(nil) }
        let (client, settings, keySource) = try clientWithKey(call)
        var conversation = try conversation(settings, client, call)
        conversation.generation.responseJSONSchema = schema?.json
        let spending = try SpendGuard(context: call.context, settings: settings, keySource: keySource, overBudget: call.flag(.overBudget))
        let showThoughts = conversation.generation.includeThoughts
        if showThoughts { result.thoughts = "" }
        result.model = conversation.model
        let request = conversation.request(for: prompt, attachments: attachments)
        let json = call.flag(.json)
        if call.flag(.countTokens) {
            let total = try client.countTokens(request, model: conversation.model, handlers: StreamHandlers())
            if json { result.totalTokens = total } else { try Console.out("\(total)\n") }
            return
        }
        try spending.check(request, model: conversation.model, provider: client)
        let streaming = !call.flag(.noStream)
        // A structured reply is checked whole before any of it is printed.
        let markdown = schema == nil ? markdownRenderer(call, call.context.style(settings, fd: FileDescriptor.standardOutput.raw)) : nil
        let live = markdown.map { LiveReply(markdown: $0, frame: .labelled(StyledLine()), size: windowSize, reflows: Terminal.reflowsOnResize) }
        // Thought summaries go to stderr, dimmed and labelled, so stdout stays the answer.
        let stderrStyle = call.context.style(settings, fd: FileDescriptor.standardError.raw)
        let printer = ReplyPrinter(spinner: ProgressLine.isWanted, live: live,
                                   thoughts: showThoughts && !json && streaming ? .standardError(stderrStyle) : nil)
        var handlers = printer.handlers()
        // A grounded answer is shown whole: its citation marks are placed by offsets that come last.
        let grounded = conversation.generation.tools.grounds
        if json || !streaming || schema != nil || grounded { handlers.onText = { _ in } }
        gv_interrupt_install()
        // A script's `kill` or a closed terminal still gets its JSON object, like Ctrl-C.
        if json { gv_interrupt_install_termination() }
        defer { gv_interrupt_uninstall() }
        var turn: ChatReply
        var failure: (any ChatFailure)?
        do {
            turn = streaming
                ? try client.stream(request, model: conversation.model, handlers: handlers)
                : try client.reply(to: request, model: conversation.model, handlers: handlers)
        } catch let cut as CutReply {
            turn = cut.reply
            failure = cut.failure
        } catch {
            try printer.finish()
            throw error
        }
        if showThoughts {
            result.thoughts = turn.thoughts
            if !json && !streaming && !turn.thoughts.isEmpty { Console.err(stderrStyle.dim("thinking: " + EscapeNeutralizer.neutralize(turn.thoughts)) + "\n") }
        }
        result.text = turn.text
        result.model = turn.modelVersion ?? conversation.model
        result.finishReason = turn.finishName
        if case .blocked(let reason)? = turn.finish { result.blockReason = reason }
        result.usage = turn.usage
        result.cost = spending.record(turn.usage, model: conversation.model).map {
            ReplyCost(amount: $0, currency: spending.prices.currency, prices: spending.prices.origin)
        }
        result.interrupted = turn.interrupted
        if grounded {
            result.grounding = turn.grounding ?? Grounding()
            if conversation.generation.tools.urlContext { result.urlContext = turn.urlRetrievals }
            GroundedAnswer.warning(turn).map(Console.warning)
        }
        if json || schema != nil {
            printer.clearSpinner()
        } else {
            if !streaming || grounded { try printer.print(GroundedAnswer.text(turn)) }
            try printer.finish()
            let stdoutStyle = call.context.style(settings, fd: FileDescriptor.standardOutput.raw)
            try Console.out(GroundedAnswer.footer(turn, style: stdoutStyle, hyperlinks: Terminal.showsHyperlinks(environment: call.context.environment)))
        }
        var saved = conversation
        // The chat's rule for a cut-off reply (ChatReply.isKept): cut at the token limit, it is
        // kept though the exit code says it was cut; filtered or blocked, it is not.
        if let kept = saved.record(user: prompt, attachments: attachments, reply: turn) {
            let (recorder, problem) = call.context.recorder(call, settings: settings, kind: .ask)
            recorder?.record(kept, in: saved, now: Clock.now())
            // Without a vault there is nothing to save to, and a script asking all day needs no
            // reminder; a vault whose history cannot be written is worth a word every time.
            if let problem, call.context.vault.exists { Console.warning(problem) }
        }
        if let failure { throw failure }
        if let schema, !turn.interrupted {
            let data = try schema.check(turn.text)
            result.data = .some(data)
            if !json { try Console.out(turn.text.trimmedWhitespace + "\n") }
        }
        // As in the chat: a reply cut by Ctrl-C says so, where a person watches.
        if turn.interrupted && !json && Terminal.stderrIsTerminal {
            Console.err(call.context.style(settings, fd: FileDescriptor.standardError.raw).yellow("[interrupted]") + "\n")
        }
        if turn.interrupted {
            let signal = gv_interrupt_termination_signal()
            if signal != 0 { throw Terminated(signal: signal) }
            throw ReplyInterrupted(message: json ? "interrupted" : "")
        }
    }

    struct ModelListing: Encodable {
        let name: String
        @Nullable var displayName: String?
        @Nullable var inputTokenLimit: Int?
        @Nullable var outputTokenLimit: Int?
    }

    static func models(_ call: Invocation) throws {
        let (client, _) = try client(call)
        let printer = ReplyPrinter(spinner: ProgressLine.isWanted)
        // The spinner goes before anything else is written, an error line included.
        defer { printer.clearSpinner() }
        let models = try client.chatModels(handlers: printer.handlers())
        printer.clearSpinner()
        let listings = models.map { ModelListing(name: $0.name, displayName: $0.displayName, inputTokenLimit: $0.inputTokenLimit, outputTokenLimit: $0.outputTokenLimit) }
        ModelCache(paths: call.context.paths).save(listings.map(\.name))
        if call.flag(.json) { try Output.json(["models": listings], schema: .models); return }
        let rows = listings.map { [EscapeNeutralizer.neutralize($0.name), $0.inputTokenLimit.map(Output.grouped) ?? "-", $0.outputTokenLimit.map(Output.grouped) ?? "-",
                                   EscapeNeutralizer.neutralize($0.displayName ?? "")] }
        try Console.out(Output.table([["MODEL", "INPUT TOKENS", "OUTPUT TOKENS", "NAME"]] + rows))
    }

    /// Standard input as text (at most 16 MiB), for `git diff | gemvault ask`.
    static func readStandardInput() throws -> String {
        do {
            return String(decoding: try FileDescriptor.standardInput.readAll(limit: 16 << 20), as: UTF8.self)
        } catch {
            throw CommandFailure(.failure, "cannot read standard input (\(error)); the limit is 16 MiB")
        }
    }
}
