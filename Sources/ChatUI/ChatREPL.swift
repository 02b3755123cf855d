@preconcurrency import CEditLine
import CSystemShims
import Conversations
import Rendering
import SystemIO
import Glibc
import TerminalIO
import VaultCore

/// The interactive chat: libedit input, streaming replies that Ctrl-C stops, slash commands.
public final class ChatREPL {
    public var conversation: Conversation
    let client: any ChatProvider
    let style: Style
    let interactive: Bool
    private let allowSecrets: Bool
    /// Saves each kept turn, when history is on.
    let recorder: ConversationRecorder?
    /// `chat --bubbles` (or `chat_style`, or `/bubbles`): each message drawn as a bubble, the model's growing as it streams.
    var bubbles: Bool
    /// Why bubbles are not drawn where the cursor cannot move.
    public static let noBubbles = "bubbles need a terminal that can move the cursor (stdout is not a terminal, or TERM=dumb): the chat is drawn plain"
    /// Replies rendered from markdown (a terminal without --raw), and how.
    let markdown: MarkdownRenderer?
    var pendingRetry: (message: String, attachments: [Attachment])?
    /// The last message whose turn failed (no reply kept): what `/retry` sends again.
    var failedMessage: (message: String, attachments: [Attachment])?
    /// Files that go with the next message (`chat -a`, `/attach`), each file once.
    var pendingFiles: [AttachmentReader.AttachedFile]
    public var pendingAttachments: [Attachment] { pendingFiles.map(\.attachment) }
    /// Where `/copy` sends its text.
    let clipboard: TerminalClipboard
    /// Files `/attach` never takes (the passphrase file the command was given).
    let secretFiles: [AttachmentReader.SecretFile]
    /// Messages refused for holding a credential without a terminal to ask on.
    public private(set) var refusedMessages = 0
    /// Asked before each message is sent: why the chat may no longer send or save (the
    /// session its key came from was locked), or nil to go on.
    public var stopCheck: (() -> String?)?
    /// Why the chat ended on its own, when `stopCheck` said so.
    public private(set) var stopReason: String?
    /// Whether the terminal shows OSC 8 hyperlinks (a grounded answer's sources link there).
    public var hyperlinks = false
    /// The thought summaries of the last reply, for `/thoughts`.
    var lastThoughts = ""
    /// Asked before each request with the model: false keeps it from being sent (a budget it
    /// would pass), the reason already said.
    public var beforeRequest: ((ChatRequest, String) -> Bool)?
    /// Told of each reply and the model asked for; returns the status line to show under it, if any.
    public var afterReply: ((ChatReply, String) -> String?)?
    /// `/over-budget`, `/retry --over-budget`: lets the next request past the budget check once.
    public var overBudget: (() -> Void)?
    /// `/budget`: today's and this month's spending and the limits, read afresh.
    public var budgetReport: (() -> String)?

    public init(conversation: Conversation, client: any ChatProvider, style: Style, interactive: Bool, allowSecrets: Bool = false,
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
    var modelLabel: String { style.bold(style.gray(client.replyLabel)) + " " }
    /// The label of a live reply, which measures it.
    static func liveModelLabel(_ label: String) -> StyledLine { StyledLine(label, style: TextStyle(bold: true, color: 90)) + StyledLine(" ") }

    /// The window as it is now: every bubble and redraw is laid out at the width of the moment.
    private static func windowSize() -> TerminalSize { Terminal.size ?? .fallback }

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
    nonisolated(unsafe) static var editColumns = TerminalSize.fallback.columns

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
        // A question about a credential in the message, or a warning printed after Enter (a
        // budget not checked), stands between it and the bubble: it stays, the bubble goes below.
        let writesBefore = Console.standardErrorWrites
        guard maySend(message) else { return }
        let request = conversation.request(for: message, attachments: attachments)
        if beforeRequest?(request, conversation.model) == false {
            // Refused before it went out: `/retry --over-budget` (or `/over-budget`) sends it.
            failedMessage = (message, attachments)
            return
        }
        let typedLinesAbove = typedRows > 0 && SecretScanner.findings(in: message).isEmpty && Console.standardErrorWrites == writesBefore
        gv_interrupt_clear()
        // Echo off while the reply streams: keys typed meanwhile wait unseen for the next prompt,
        // which shows them, instead of landing in the reply (an Enter would break its redraw).
        let quiet = interactive && Terminal.stdinIsTerminal && gv_tty_quiet_begin(STDIN_FILENO) == 0
        defer { if quiet { gv_tty_quiet_end() } }
        try showUserMessage(message, attachments: attachments, erasingRows: typedLinesAbove ? typedRows : 0)
        // On a terminal the reply is drawn live: rendered from markdown, or plain in a bubble with --raw.
        let printer = ReplyPrinter(spinner: interactive && ProgressLine.isWanted, provider: client.displayName, prefix: modelLabel, live: liveReply(), thoughts: thoughtDisplay)
        let grounded = conversation.generation.tools.grounds
        // Until a reply is kept, this message is the one `/retry` sends again.
        failedMessage = (message, attachments)
        do {
            let (reply, failure) = try stream(request, to: printer, grounded: grounded)
            if grounded {
                GroundedAnswer.warning(reply).map(Console.warning)
                try printer.print(GroundedAnswer.text(reply))
            }
            try printer.finish()
            if grounded { try Console.out(GroundedAnswer.footer(reply, style: style, hyperlinks: hyperlinks, columns: Terminal.stdoutIsTerminal ? Terminal.columns : nil)) }
            lastThoughts = reply.thoughts
            if let status = afterReply?(reply, conversation.model), interactive { Console.err(style.dim(status) + "\n") }
            if let failure { report(failure) } else if reply.interrupted { Console.err(style.yellow("[interrupted]") + "\n") }
            // What is kept follows the one rule for cut-off replies: a reply cut at its length or
            // stopped by Ctrl-C stays; a filtered or blocked one leaves the conversation as it was.
            if let turn = conversation.record(user: message, attachments: attachments, reply: reply) {
                recorder?.record(turn, in: conversation, now: Clock.now())
                pendingFiles = []
                failedMessage = nil
            }
        } catch let failure as StandardOutputFailure {
            throw failure
        } catch let error as any ChatFailure {
            try printer.finish()
            report(error)
        } catch {
            try printer.finish()
            Console.error("\(error)")
        }
        gv_interrupt_clear()
    }

    private func liveReply() -> LiveReply? {
        if bubbles {
            return LiveReply(markdown: markdown, frame: .bubble(color: style.enabled), size: Self.windowSize, reflows: Terminal.reflowsOnResize)
        } else if let markdown {
            return LiveReply(markdown: markdown, frame: .labelled(Self.liveModelLabel(client.replyLabel)), size: Self.windowSize, reflows: Terminal.reflowsOnResize)
        }
        return nil
    }

    /// The reply as it streams to `printer`; one cut short comes back with why.
    private func stream(_ request: ChatRequest, to printer: ReplyPrinter, grounded: Bool) throws -> (ChatReply, (any ChatFailure)?) {
        var handlers = printer.handlers()
        // A grounded answer is shown whole: its citation marks are placed by offsets that come last.
        if grounded { handlers.onText = { _ in } }
        do {
            return (try client.stream(request, model: conversation.model, handlers: handlers), nil)
        } catch let cut as CutReply {
            return (cut.reply, cut.failure)
        }
    }

    /// Where thought summaries show, when they are asked for: folded into a line among
    /// bubbles, above the answer in the plain chat, on stderr without a terminal.
    private var thoughtDisplay: ThoughtDisplay? {
        guard conversation.generation.includeThoughts else { return nil }
        guard interactive && Terminal.stdoutIsTerminal else { return .standardError(style) }
        return bubbles ? .folded(style) : .above(style)
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

    func report(_ error: any ChatFailure) {
        if error.kind == .interrupted { Console.err(style.yellow("[interrupted]") + "\n"); return }
        Console.error(error.message)
        if let hint = error.hint { Console.hint(hint) }
    }
}
