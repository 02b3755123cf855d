import CSystemShims
import Glibc
import Synchronization
import SystemIO
import VaultCore

/// What the process is attached to, and how it may be styled.
public enum Terminal {
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    public static var stdinIsTerminal: Bool { isTerminal(STDIN_FILENO) }
    public static var stdoutIsTerminal: Bool { isTerminal(STDOUT_FILENO) }
    public static var stderrIsTerminal: Bool { isTerminal(STDERR_FILENO) }

    /// Columns of the terminal on stdout, or nil when it is not one.
    /// `text` broken between words into lines of at most `width` characters (a longer word
    /// stays whole); nil leaves it as it is. For gemvault's own prose, not for replies.
    public static func wordWrapped(_ text: String, width: Int?) -> String {
        guard let width, width > 0, text.count > width else { return text }
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty, line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }

    public static var columns: Int? {
        let columns = Int(gv_terminal_columns(STDOUT_FILENO))
        return columns > 0 ? columns : nil
    }

    /// Rows of the terminal on stdout, or nil when it is not one.
    public static var rows: Int? {
        let rows = Int(gv_terminal_rows(STDOUT_FILENO))
        return rows > 0 ? rows : nil
    }

    /// The size of the terminal on stdout now (it changes with the window), or nil when it is not one.
    public static var size: TerminalSize? {
        let columns = Int(gv_terminal_columns(STDOUT_FILENO))
        let rows = Int(gv_terminal_rows(STDOUT_FILENO))
        return columns > 0 ? TerminalSize(columns: columns, rows: rows > 0 ? rows : 24) : nil
    }

    /// Whether output may move the cursor back up and redraw: stdout is a terminal, and not a dumb one.
    public static var canRedraw: Bool {
        guard stdoutIsTerminal else { return false }
        guard let term = getenv("TERM") else { return true }
        return String(cString: term) != "dumb"
    }

    /// Whether stdout's terminal shows OSC 8 hyperlinks: `FORCE_HYPERLINK` (0 or 1) decides,
    /// else the terminals known to: VTE 0.50 and later (GNOME Terminal, Tilix), kitty,
    /// WezTerm, iTerm2, Ghostty, foot, Windows Terminal, Konsole, VS Code. Elsewhere links
    /// are printed as plain URLs, since an unknown terminal may show the escape as text.
    public static func showsHyperlinks(environment: [String: String]) -> Bool {
        if let forced = environment["FORCE_HYPERLINK"], !forced.isEmpty { return forced != "0" }
        guard canRedraw else { return false }
        if let vte = environment["VTE_VERSION"].flatMap(Int.init), vte >= 5000 { return true }
        if ["WezTerm", "iTerm.app", "vscode", "ghostty"].contains(environment["TERM_PROGRAM"] ?? "") { return true }
        if environment["KITTY_WINDOW_ID"] != nil || environment["WT_SESSION"] != nil || environment["KONSOLE_VERSION"] != nil { return true }
        let term = environment["TERM"] ?? ""
        return term.hasPrefix("xterm-kitty") || term.hasPrefix("foot") || term == "xterm-ghostty"
    }

    /// Whether the terminal wraps lines again to a new width when the window is resized, as
    /// tmux, VTE (GNOME Terminal), Konsole, kitty, Alacritty, WezTerm, foot and Windows
    /// Terminal do. xterm (which sets XTERM_VERSION) and the Linux console cut them instead.
    public static var reflowsOnResize: Bool {
        func variable(_ name: String) -> String? { getenv(name).map { String(cString: $0) } }
        if variable("TMUX") != nil { return true }
        if variable("XTERM_VERSION") != nil || variable("TERM") == "linux" { return false }
        return true
    }
}

/// A terminal window's size.
public struct TerminalSize: Equatable, Sendable {
    public var columns: Int
    public var rows: Int

    public init(columns: Int, rows: Int) {
        self.columns = columns
        self.rows = rows
    }

    /// What is assumed when the window's size cannot be read.
    public static let fallback = TerminalSize(columns: 80, rows: 24)
}

/// Standard output refused a write. Results live on stdout, so a command that cannot write
/// them has failed: `ErrorReport` turns this into the message and the exit code.
public struct StandardOutputFailure: Error, Equatable {
    /// errno of the failed write.
    public let code: Int32

    public init(code: Int32) { self.code = code }

    /// The reader went away (`gemvault key get | head -c1`): EPIPE, since SIGPIPE is ignored.
    public var readerClosed: Bool { code == EPIPE }
    public var reason: String { SystemError.describe(code) }
}

/// Output streams with the stderr grammar the project uses everywhere. Everything written to
/// stderr has the process's secrets cut out first.
public enum Console {
    /// The one way results reach stdout; a failed write throws instead of vanishing.
    public static func out(_ text: String) throws(StandardOutputFailure) {
        try reporting { () throws(SystemError) in try FileDescriptor.standardOutput.writeAll(text) }
    }

    public static func out(_ bytes: [UInt8]) throws(StandardOutputFailure) {
        try reporting { () throws(SystemError) in try FileDescriptor.standardOutput.writeAll(bytes) }
    }

    public static func out(_ bytes: UnsafeRawBufferPointer) throws(StandardOutputFailure) {
        try reporting { () throws(SystemError) in try FileDescriptor.standardOutput.writeAll(bytes) }
    }

    private static func reporting(_ write: () throws(SystemError) -> Void) throws(StandardOutputFailure) {
        do { try write() } catch { throw StandardOutputFailure(code: error.code) }
    }

    public static func err(_ text: String) {
        errWrites.add(1, ordering: .relaxed)
        try? FileDescriptor.standardError.writeAll(Redaction.redact(text))
    }

    /// Writes to stderr so far: a screen that erases lines it drew (a message as typed,
    /// replaced by its bubble) knows whether a message came in between.
    public static var standardErrorWrites: Int { errWrites.load(ordering: .relaxed) }
    private static let errWrites = Atomic<Int>(0)

    /// What a command reports on its way (stored, unlocked, set): not an error, warning or hint.
    public static func note(_ message: String) { labelled("gemvault: ", message) }
    public static func error(_ message: String) { labelled("gemvault: error: ", message) }
    public static func warning(_ message: String) { labelled("gemvault: warning: ", message) }
    public static func hint(_ message: String) { labelled("gemvault: hint: ", message) }

    /// On a terminal, a long message is broken between words to the window's width, its
    /// later lines indented under its first word; in a pipe or a log it stays one line, for
    /// grep. Redacted before it is broken, so a key is masked whole.
    static func labelled(_ label: String, _ message: String) {
        errWrites.add(1, ordering: .relaxed)
        // Names from others' files (an MCP server's, a share's label) reach messages: nothing in them may act on a terminal.
        let text = EscapeNeutralizer.neutralize(Redaction.redact(message))
        let columns = Int(gv_terminal_columns(STDERR_FILENO))
        guard columns > 0, Terminal.stderrIsTerminal else {
            try? FileDescriptor.standardError.writeAll(label + text + "\n")
            return
        }
        let indent = columns - label.count >= 30 ? label.count : 2
        var lines: [String] = []
        for (number, paragraph) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            var line = ""
            // The first line always takes its first word, however long: the label never stands alone.
            var room = (number == 0 ? columns - label.count : columns - indent) - 1
            for word in paragraph.split(separator: " ") {
                if !line.isEmpty, line.count + 1 + word.count > room {
                    lines.append(line)
                    line = ""
                    room = columns - indent - 1
                }
                line += (line.isEmpty ? "" : " ") + word
            }
            lines.append(line)
        }
        let shown = lines.enumerated().map { $0.offset == 0 ? label + $0.element : String(repeating: " ", count: indent) + $0.element }
        try? FileDescriptor.standardError.writeAll(shown.joined(separator: "\n") + "\n")
    }
}

/// Questions asked on the controlling terminal, never on stdin (which may be data).
public enum TerminalQuestion {
    /// Asks a yes/no question; only "y" or "yes" counts. Without a terminal the answer is no.
    public static func confirm(_ question: String) -> Bool {
        guard let answer = ask(question + " [y/N] ") else { return false }
        let word = answer.trimmedWhitespace.lowercased()
        return word == "y" || word == "yes"
    }

    /// Offers a step whose answer is usually yes: Enter accepts, "n" or "no" declines.
    /// Without a terminal nothing is accepted.
    public static func offer(_ question: String) -> Bool {
        guard let answer = ask(question + " [Y/n] ") else { return false }
        let word = answer.trimmedWhitespace.lowercased()
        return word.isEmpty || word == "y" || word == "yes"
    }

    /// One line typed on /dev/tty after `prompt`, or nil without a terminal.
    public static func ask(_ prompt: String) -> String? {
        guard let fd = ControllingTerminal.descriptor else { return nil }
        let tty = FileDescriptor(borrowing: fd, path: "/dev/tty")
        try? tty.writeAll(Redaction.redact(prompt))
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while line.count < 4096 {
            let n = withUnsafeMutableBytes(of: &byte) { (try? tty.read(into: $0)) ?? 0 }
            if n == 0 || byte == 0x0a { break }
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }

    public static var available: Bool { SecretInput.hasTerminal }
}
