@preconcurrency import CEditLine
import CSystemShims
import Conversations
import SystemIO
import GeminiClient
import Glibc
import TerminalIO
import VaultCore

/// The interactive chat: libedit input, streaming replies that Ctrl-C stops, slash commands.
public final class ChatREPL {
    public var conversation: Conversation
    private let client: GeminiClient
    private let style: Style
    private let interactive: Bool
    private let allowSecrets: Bool
    /// Saves each kept turn, when history is on.
    private let recorder: ConversationRecorder?
    /// `chat --bubbles` (or `chat_style`, or `/bubbles`): each message drawn as a bubble, the model's growing as it streams.
    private var bubbles: Bool
    /// Why bubbles are not drawn where the cursor cannot move.
    public static let noBubbles = "bubbles need a terminal that can move the cursor (stdout is not a terminal, or TERM=dumb): the chat is drawn plain"
    /// Replies rendered from markdown (a terminal without --raw), and how.
    private let markdown: MarkdownRenderer?
    private var pendingRetry: (message: String, attachments: [Attachment])?
    /// The last message whose turn failed (no reply kept): what `/retry` sends again.
    private var failedMessage: (message: String, attachments: [Attachment])?
    /// Files that go with the next message (`chat -a`, `/attach`), each file once.
    private var pendingFiles: [AttachmentReader.AttachedFile]
    public var pendingAttachments: [Attachment] { pendingFiles.map(\.attachment) }
    /// Where `/copy` sends its text.
    private let clipboard: TerminalClipboard
    /// Files `/attach` never takes (the passphrase file the command was given).
    private let secretFiles: [AttachmentReader.SecretFile]
    /// Messages refused for holding a credential without a terminal to ask on.
    public private(set) var refusedMessages = 0
    /// Asked before each message is sent: why the chat may no longer send or save (the
    /// session its key came from was locked), or nil to go on.
    public var stopCheck: (() -> String?)?
    /// Why the chat ended on its own, when `stopCheck` said so.
    public private(set) var stopReason: String?

    public init(conversation: Conversation, client: GeminiClient, style: Style, interactive: Bool, allowSecrets: Bool = false,
                recorder: ConversationRecorder? = nil, bubbles: Bool = false, markdown: MarkdownRenderer? = nil,
                attachments: [AttachmentReader.AttachedFile] = [], secretFiles: [AttachmentReader.SecretFile] = [],
                clipboard: TerminalClipboard = TerminalClipboard(environment: [:], outputIsTerminal: false)) {
        self.pendingFiles = attachments
        self.secretFiles = secretFiles
        self.clipboard = clipboard
        self.recorder = recorder
        self.bubbles = bubbles
        self.markdown = markdown
        self.conversation = conversation
        self.client = client
        self.style = style
        self.interactive = interactive
        self.allowSecrets = allowSecrets
    }

    /// The prompt for libedit: escape sequences wrapped in \u{1}…\u{2} so they take no columns.
    var userPrompt: String { promptText("you ›", code: "1;34") + " " }
    var continuationPrompt: String { promptText("…", code: "2") + "    " }

    private func promptText(_ text: String, code: String) -> String {
        guard style.enabled else { return text }
        return "\u{1}\u{1B}[\(code)m\u{2}\(text)\u{1}\u{1B}[0m\u{2}"
    }
    var modelLabel: String { style.bold(style.gray("gemini ›")) + " " }
    /// The label of a live reply, which measures it.
    static let liveModelLabel = StyledLine("gemini ›", style: TextStyle(bold: true, color: 90)) + StyledLine(" ")

    /// The window as it is now: every bubble and redraw is laid out at the width of the moment.
    private static func windowSize() -> TerminalSize { Terminal.size ?? TerminalSize(columns: 80, rows: 24) }

    /// Runs until /exit or Ctrl-D, or until stdout refuses a write (which it throws).
    public func run() throws(StandardOutputFailure) {
        gv_interrupt_install()
        defer { gv_interrupt_uninstall() }
        // libedit needs the locale to handle UTF-8 in prompts and input.
        setlocale(LC_CTYPE, "")
        // Set before libedit initialises (using_history does that), or it is never consulted.
        rl_getc_function = gv_paste_getc
        // Job control and resizes are handled by the getc (gv_edit_signals_begin), which keeps
        // the line; libedit's own handling would end it.
        rl_catch_signals = 0
        rl_catch_sigwinch = 0
        using_history()
        rl_add_defun("gemvault-redraw-after-resize", Self.redrawAfterResize, Self.resizeKey)
        SlashCompletion.install()
        // Bracketed paste: a pasted block arrives between ESC[200~ and ESC[201~ and joins one message.
        bracketedPaste = interactive && Terminal.stdoutIsTerminal
        if bracketedPaste { try Console.out("\u{1B}[?2004h") }
        // Best effort on the way out: a failure is already being reported.
        defer { if bracketedPaste { try? Console.out("\u{1B}[?2004l") } }
        if interactive {
            let banner = "gemvault chat with \(EscapeNeutralizer.neutralize(conversation.model)). Enter sends, \"\"\" starts a multi-line block, /help lists commands, Ctrl-D leaves."
            // Broken between words, never mid-word by the terminal's own wrap.
            Console.err(Terminal.wordWrapped(banner, width: Terminal.size?.columns).split(separator: "\n").map { style.dim(String($0)) }.joined(separator: "\n") + "\n")
            for file in pendingFiles { Console.err("attached \(file.attachment.label); it goes with your first message\n") }
        }
        while true {
            guard let input = try readMessage() else {
                // Ctrl-D: the shell's prompt then starts on its own line.
                if interactive { try Console.out("\n") }
                break
            }
            let trimmed = input.trimmedWhitespace
            if trimmed.isEmpty { continue }
            if trimmed.hasPrefix("/") {
                if !(try slashCommand(trimmed)) { break }
                if let retry = pendingRetry {
                    pendingRetry = nil
                    try send(retry.message, attachments: retry.attachments)
                }
                if stopReason != nil { break }
                continue
            }
            try send(input, attachments: pendingAttachments, typedRows: typedRows)
            if stopReason != nil { break }
        }
    }

    // MARK: Input

    private var bracketedPaste = false
    private static let pasteOff: StaticString = "\u{1B}[?2004l"
    private static let pasteOn: StaticString = "\u{1B}[?2004h"

    /// The rows the message being read took on the screen (prompts, typed and pasted lines),
    /// which a bubble replaces.
    private var typedRows = 0

    /// The rows `columns` columns of text from the left edge take; a full last row puts the
    /// cursor on the next one, as libedit does.
    private static func rows(_ columns: Int) -> Int { columns / max(1, windowSize().columns) + 1 }

    private func readLine(_ prompt: String) -> String?? {
        gv_interrupt_clear()
        if interactive {
            let leave = bracketedPaste ? UnsafeRawPointer(Self.pasteOff.utf8Start).assumingMemoryBound(to: CChar.self) : nil
            let enter = bracketedPaste ? UnsafeRawPointer(Self.pasteOn.utf8Start).assumingMemoryBound(to: CChar.self) : nil
            Self.promptColumns = DisplayWidth.of(Self.visible(prompt))
            Self.editColumns = Self.windowSize().columns
            gv_edit_signals_begin(STDIN_FILENO, rl_forced_update_display, Self.resizeKey, leave, enter)
        }
        let line = readline(prompt)
        if interactive { gv_edit_signals_end() }
        guard let raw = line else {
            // libedit returns NULL for Ctrl-D and, with our handler, for Ctrl-C.
            if gv_interrupt_pending() != 0 { return .some(nil) }
            return nil
        }
        defer { free(raw) }
        let text = String(cString: raw)
        if interactive { typedRows += Self.rows(DisplayWidth.of(Self.visible(prompt)) + DisplayWidth.of(EscapeNeutralizer.neutralize(text))) }
        return .some(text)
    }

    /// The key a resize at the prompt arrives as (from gv_paste_getc), bound to `redrawAfterResize`.
    /// Ctrl-^, which nothing else uses: typed, it only redraws the line.
    static let resizeKey: Int32 = 0x1E
    /// The prompt's columns and the window's width the line was last drawn at, for the redraw.
    nonisolated(unsafe) static var promptColumns = 0
    nonisolated(unsafe) static var editColumns = 80

    /// The line being typed, drawn again after a resize: the cursor goes back to where the prompt
    /// starts (rows counted as the terminal shows the line now), everything below is erased, and
    /// libedit draws prompt and line there at the new width. libedit's own redraw starts
    /// wherever the cursor stands, which printed the prompt and line a second time on its row.
    static let redrawAfterResize: @convention(c) (Int32, Int32) -> Int32 = { _, _ in
        // Called through libedit's key binding, which has just brought rl_point (bytes before
        // the cursor) and rl_line_buffer up to date.
        var before = ""
        if let buffer = rl_line_buffer, rl_point > 0 {
            before = String(decoding: UnsafeRawBufferPointer(start: buffer, count: Int(rl_point)), as: UTF8.self)
        }
        let window = windowSize()
        // A terminal that wraps lines again shows them at the new width; one that cuts them
        // (xterm) keeps the rows they had.
        let width = max(1, Terminal.reflowsOnResize ? window.columns : editColumns)
        let up = min((promptColumns + DisplayWidth.of(before)) / width, max(0, window.rows - 1))
        try? Console.out("\r" + (up > 0 ? "\u{1B}[\(up)A" : "") + "\u{1B}[J")
        rl_resize_terminal()
        rl_forced_update_display()
        editColumns = window.columns
        return 0
    }

    /// A libedit prompt without its invisible parts (escape sequences between \u{1} and \u{2}).
    static func visible(_ prompt: String) -> String {
        var text = ""
        var hidden = false
        for scalar in prompt.unicodeScalars {
            if scalar == "\u{1}" { hidden = true } else if scalar == "\u{2}" { hidden = false } else if !hidden { text.unicodeScalars.append(scalar) }
        }
        return text
    }

    /// One message: a line, a pasted block, or a `"""` block. nil at end of input.
    func readMessage() throws(StandardOutputFailure) -> String? {
        while true {
            typedRows = 0
            guard let line = readLine(interactive ? userPrompt : "") else { return nil }
            guard var text = line else {
                Console.err("\n" + style.dim("(Ctrl-C only stops a reply; type /exit or press Ctrl-D to leave)") + "\n")
                continue
            }
            if let pasted = try takePaste() {
                // The paste joins what was typed before it; Enter on the next line sends it all.
                text += pasted
                while true {
                    guard let next = readLine(interactive ? continuationPrompt : ""), let more = next else { break }
                    if let again = try takePaste() { text += "\n" + more + again; continue }
                    if !more.isEmpty { text += "\n" + more }
                    break
                }
            } else if text.trimmedWhitespace == "\"\"\"" {
                var lines: [String] = []
                while true {
                    guard let next = readLine(interactive ? continuationPrompt : ""), let more = next else { break }
                    if more.trimmedWhitespace == "\"\"\"" { break }
                    lines.append(more)
                }
                text = lines.joined(separator: "\n")
            }
            if !text.isEmpty && SecretScanner.findings(in: text).isEmpty && !text.contains("\n") { add_history(text) }
            return text
        }
    }

    /// The block pasted during the last read, shown on screen since libedit did not draw it.
    private func takePaste() throws(StandardOutputFailure) -> String? {
        guard let raw = gv_paste_take() else { return nil }
        defer { free(raw) }
        let text = String(cString: raw)
        if interactive {
            let shown = EscapeNeutralizer.neutralize(text)
            try Console.out(style.dim(shown) + "\n")
            typedRows += shown.split(separator: "\n", omittingEmptySubsequences: false).reduce(0) { $0 + Self.rows(DisplayWidth.of(String($1))) }
        }
        return text
    }

    // MARK: Sending

    /// Whether a message may go out: one holding something credential-shaped is asked about on a
    /// terminal (default no) and refused otherwise, unless --allow-secrets was given.
    func maySend(_ message: String) -> Bool {
        switch SecretGate.check(message, what: "message", interactive: interactive, allowed: allowSecrets) {
        case .send:
            return true
        case .declined:
            Console.err("not sent\n")
            return false
        case .refused(let what):
            Console.error("not sent: \(what)")
            Console.hint("remove it, or start the chat with --allow-secrets")
            refusedMessages += 1
            return false
        }
    }

    /// Whether an attached file may go out: its text (a PDF's readable parts) is scanned like a message.
    func mayAttach(_ attachment: Attachment) -> Bool {
        guard let text = AttachmentReader.scannedText(attachment) else { return true }
        switch SecretGate.check(text, what: "attached file \(EscapeNeutralizer.neutralize(attachment.name))", interactive: interactive, allowed: allowSecrets) {
        case .send:
            return true
        case .declined:
            Console.err("not attached\n")
            return false
        case .refused(let what):
            Console.error("not attached: \(what)")
            Console.hint("remove it, or start the chat with --allow-secrets")
            refusedMessages += 1
            return false
        }
    }

    /// Sends `message`; `typedRows` are the rows it took as typed just above, which its bubble replaces.
    func send(_ message: String, attachments: [Attachment] = [], typedRows: Int = 0) throws(StandardOutputFailure) {
        if let reason = stopCheck?() {
            stopReason = reason
            return
        }
        // A question about a credential in the message stands between it and the bubble: it stays.
        let typedLinesAbove = typedRows > 0 && SecretScanner.findings(in: message).isEmpty
        guard maySend(message) else { return }
        gv_interrupt_clear()
        // Echo off while the reply streams: keys typed meanwhile wait unseen for the next prompt,
        // which shows them, instead of landing in the reply (an Enter would break its redraw).
        let quiet = interactive && Terminal.stdinIsTerminal && gv_tty_quiet_begin(STDIN_FILENO) == 0
        defer { if quiet { gv_tty_quiet_end() } }
        try showUserMessage(message, attachments: attachments, erasingRows: typedLinesAbove ? typedRows : 0)
        // On a terminal the reply is drawn live: rendered from markdown, or plain in a bubble with --raw.
        let live: LiveReply?
        if bubbles {
            live = LiveReply(markdown: markdown, frame: .bubble(color: style.enabled), size: Self.windowSize, reflows: Terminal.reflowsOnResize)
        } else if let markdown {
            live = LiveReply(markdown: markdown, frame: .labelled(Self.liveModelLabel), size: Self.windowSize, reflows: Terminal.reflowsOnResize)
        } else {
            live = nil
        }
        let printer = ReplyPrinter(spinner: interactive && ProgressLine.isWanted, prefix: modelLabel, live: live)
        // Until a reply is kept, this message is the one `/retry` sends again.
        failedMessage = (message, attachments)
        do {
            let result = try client.streamGenerateContent(model: conversation.model, request: conversation.request(for: message, attachments: attachments),
                                                          handlers: printer.handlers())
            try printer.finish()
            if result.interrupted {
                Console.err(style.yellow("[interrupted]") + "\n")
            }
            if let turn = conversation.record(user: message, attachments: attachments, result: result) {
                recorder?.record(turn, in: conversation, now: Clock.now())
                pendingFiles = []
                failedMessage = nil
            }
        } catch let failure as StandardOutputFailure {
            throw failure
        } catch let partial as PartialReply {
            try printer.finish()
            report(partial.error)
            // A reply cut short by its length is still a reply; one stopped by a filter or a
            // blocked prompt is not, and the conversation stays as it was.
            if partial.error.reason == "MAX_TOKENS" && !partial.result.text.isEmpty,
               let turn = conversation.record(user: message, attachments: attachments, result: partial.result) {
                recorder?.record(turn, in: conversation, now: Clock.now())
                pendingFiles = []
                failedMessage = nil
            }
        } catch let error as GeminiError {
            try printer.finish()
            report(error)
        } catch {
            try printer.finish()
            Console.error("\(error)")
        }
        gv_interrupt_clear()
    }

    /// The user's message as sent: in bubbles, its bubble (with its files) in place of the lines
    /// as typed; plain, the files under the line typed.
    private func showUserMessage(_ message: String, attachments: [Attachment], erasingRows rows: Int) throws(StandardOutputFailure) {
        guard interactive else { return }
        let files = attachments.map { "📎 " + $0.label }
        if bubbles {
            let window = Self.windowSize()
            let layout = BubbleLayout(width: window.columns, color: style.enabled)
            var text = ""
            // Back to the first row typed (as far as the window reaches) and erased from there down.
            let up = min(rows, max(0, window.rows - 1))
            if up > 0 { text += "\r\u{1B}[\(up)A\u{1B}[J" }
            let lines = layout.messageLines(EscapeNeutralizer.neutralize(message), from: .user) + files.map { StyledLine($0, style: TextStyle(dim: true)) }
            text += layout.bubble(lines: lines, from: .user).map { $0.encoded(styled: style.enabled) }.joined(separator: "\n") + "\n"
            try Console.out(text)
        } else if !files.isEmpty {
            try Console.out(files.map { "      " + style.dim($0) }.joined(separator: "\n") + "\n")
        }
    }

    private func report(_ error: GeminiError) {
        if error.category == .interrupted { Console.err(style.yellow("[interrupted]") + "\n"); return }
        Console.error(error.message)
        if let hint = error.hint { Console.hint(hint) }
    }

    // MARK: Slash commands

    static let help = """
    /help               this list
    /model [NAME]       change the model; alone, show it and list the others
    /models             list the models your key can chat with
    /system [TEXT]      show or set the system instruction (/system off removes it)
    /temperature T      set the temperature (0 to 2)
    /attach FILE        send a file with the next message (text, image or PDF)
    /detach             drop the files waiting for the next message
    /bubbles [on|off]   draw messages as bubbles or plain lines (alone, switch)
    /copy               copy the last reply to the clipboard (OSC 52)
    /copy code [N]      copy code block N, as numbered in its frame (default the last)
    /clear              start a new conversation
    /retry              send the last (or the failed) message again
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
            Console.err(Self.help + "\n")
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
            if argument.isEmpty {
                Console.err("model: \(conversation.model)\n")
                listModels()
            }
            else if (try? GeminiClient.modelResource(argument)) == nil { Console.error("'\(argument)' is not a valid model name") }
            else { conversation.model = argument; Console.err("model set to \(argument)\n") }
        case "/system":
            if argument.isEmpty { Console.err("system: \(conversation.systemPrompt ?? "(none)")\n") }
            else if argument == "off" { conversation.systemPrompt = nil; Console.err("system instruction removed\n") }
            else { conversation.systemPrompt = argument; Console.err("system instruction set\n") }
        case "/temperature":
            guard let value = Double(argument), (0...2).contains(value) else {
                Console.error("/temperature takes a number from 0 to 2")
                return true
            }
            conversation.generation.temperature = value
            Console.err("temperature set to \(argument)\n")
        case "/clear":
            conversation.clear()
            recorder?.startNew()
            failedMessage = nil
            // The screen goes too, as `clear` does: the old exchange is no longer the context.
            if interactive && Terminal.stdoutIsTerminal { try Console.out("\u{1B}[H\u{1B}[2J") }
            Console.err("new conversation\n")
        case "/undo":
            if let turn = conversation.undo() {
                recorder?.recordUndo()
                Console.err("removed the last exchange: you › \(Self.excerpt(turn.user))\n")
            } else {
                Console.err("nothing to undo\n")
            }
        case "/retry":
            // A failed turn first: it left no exchange, so undoing one would drop an earlier reply.
            if let failed = failedMessage {
                failedMessage = nil
                pendingRetry = failed
                return true
            }
            guard let turn = conversation.undo() else { Console.err("nothing to retry\n"); return true }
            recorder?.recordUndo()
            pendingRetry = (turn.user, turn.attachments)
        case "/usage":
            if let usage = conversation.lastUsage {
                Console.err("last reply: prompt \(usage.promptTokenCount ?? 0), reply \(usage.candidatesTokenCount ?? 0), thoughts \(usage.thoughtsTokenCount ?? 0), total \(usage.totalTokenCount ?? 0) tokens\n")
            } else {
                Console.err("no reply yet\n")
            }
            Console.err("session: \(conversation.sessionTokens) tokens\n")
        case "/save":
            guard !argument.isEmpty else { Console.error("/save needs a file name"); return true }
            guard !conversation.turns.isEmpty else { Console.err("nothing to save yet: the conversation has no exchange\n"); return true }
            let path = ProcessIdentity.expandingTilde(argument)
            if interactive, FileStatus.of(link: path) != nil, !TerminalQuestion.confirm("\(path) exists. Replace it?") {
                Console.err("not saved\n")
                return true
            }
            if let problem = Self.save(conversation.markdown(), to: path) { Console.error(problem) }
            else { Console.err("saved to \(path)\n") }
        default:
            Console.error("unknown command \(parts[0]); /help lists them")
        }
        return true
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
        let printer = ReplyPrinter(spinner: interactive && ProgressLine.isWanted)
        defer { printer.clearSpinner() }
        do {
            let models = try client.listModels(handlers: printer.handlers()).filter { $0.supportedGenerationMethods?.contains("generateContent") ?? false }
            printer.clearSpinner()
            guard !models.isEmpty else { Console.err("the API lists no model that can chat\n"); return }
            let lines = models.map { ($0.shortName == conversation.model ? "* " : "  ") + EscapeNeutralizer.neutralize($0.shortName) }
            Console.err(lines.joined(separator: "\n") + "\n" + style.dim("/model NAME switches") + "\n")
        } catch let error as GeminiError {
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
    /// the terminal (OSC 52). What is copied is what the screen drew: the neutralised text, its
    /// control, invisible and bidirectional characters as the escapes shown, never as themselves.
    private func copy(_ argument: String) throws(StandardOutputFailure) {
        let words = argument.split(separator: " ").map(String.init)
        guard let reply = conversation.turns.last?.model else { Console.error("there is no reply to copy yet"); return }
        var text = reply
        var what = "the last reply"
        if let first = words.first {
            guard first == "code", words.count <= 2 else { Console.error("/copy takes nothing, or 'code' and a block number: /copy code 2"); return }
            let blocks = MarkdownRenderer.codeBlocks(in: reply)
            guard !blocks.isEmpty else { Console.error("the last reply has no code block"); return }
            let number = words.count == 2 ? Int(words[1]) : blocks.count
            guard let number, (1...blocks.count).contains(number) else {
                Console.error("the last reply has \(blocks.count) code block\(blocks.count == 1 ? "" : "s"); give a number from 1 to \(blocks.count)")
                return
            }
            text = blocks[number - 1]
            what = "code block \(number) of \(blocks.count)"
        }
        if let refusal = clipboard.refusal {
            Console.warning("not copied: \(refusal)")
            return
        }
        let safe = EscapeNeutralizer.neutralize(text)
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
        if safe != text.replacingAll("\r\n", with: "\n") {
            Console.warning("the reply holds control, invisible or bidirectional characters: they were copied as the screen shows them (^[, \\u{200b}), not as sent")
        }
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

extension String {
    func replacingAll(_ target: String, with replacement: String) -> String {
        var result = ""
        var rest = self[...]
        while let range = rest.range(of: target) {
            result += rest[..<range.lowerBound] + replacement
            rest = rest[range.upperBound...]
        }
        return result + rest
    }
}

private extension Substring {
    func range(of target: String) -> Range<Substring.Index>? {
        guard !target.isEmpty else { return nil }
        var index = startIndex
        while index < endIndex {
            if self[index...].hasPrefix(target) { return index..<self.index(index, offsetBy: target.count) }
            index = self.index(after: index)
        }
        return nil
    }
}
