import Conversations
import CSystemShims
import Glibc
import Rendering
import SystemIO
import TerminalIO

/// Where thought summaries (`--thoughts`) are shown while they stream, above the answer.
public enum ThoughtDisplay {
    /// Dimmed and labelled on stderr, so stdout stays the answer (`ask`, a chat without a terminal).
    case standardError(Style)
    /// Dimmed and labelled on the screen, above the answer (the plain chat).
    case above(Style)
    /// One dimmed line on the screen that each new heading replaces, left as a note that
    /// `/thoughts` expands (bubbles).
    case folded(Style)
}

/// Prints a streaming reply: a spinner on stderr until the first visible text, then the text
/// on stdout, either drawn live from markdown (`LiveReply`, on a terminal) or as it came, with
/// control and escape sequences neutralised. Retries are announced on stderr, with a countdown
/// on a terminal. When stdout refuses a write, the stream is cancelled and `finish` throws the
/// failure.
public final class ReplyPrinter {
    private let spinnerEnabled: Bool
    private var spinnerShown = false
    private var frame = 0
    /// Whether anything of the reply is on the screen yet.
    private var shownText = false
    /// When a retry is due (monotonic seconds), for its countdown.
    private var retryAt: Double?
    /// Retries so far, and the reason of the last, for the one summary line on a terminal.
    private var retries = 0
    /// Thought parts have arrived: the spinner says the model is thinking.
    private var thinking = false
    private var retryReason = ""
    private let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]
    private let prefix: String
    /// Who the spinner says it waits for (the provider's `displayName`).
    private let providerName: String
    /// Draws the reply as it streams, on a terminal; nil prints it as it came.
    private let live: LiveReply?
    public private(set) var endsWithNewline = true
    /// The write to stdout that failed; nothing more is written after it.
    private var outputFailure: StandardOutputFailure?
    private let thoughtDisplay: ThoughtDisplay?
    /// The summaries so far, and whether they are being shown (until the answer starts).
    private var thoughtText = ""
    private var thoughtsOpen = false
    /// The summaries drawn as markdown (above the answer, or on stderr).
    private var thoughts: ThoughtView?
    /// The answer printed as it came, neutralised across pieces (a joiner split from its emoji).
    private var neutralizer = StreamingNeutralizer()

    /// `prefix` is written before the first text printed as it came (the chat's label); a live
    /// reply has its own. `thoughts` shows thought summaries as they stream; nil shows none.
    public init(spinner: Bool, provider providerName: String, prefix: String = "", live: LiveReply? = nil, thoughts: ThoughtDisplay? = nil) {
        self.spinnerEnabled = spinner
        self.providerName = providerName
        self.prefix = prefix
        self.live = live
        self.thoughtDisplay = thoughts
    }

    /// Handlers that print, and cancel on Ctrl-C.
    public func handlers() -> StreamHandlers {
        StreamHandlers(
            // The stream takes no error from here: a failed write is kept in outputFailure, which cancels it.
            onText: { [self] text in try? self.print(text) },
            onRetry: { [self] notice in
                self.retries += 1
                self.retryReason = notice.reason
                self.retryAt = Clock.monotonicSeconds() + notice.delay
                // On a terminal the countdown line carries each retry and one summary follows;
                // elsewhere (a log) each retry gets its line.
                guard !self.spinnerEnabled else { return }
                Console.warning("retrying in \(Self.seconds(notice.delay)) (\(notice.reason))")
            },
            onTick: { [self] in self.tick() },
            isCancelled: { [self] in self.outputFailure != nil || gv_interrupt_pending() != 0 },
            onThinking: { [self] in self.thinking = true },
            onThought: { [self] text in try? self.thought(text) })
    }

    /// A piece of a thought summary, shown as `thoughts` says until the answer starts.
    func thought(_ text: String) throws(StandardOutputFailure) {
        guard let thoughtDisplay, !shownText, outputFailure == nil else { return }
        clearSpinner()
        switch thoughtDisplay {
        case .standardError(let style):
            Console.err(thoughtView(style, fd: STDERR_FILENO).feed(text))
        case .above(let style):
            try write(thoughtView(style, fd: STDOUT_FILENO).feed(text))
        case .folded(let style):
            thoughtText += text
            let columns = max(20, (Terminal.columns ?? TerminalSize.fallback.columns) - 1)
            // The heading from the latest stretch only: a long stream of tiny pieces stays linear.
            let heading = EscapeNeutralizer.neutralize(Self.latestHeading(String(thoughtText.suffix(4096))))
            try write("\r\u{1B}[2K" + style.dim(Self.fitted("💭 " + heading, columns: columns)))
        }
        thoughtsOpen = true
    }

    /// The view the summaries stream into, made at the first of them.
    private func thoughtView(_ style: Style, fd: Int32) -> ThoughtView {
        if let thoughts { return thoughts }
        let view = ThoughtView(style: style, fd: fd)
        thoughts = view
        return view
    }

    /// Ends the thoughts on their own line, before the answer; a folded line stays as a note.
    private func closeThoughts() throws(StandardOutputFailure) {
        guard thoughtsOpen, let thoughtDisplay else { return }
        thoughtsOpen = false
        switch thoughtDisplay {
        case .standardError: Console.err(thoughts?.finish() ?? "")
        case .above: try write(thoughts?.finish() ?? "")
        case .folded(let style):
            let words = thoughtText.split(whereSeparator: \.isWhitespace).count
            try write("\r\u{1B}[2K" + style.dim("💭 thought summary, \(words) word\(words == 1 ? "" : "s"): /thoughts shows it") + "\n")
        }
    }

    /// The last `**heading**` of the summaries (each thought starts with one), else their last line.
    static func latestHeading(_ text: String) -> String {
        let pieces = text.split(separator: "**", omittingEmptySubsequences: false)
        // Odd pieces are inside a pair of `**`.
        if let heading = pieces.indices.filter({ $0 % 2 == 1 && $0 < pieces.count - 1 }).map({ String(pieces[$0]).trimmedWhitespace }).last(where: { !$0.isEmpty }) {
            return heading + "…"
        }
        return String(text.split(whereSeparator: \.isNewline).last ?? "").trimmedWhitespace
    }

    static func fitted(_ line: String, columns: Int) -> String {
        let flat = line.replacing("\n", with: " ")
        return flat.count > columns ? String(flat.prefix(columns - 1)) + "…" : flat
    }

    /// A write of the thoughts' own to the screen; a failure is kept like the answer's.
    private func write(_ text: String) throws(StandardOutputFailure) {
        do {
            try Console.out(text)
        } catch {
            outputFailure = error
            throw error
        }
    }

    public func print(_ text: String) throws(StandardOutputFailure) {
        if let outputFailure { throw outputFailure }
        if !text.isEmpty { try closeThoughts() }
        if let live {
            try show(live.feed(text))
            return
        }
        // Text as it came: escape sequences neutralised, as if it had come whole.
        try showAsItCame(neutralizer.feed(text))
    }

    private func showAsItCame(_ safe: String) throws(StandardOutputFailure) {
        if !shownText && !safe.isEmpty { try show(prefix) }
        try show(safe)
    }

    /// Writes what the reply needs now; the spinner goes at the first of it.
    private func show(_ text: String) throws(StandardOutputFailure) {
        guard !text.isEmpty else { return }
        clearSpinner()
        shownText = true
        do {
            try Console.out(text)
        } catch {
            outputFailure = error
            throw error
        }
        endsWithNewline = Self.endsOnFreshLine(text)
    }

    /// Whether the cursor is at the start of a line after `text`: a live redraw ends with
    /// its own control sequences (synchronized output off), which move nothing, after the
    /// newline. Counting them as text printed a second, blank line after every reply.
    static func endsOnFreshLine(_ text: String) -> Bool {
        var rest = Substring(text)
        while rest.hasSuffix("h") || rest.hasSuffix("l") || rest.hasSuffix("m") {
            guard let start = rest.lastIndex(of: "\u{1B}"), rest[rest.index(after: start)...].hasPrefix("["),
                  rest[rest.index(start, offsetBy: 2)..<rest.index(before: rest.endIndex)].allSatisfy({ $0.isNumber || $0 == ";" || $0 == "?" }) else { break }
            rest = rest[..<start]
        }
        return rest.last == "\n"
    }

    func tick() {
        frame += 1
        // A redraw put off, or one for a resized window; a failed write is kept in outputFailure.
        if let live, outputFailure == nil { try? show(live.tick()) }
        if thoughtsOpen, let thoughts, outputFailure == nil, let thoughtDisplay {
            if case .above = thoughtDisplay { try? write(thoughts.tick()) } else { Console.err(thoughts.tick()) }
        }
        guard spinnerEnabled, !shownText else { return }
        if let retryAt, case let left = retryAt - Clock.monotonicSeconds(), left > 0 {
            let line = frames[frame % frames.count] + " retrying in \(Int(left.rounded(.up))) s… (retry \(retries): \(retryReason))"
            // One row, or the erase before the next frame would leave the wrapped part behind.
            let columns = max(20, (Terminal.columns ?? TerminalSize.fallback.columns) - 1)
            Console.err("\r\u{1B}[2K" + (line.count > columns ? String(line.prefix(columns - 1)) + "…" : line))
            spinnerShown = true
            return
        }
        retryAt = nil
        // Quick replies get no spinner: it starts after about 300 ms; shown thoughts need none.
        guard frame > 3, !thoughtsOpen else { return }
        Console.err("\r\u{1B}[2K" + frames[frame % frames.count] + (thinking ? " \(providerName) is thinking…" : " waiting for \(providerName)…"))
        spinnerShown = true
    }

    public func clearSpinner() {
        if spinnerShown {
            Console.err("\r\u{1B}[2K")
            spinnerShown = false
        }
        // The retries the countdown showed, in one line that stays.
        if spinnerEnabled && retries > 0 {
            Console.warning("retried \(retries) time\(retries == 1 ? "" : "s") (last: \(retryReason))")
            retries = 0
        }
    }

    /// Ends the reply on a fresh line; throws the failure of any write to stdout, this one's or an earlier one's.
    public func finish() throws(StandardOutputFailure) {
        clearSpinner()
        if let outputFailure { throw outputFailure }
        try closeThoughts()
        if let live { try show(live.finish()) } else { try showAsItCame(neutralizer.finish()) }
        if shownText && !endsWithNewline { try show("\n") }
    }

    static func seconds(_ value: Double) -> String {
        value >= 10 || value == value.rounded() ? "\(Int(value.rounded())) s" : "\((value * 10).rounded() / 10) s"
    }
}
