#if canImport(Glibc)
import Glibc
#endif

/// What the process is attached to, and how it may be styled.
public enum Terminal {
    public static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }

    public static var stdinIsTerminal: Bool { isTerminal(STDIN_FILENO) }
    public static var stdoutIsTerminal: Bool { isTerminal(STDOUT_FILENO) }
    public static var stderrIsTerminal: Bool { isTerminal(STDERR_FILENO) }
}

/// Output streams with the stderr grammar the project uses everywhere.
public enum Console {
    public static func out(_ text: String) { write(STDOUT_FILENO, text) }
    public static func err(_ text: String) { write(STDERR_FILENO, text) }

    public static func error(_ message: String) { err("gemvault: error: \(message)\n") }
    public static func warning(_ message: String) { err("gemvault: warning: \(message)\n") }
    public static func hint(_ message: String) { err("gemvault: hint: \(message)\n") }

    public static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        bytes.withUnsafeMutableBytes { raw in
            while offset < raw.count {
                let n = Glibc.write(fd, raw.baseAddress! + offset, raw.count - offset)
                if n < 0 { if errno == EINTR { continue }; return }
                offset += n
            }
        }
    }
}
