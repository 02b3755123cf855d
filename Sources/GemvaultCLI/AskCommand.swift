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

/// `ask`: one prompt, its reply on stdout (or `--json`'s one object), the same rules as the chat's.
extension ChatCommand {
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
        /// Whether the request let Google keep it (`"store"`); false unless --store or the setting.
        var store = false
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

        enum CodingKeys: String, CodingKey { case text, model, finishReason, blockReason, usage, cost, interrupted, store, totalTokens, data, thoughts, grounding, urlContext, error }

        func encode(to encoder: Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(text, forKey: .text)
            try container.encode(_model, forKey: .model)
            try container.encode(_finishReason, forKey: .finishReason)
            try container.encode(_blockReason, forKey: .blockReason)
            try container.encode(_usage, forKey: .usage)
            try container.encode(_cost, forKey: .cost)
            try container.encode(interrupted, forKey: .interrupted)
            try container.encode(store, forKey: .store)
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
        guard error.commandPath == ["ask"], arguments.contains(OptionSpec.json.name) else { return }
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
        let prompt = try promptText(call)
        guard !prompt.trimmedWhitespace.isEmpty || !call.values(.attach).isEmpty else {
            throw UsageError("nothing to ask: no prompt was given and stdin held no text", command: call.command,
                             fix: "gemvault ask \"QUESTION\", or pipe text in: git diff | gemvault ask \"review this\"")
        }
        try checkForSecrets(prompt, call)
        let attachments = try attachments(call)
        let schema = try call.value(.schema).map { try StructuredReply.load($0, call) }
        if schema != nil { result.data = .some(nil) }
        let (client, settings, key) = try clientWithKey(call)
        var conversation = try conversation(settings, client, call)
        conversation.generation.responseJSONSchema = schema?.json
        let spending = try SpendGuard(context: call.context, settings: settings, key: key, overBudget: call.flag(.overBudget))
        let showThoughts = conversation.generation.includeThoughts
        if showThoughts { result.thoughts = "" }
        result.model = conversation.model
        result.store = conversation.generation.store
        let request = conversation.request(for: prompt, attachments: attachments)
        let json = call.flag(.json)
        if call.flag(.countTokens) { return try countTokens(request, client, conversation.model, json: json, &result) }
        try spending.check(request, model: conversation.model, provider: client)
        let streaming = !call.flag(.noStream)
        // A structured reply is checked whole before any of it is printed.
        let markdown = schema == nil ? markdownRenderer(call, call.context.style(settings, fd: FileDescriptor.standardOutput.raw)) : nil
        let live = markdown.map { LiveReply(markdown: $0, frame: .labelled(StyledLine()), size: windowSize, reflows: Terminal.reflowsOnResize) }
        // Thought summaries go to stderr, dimmed and labelled, so stdout stays the answer.
        let stderrStyle = call.context.style(settings, fd: FileDescriptor.standardError.raw)
        let printer = ReplyPrinter(spinner: ProgressLine.isWanted, provider: client.displayName, live: live,
                                   thoughts: showThoughts && !json && streaming ? .standardError(stderrStyle) : nil)
        var handlers = printer.handlers()
        // A grounded answer is shown whole: its citation marks are placed by offsets that come last.
        let grounded = conversation.generation.tools.grounds && client.capabilities.grounding
        if json || !streaming || schema != nil || grounded { handlers.onText = { _ in } }
        gv_interrupt_install()
        // A script's `kill` or a closed terminal still gets its JSON object, like Ctrl-C.
        if json { gv_interrupt_install_termination() }
        defer { gv_interrupt_uninstall() }
        let (turn, failure) = try receive(request, client, conversation.model, streaming: streaming, handlers: handlers, printer: printer)
        if showThoughts { showThoughtsAfter(turn, &result, json: json, streaming: streaming, style: stderrStyle) }
        note(turn, in: &result, spending: spending, conversation: conversation, grounded: grounded)
        if json || schema != nil {
            printer.clearSpinner()
        } else {
            if !streaming || grounded { try printer.print(GroundedAnswer.text(turn)) }
            try printer.finish()
            let stdoutStyle = call.context.style(settings, fd: FileDescriptor.standardOutput.raw)
            try Console.out(GroundedAnswer.footer(turn, style: stdoutStyle, hyperlinks: Terminal.showsHyperlinks(environment: call.context.environment),
                                                  columns: Terminal.stdoutIsTerminal ? Terminal.columns : nil))
        }
        keep(turn, of: prompt, attachments: attachments, in: conversation, call, settings)
        if let failure { throw failure }
        if let schema, !turn.interrupted {
            let data = try schema.check(turn.text)
            result.data = .some(data)
            if !json { try Console.out(turn.text.trimmedWhitespace + "\n") }
        }
        try endIfInterrupted(turn, json: json, call, settings)
    }

    /// --count-tokens: what the request would cost in input tokens, and nothing sent.
    private static func countTokens(_ request: ChatRequest, _ client: any ChatProvider, _ model: String, json: Bool,
                                    _ result: inout AskResult) throws {
        let total = try client.countTokens(request, model: model, handlers: StreamHandlers())
        if json { result.totalTokens = total } else { try Console.out("\(total)\n") }
    }

    /// The prompt: the words given, then whatever stdin holds when it is not a terminal.
    private static func promptText(_ call: Invocation) throws -> String {
        var prompt = call.positionals.joined(separator: " ")
        if !Terminal.stdinIsTerminal {
            let input = try readStandardInput()
            if !input.isEmpty { prompt = prompt.isEmpty ? input : prompt + "\n\n" + input }
        }
        return prompt
    }

    /// The reply, streamed or whole; one cut short comes back with why.
    private static func receive(_ request: ChatRequest, _ client: any ChatProvider, _ model: String, streaming: Bool,
                                handlers: StreamHandlers, printer: ReplyPrinter) throws -> (ChatReply, (any ChatFailure)?) {
        do {
            let turn = streaming
                ? try client.stream(request, model: model, handlers: handlers)
                : try client.reply(to: request, model: model, handlers: handlers)
            return (turn, nil)
        } catch let cut as CutReply {
            return (cut.reply, cut.failure)
        } catch {
            try printer.finish()
            throw error
        }
    }

    /// Thought summaries: for --json, and shown whole on stderr when the reply did not stream.
    private static func showThoughtsAfter(_ turn: ChatReply, _ result: inout AskResult, json: Bool, streaming: Bool, style: Style) {
        result.thoughts = turn.thoughts
        if !json && !streaming && !turn.thoughts.isEmpty {
            let columns = Int(gv_terminal_columns(FileDescriptor.standardError.raw))
            Console.err(ThoughtView.whole(turn.thoughts, style: style, columns: Terminal.stderrIsTerminal && columns > 0 ? columns : nil))
        }
    }

    /// What --json reports of the reply (its text, model, finish, usage, cost and grounding),
    /// and the warning a grounded answer may carry.
    private static func note(_ turn: ChatReply, in result: inout AskResult, spending: SpendGuard, conversation: Conversation, grounded: Bool) {
        result.text = turn.text
        result.model = turn.modelVersion ?? conversation.model
        result.finishReason = turn.finishName
        if case .blocked(let reason)? = turn.finish { result.blockReason = reason }
        result.usage = turn.usage
        result.cost = spending.record(turn, requested: conversation.model).map {
            ReplyCost(amount: $0, currency: spending.prices.currency, prices: spending.prices.origin)
        }
        result.interrupted = turn.interrupted
        if grounded {
            result.grounding = turn.grounding ?? Grounding()
            if conversation.generation.tools.urlContext { result.urlContext = turn.urlRetrievals }
            GroundedAnswer.warning(turn).map(Console.warning)
        }
    }

    /// The exchange saved to the history, when the chat's rule keeps it.
    private static func keep(_ turn: ChatReply, of prompt: String, attachments: [Attachment], in conversation: Conversation,
                             _ call: Invocation, _ settings: Settings) {
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
    }

    /// A reply cut by Ctrl-C or a signal: said where a person watches, then the exit it asks for.
    private static func endIfInterrupted(_ turn: ChatReply, json: Bool, _ call: Invocation, _ settings: Settings) throws {
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

    /// Standard input as text (at most 16 MiB), for `git diff | gemvault ask`.
    static func readStandardInput() throws -> String {
        do {
            return String(decoding: try FileDescriptor.standardInput.readAll(limit: 16 << 20), as: UTF8.self)
        } catch {
            throw CommandFailure(.failure, "cannot read standard input (\(error)); the limit is 16 MiB")
        }
    }
}
