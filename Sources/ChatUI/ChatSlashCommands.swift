@preconcurrency import CEditLine
import CSystemShims
import Conversations
import Rendering
import SystemIO
import Glibc
import TerminalIO
import VaultCore

/// The chat's slash commands: /model, /attach, /copy, /save and the rest.
extension ChatREPL {
    // MARK: Slash commands

    static let help = """
    /help               this list
    /model [NAME]       change the model; alone, show it and list the others
    /models             list the models your key can chat with
    /system [TEXT]      show or set the system instruction (/system off removes it)
    /temperature T      set the temperature (0 to 2; deprecated by Google, ignored by current models)
    /think [LEVEL]      how much the model thinks: minimal, low, medium, high, xhigh, or a token budget (0 off, -1 the model's choice); alone, show it
    /thoughts [on|off]  show the last reply's thought summaries; on/off asks for them with each reply or stops
    /search [on|off]    ground answers in Google Search, with citations and sources; alone, show it
    /store [on|off]     let Google keep the next requests in its logs, or ask it not to (the default); alone, show it
    /attach FILE        send a file with the next message (text, image or PDF)
    /detach             drop the files waiting for the next message
    /bubbles [on|off]   draw messages as bubbles or plain lines (alone, switch)
    /copy               copy the last reply to the clipboard (OSC 52)
    /copy code [N]      copy code block N, as numbered in its frame (default the last)
    /clear              start a new conversation
    /retry              send the last (or the failed) message again (--over-budget: past the budget)
    /over-budget        send the message a budget refused anyway (as /retry --over-budget)
    /budget             what the key spent today and this month, and its budgets
    /undo               remove the last exchange
    /usage              tokens of the last reply and of this session
    /save FILE          write the conversation as Markdown (mode 0600)
    /exit               leave (Ctrl-D works too)
    """

    /// Returns false when the chat should end.
    func slashCommand(_ line: String) throws(StandardOutputFailure) -> Bool {
        let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
        let argument = parts.count > 1 ? parts[1].trimmedWhitespace : ""
        switch parts[0] {
        case "/exit", "/quit":
            return false
        case "/help":
            showHelp()
        case "/attach":
            attach(argument)
        case "/detach":
            Console.err(pendingAttachments.isEmpty ? "no files are waiting\n" : "dropped \(pendingAttachments.count) file\(pendingAttachments.count == 1 ? "" : "s")\n")
            pendingFiles = []
        case "/bubbles":
            switchBubbles(argument)
        case "/copy":
            try copy(argument)
        case "/models":
            listModels()
        case "/model":
            chooseModel(argument)
        case "/system":
            setSystemInstruction(argument)
        case "/temperature":
            setTemperature(argument)
        case "/think":
            setThinking(argument)
        case "/thoughts":
            try thoughts(argument)
        case "/search":
            switchSearch(argument)
        case "/store":
            switchStore(argument)
        case "/clear":
            conversation.clear()
            recorder?.startNew()
            failedMessage = nil
            // The screen goes too, as `clear` does: the old exchange is no longer the context.
            if interactive && Terminal.stdoutIsTerminal { try Console.out("\u{1B}[H\u{1B}[2J") }
            Console.err("new conversation\n")
        case "/undo":
            undoLastExchange()
        case "/budget":
            Console.err((budgetReport?() ?? "no budget is kept for this chat") + "\n")
        case "/over-budget":
            guard let failed = failedMessage else { Console.err("no message was refused\n"); return true }
            overBudget?()
            failedMessage = nil
            pendingRetry = failed
        case "/retry":
            retry(argument)
        case "/usage":
            showUsage()
        case "/save":
            saveConversation(argument)
        default:
            Console.error("unknown command \(parts[0]); /help lists them")
        }
        return true
    }

    /// `/help`, fitted to the window: a description wraps between words under the others.
    private func showHelp() {
        let columns = Int(gv_terminal_columns(STDERR_FILENO))
        Console.err(DisplayWidth.wrapped(Self.help, width: Terminal.stderrIsTerminal && columns > 0 ? columns : nil, indent: 20) + "\n")
    }

    /// `/undo`: the last exchange taken out of the conversation and its history.
    private func undoLastExchange() {
        if let turn = conversation.undo() {
            recorder?.recordUndo()
            Console.err("removed the last exchange: you › \(Self.excerpt(turn.user))\n")
        } else {
            Console.err("nothing to undo\n")
        }
    }

    /// `/usage`: the tokens of the last reply and of the whole session.
    private func showUsage() {
        if let usage = conversation.lastUsage {
            Console.err("last reply: prompt \(usage.inputTokens ?? 0), reply \(usage.outputTokens ?? 0), thoughts \(usage.thinkingTokens ?? 0), total \(usage.totalTokens ?? 0) tokens\n")
        } else {
            Console.err("no reply yet\n")
        }
        Console.err("session: \(conversation.sessionTokens) tokens\n")
    }

    /// `/model`: the model in use and the others, or another one.
    private func chooseModel(_ argument: String) {
        if argument.isEmpty {
            Console.err("model: \(conversation.model)\n")
            listModels()
        }
        else if !client.isModelName(argument) { Console.error("'\(argument)' is not a valid model name") }
        else { conversation.model = argument; Console.err("model set to \(argument)\n") }
    }

    /// `/system`: the system instruction shown, removed (`off`) or set.
    private func setSystemInstruction(_ argument: String) {
        if argument.isEmpty { Console.err("system: \(conversation.systemPrompt ?? "(none)")\n") }
        else if argument == "off" { conversation.systemPrompt = nil; Console.err("system instruction removed\n") }
        else { conversation.systemPrompt = argument; Console.err("system instruction set\n") }
    }

    /// `/temperature`: a number from 0 to 2.
    private func setTemperature(_ argument: String) {
        guard let value = Double(argument), (0...2).contains(value) else {
            Console.error("/temperature takes a number from 0 to 2")
            return
        }
        conversation.generation.temperature = value
        Console.err("temperature set to \(argument) (Google deprecated it on 2026-07-21; current models ignore it)\n")
    }

    /// `/think`: a thinking level, a budget of tokens, or what is asked now.
    private func setThinking(_ argument: String) {
        if argument.isEmpty {
            switch conversation.generation.thinking {
            case .level(let level)?: Console.err("thinking: \(level)\n")
            case .budget(let tokens)?: Console.err("thinking: a budget of \(tokens) tokens\n")
            case nil: Console.err("thinking: the model's default\n")
            }
        } else if ["minimal", "low", "medium", "high", "xhigh"].contains(argument) {
            guard client.capabilities.thinking.takesLevels else { return Console.error("\(client.displayName) takes no thinking level") }
            conversation.generation.thinking = .level(argument)
            Console.err("thinking set to \(argument)\n")
        } else if let tokens = Int(argument), (-1...32_768).contains(tokens) {
            guard client.capabilities.thinking.takesBudget else { return Console.error("\(client.displayName) takes no thinking budget") }
            conversation.generation.thinking = .budget(tokens)
            Console.err("thinking budget set to \(tokens) tokens\n")
        } else {
            Console.error("/think takes minimal, low, medium, high or xhigh, or a number of tokens from 0 to 32768 (-1: the model's choice)")
        }
    }

    /// `/search`: grounding in Google Search on or off.
    private func switchSearch(_ argument: String) {
        switch argument.lowercased() {
        case "": Console.err("search: \(conversation.generation.tools.search ? "on" : "off")\n")
        case "on" where !client.capabilities.tools.search: Console.error("\(client.displayName) cannot search the web")
        case "on", "off":
            conversation.generation.tools.search = argument.lowercased() == "on"
            Console.err(conversation.generation.tools.search ? "search on: answers are grounded in Google Search, shown whole with their sources\n" : "search off\n")
        default: Console.error("/search takes on or off")
        }
    }

    /// `/store`: whether Google may keep the requests.
    private func switchStore(_ argument: String) {
        switch argument.lowercased() {
        case "": Console.err("store: \(conversation.generation.store ? "on: Google may keep the requests" : "off: requests ask Google not to keep them")\n")
        case "on" where !client.capabilities.store:
            Console.err("this endpoint does not take \"store\": whether the requests are kept is the provider's own setting\n")
        case "on", "off":
            conversation.generation.store = argument.lowercased() == "on"
            Console.err(conversation.generation.store ? "store on: Google may keep the next requests and replies in its logs\n"
                                                      : "store off: the next requests ask Google not to keep them\n")
        default: Console.error("/store takes on or off")
        }
    }

    /// `/retry`: the failed message, else the last exchange, sent again.
    private func retry(_ argument: String) {
        if argument == "--over-budget" { overBudget?() } else if !argument.isEmpty { Console.error("/retry takes only --over-budget"); return }
        // A failed turn first: it left no exchange, so undoing one would drop an earlier reply.
        if let failed = failedMessage {
            failedMessage = nil
            pendingRetry = failed
            return
        }
        guard let turn = conversation.undo() else { Console.err("nothing to retry\n"); return }
        recorder?.recordUndo()
        pendingRetry = (turn.user, turn.attachments)
    }

    /// `/save FILE`: the conversation as Markdown.
    private func saveConversation(_ argument: String) {
        guard !argument.isEmpty else { Console.error("/save needs a file name"); return }
        guard !conversation.turns.isEmpty else { Console.err("nothing to save yet: the conversation has no exchange\n"); return }
        let path = ProcessIdentity.expandingTilde(argument)
        if interactive, FileStatus.of(link: path) != nil, !TerminalQuestion.confirm("\(path) exists. Replace it?") {
            Console.err("not saved\n")
            return
        }
        if let problem = Self.save(conversation.markdown(provider: client.displayName), to: path) { Console.error(problem) }
        else { Console.err("saved to \(path)\n") }
    }

    /// `/thoughts`: the last reply's summaries in full; `on`/`off` asks for them from the next message.
    private func thoughts(_ argument: String) throws(StandardOutputFailure) {
        switch argument.lowercased() {
        case "on" where !client.capabilities.thoughtSummaries: Console.error("\(client.displayName) sends no thought summaries")
        case "on", "off":
            conversation.generation.includeThoughts = argument.lowercased() == "on"
            Console.err(argument.lowercased() == "on" ? "thought summaries on: each reply shows them above the answer\n" : "thought summaries off\n")
        case "":
            guard !lastThoughts.isEmpty else {
                Console.err(conversation.generation.includeThoughts ? "the last reply came with no thought summaries\n"
                                                                   : "no thought summaries: '/thoughts on' asks for them with each reply\n")
                return
            }
            try Console.out(ThoughtView.whole(lastThoughts, style: style, columns: Terminal.stdoutIsTerminal ? Terminal.columns : nil))
        default:
            Console.error("/thoughts takes on or off, or nothing to show the last reply's")
        }
    }

    /// `/bubbles [on|off]`: the chat's style from the next message on.
    private func switchBubbles(_ argument: String) {
        let wanted: Bool
        switch argument.lowercased() {
        case "": wanted = !bubbles
        case "on": wanted = true
        case "off": wanted = false
        default:
            Console.error("/bubbles takes on or off (alone, it switches)")
            return
        }
        if wanted && !Terminal.canRedraw {
            Console.note(Self.noBubbles)
            return
        }
        bubbles = wanted
        Console.err("bubbles \(wanted ? "on" : "off")\n")
    }

    /// The start of a message on one line, for "removed …": neutralised, at most 60 characters.
    static func excerpt(_ text: String) -> String {
        let line = EscapeNeutralizer.neutralize(text.split(whereSeparator: \.isNewline).first.map(String.init) ?? "")
        let more = line.count > 60 || text.contains(where: \.isNewline)
        return (line.count > 60 ? String(line.prefix(59)) : line) + (more ? "…" : "")
    }

    /// `/models` (and `/model` alone): the models this key can chat with, the current one marked.
    private func listModels() {
        let printer = ReplyPrinter(spinner: interactive && ProgressLine.isWanted, provider: client.displayName)
        defer { printer.clearSpinner() }
        do {
            let models = try client.chatModels(handlers: printer.handlers())
            printer.clearSpinner()
            guard !models.isEmpty else { Console.err("the API lists no model that can chat\n"); return }
            let lines = models.map { ($0.name == conversation.model ? "* " : "  ") + EscapeNeutralizer.neutralize($0.name) }
            Console.err(lines.joined(separator: "\n") + "\n" + style.dim("/model NAME switches") + "\n")
        } catch let error as any ChatFailure {
            printer.clearSpinner()
            report(error)
        } catch {
            printer.clearSpinner()
            Console.error("\(error)")
        }
    }

    /// `/attach FILE`: checked like `ask -a`, then kept for the next message. Without a file,
    /// lists the waiting ones.
    private func attach(_ argument: String) {
        guard !argument.isEmpty else {
            if pendingFiles.isEmpty { Console.err("no files are waiting; /attach FILE adds one\n") }
            else { Console.err("waiting for the next message: " + pendingAttachments.map(\.label).joined(separator: ", ") + "\n") }
            return
        }
        let path = ProcessIdentity.expandingTilde(argument)
        do throws(AttachmentReader.Failure) {
            let file = try AttachmentReader.readFile(path, secretFiles: secretFiles)
            if let warning = AttachmentReader.duplicate(file, among: pendingFiles) {
                Console.warning(warning)
                return
            }
            let attachment = file.attachment
            try AttachmentReader.checkTotal(pendingAttachments + [attachment])
            guard mayAttach(attachment) else { return }
            pendingFiles.append(file)
            Console.err("attached \(attachment.label); it goes with your next message\n")
        } catch {
            Console.error(error.message)
            if let hint = error.hint { Console.hint(hint) }
        }
    }

    /// `/copy` and `/copy code [N]`: the last reply's text, or one of its code blocks, through
    /// the terminal (OSC 52). What is copied is what the screen drew: the reply rendered from
    /// markdown (or the text as it came with --raw), its control, invisible and bidirectional
    /// characters as the escapes shown, never as themselves; words the parser took unseen (a
    /// link's title, a reference definition) are not copied. A warning says when it differs.
    private func copy(_ argument: String) throws(StandardOutputFailure) {
        guard let choice = copyChoice(argument) else { return }
        let (safe, sent, what, undrawn) = choice
        if let refusal = clipboard.refusal {
            Console.warning("not copied: \(refusal)")
            return
        }
        guard safe.utf8.count <= TerminalClipboard.maxBytes else {
            Console.warning("not copied: \(what) has \(safe.utf8.count) bytes, more than a terminal's clipboard takes (\(TerminalClipboard.maxBytes >> 10) KiB); use /save")
            return
        }
        let enable = "turn it on with 'tmux set -g set-clipboard on', and keep it with the line 'set -g set-clipboard on' in ~/.tmux.conf"
        switch clipboard.multiplexer {
        case .tmuxDrops(let setting):
            Console.warning("not copied: tmux drops a program's clipboard escape (OSC 52) while its set-clipboard option is '\(setting)' (tmux's default is 'external')")
            Console.hint(enable)
            return
        case .tmuxUnknown:
            try Console.out(TerminalClipboard.sequence(for: safe))
            Console.err("sent \(what) (\(safe.count) characters) to tmux for the clipboard; it gets there only if tmux's set-clipboard option is 'on' (its default, 'external', drops it)\n")
            Console.hint(enable)
        case .tmuxPassesOn:
            try Console.out(TerminalClipboard.sequence(for: safe))
            Console.err("copied \(what) (\(safe.count) characters) to the clipboard through tmux (set-clipboard on)\n")
        case .none:
            try Console.out(TerminalClipboard.sequence(for: safe))
            Console.err("copied \(what) (\(safe.count) characters) to the clipboard through the terminal\n")
        }
        // What the screen drew is what was copied; say so when the reply itself held more.
        if EscapeNeutralizer.neutralize(sent) != sent.replacing("\r\n", with: "\n") {
            Console.warning("the reply holds control, invisible or bidirectional characters: they were copied as the screen shows them (^[, \\u{200b}), not as sent")
        }
        if !undrawn.isEmpty {
            let sample = undrawn.prefix(8).joined(separator: " ") + (undrawn.count > 8 ? " …" : "")
            Console.warning("the reply holds \(undrawn.count) word\(undrawn.count == 1 ? "" : "s") the screen did not draw (a link's title, a reference definition, a fence's info or a table cell past its header): '\(sample)'; they were not copied")
        }
    }

    /// What `/copy ARGUMENT` copies, as drawn; what it was as sent; its name; the words not drawn.
    /// Nil after saying why there is nothing to copy.
    private func copyChoice(_ argument: String) -> (safe: String, sent: String, what: String, undrawn: [String])? {
        let words = argument.split(separator: " ").map(String.init)
        guard let reply = conversation.turns.last?.model else { Console.error("there is no reply to copy yet"); return nil }
        guard let first = words.first else {
            // With --raw the screen drew the text as it came.
            guard let markdown else { return (EscapeNeutralizer.neutralize(reply), reply, "the last reply", []) }
            let drawn = markdown.drawnText(reply)
            return (drawn, reply, "the last reply", MarkdownRenderer.undrawnWords(in: reply, drawn: drawn))
        }
        guard first == "code", words.count <= 2 else { Console.error("/copy takes nothing, or 'code' and a block number: /copy code 2"); return nil }
        let blocks = MarkdownRenderer.codeBlocks(in: reply)
        guard !blocks.isEmpty else { Console.error("the last reply has no code block"); return nil }
        let number = words.count == 2 ? Int(words[1]) : blocks.count
        guard let number, (1...blocks.count).contains(number) else {
            Console.error("the last reply has \(blocks.count) code block\(blocks.count == 1 ? "" : "s"); give a number from 1 to \(blocks.count)")
            return nil
        }
        // The block as it came, when the reply as it came has the same blocks: to tell what neutralising changed.
        let asSent = MarkdownRenderer.codeBlocks(in: reply, asDrawn: false)
        return (blocks[number - 1], asSent.count == blocks.count ? asSent[number - 1] : reply, "code block \(number) of \(blocks.count)", [])
    }

    /// Writes a new private file (0600) renamed over `path`; refuses a symlink, a file of
    /// another user, or anything that is not a regular file there.
    static func save(_ text: String, to path: String) -> String? {
        do throws(TrustedOpenError) {
            try TrustedFile.savePrivate(path, Array(text.utf8))
            return nil
        } catch {
            switch error {
            case .refused(let failure): return "\(failure.message); \(failure.fix)"
            case .failed(let system): return "cannot write \(path): \(system.reason)"
            }
        }
    }
}
