import Glibc
import SystemIO
import VaultCore

/// What the process is attached to, and how it may be styled.
public enum Terminal {
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    public static var stdinIsTerminal: Bool { isTerminal(STDIN_FILENO) }
    public static var stdoutIsTerminal: Bool { isTerminal(STDOUT_FILENO) }
    public static var stderrIsTerminal: Bool { isTerminal(STDERR_FILENO) }
}

/// Output streams with the stderr grammar the project uses everywhere. Everything written to
/// stderr has the process's secrets cut out first.
public enum Console {
    public static func out(_ text: String) { try? FileDescriptor.standardOutput.writeAll(text) }
    public static func err(_ text: String) { try? FileDescriptor.standardError.writeAll(Redaction.redact(text)) }

    public static func error(_ message: String) { err("gemvault: error: \(message)\n") }
    public static func warning(_ message: String) { err("gemvault: warning: \(message)\n") }
    public static func hint(_ message: String) { err("gemvault: hint: \(message)\n") }

    public static func write(_ fd: Int32, _ text: String) {
        try? FileDescriptor(borrowing: fd, path: "").writeAll(text)
    }
}
