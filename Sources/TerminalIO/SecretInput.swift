#if canImport(Glibc)
import Glibc
#endif
import CSystemShims
import SystemIO
import VaultCore

/// Where a secret line (a passphrase, a recovery code, an API key) is read from.
public enum SecretSource: Sendable, Equatable {
    /// The controlling terminal, with echo off.
    case terminal
    /// One line from an already open file descriptor.
    case fileDescriptor(Int32)
    /// The first line of a file, which must be private to the user.
    case file(String)
    /// All of standard input (for `key set` in a pipe), trimmed.
    case standardInput
}

/// Why a secret could not be read.
public enum SecretInputError: Error, Equatable, Sendable {
    case noTerminal
    case empty
    case tooLong(limit: Int)
    case mismatch
    /// A key with a second line, a space or a control character: it would become extra HTTP headers.
    case notOneLine
    case unreadable(String)
    case refused(FileCheckFailure)
}

/// Reads secrets straight into `SecretBytes`; nothing passes through a `String`.
public enum SecretInput {
    public static let maximumLength = 4096

    /// Reads one secret. `prompt` is shown only on the terminal.
    public static func read(from source: SecretSource, prompt: String) throws(SecretInputError) -> SecretBytes {
        let secret: SecretBytes
        switch source {
        case .terminal:
            secret = try readFromTerminal(prompt: prompt)
        case .fileDescriptor(let fd):
            secret = try readLine(FileDescriptor(borrowing: fd, path: "file descriptor \(fd)"), wholeInput: false)
        case .file(let path):
            let file: FileDescriptor?
            do throws(TrustedOpenError) {
                file = try TrustedFile.openSecret(path)
            } catch {
                switch error {
                case .refused(let failure): throw .refused(failure)
                case .failed(let failure): throw .unreadable("\(path): \(failure.reason)")
                }
            }
            guard let file else { throw .unreadable("\(path): \(SystemError.describe(ENOENT))") }
            secret = try readLine(file, wholeInput: false)
        case .standardInput:
            secret = try readLine(.standardInput, wholeInput: true).trimmingWhitespace()
        }
        guard secret.count > 0 else { throw .empty }
        return secret
    }

    /// A new secret. On the terminal it is asked twice; `weakness` is shown before the
    /// confirmation, where an empty answer starts over, and a mismatch is asked again, three
    /// rounds in all. Other sources are read once, and a weakness is only a warning.
    public static func readNew(from source: SecretSource, prompt: String, confirmPrompt: String,
                               weakness: (SecretBytes) -> String? = { _ in nil },
                               warn: (String) -> Void) throws(SecretInputError) -> SecretBytes {
        guard source == .terminal else {
            let secret = try read(from: source, prompt: prompt)
            if let problem = weakness(secret) { warn(problem) }
            return secret
        }
        for round in 1...3 {
            let first = try read(from: .terminal, prompt: prompt)
            var confirm = confirmPrompt
            if let problem = weakness(first) {
                warn(problem)
                confirm = "Repeat it to keep it anyway, or press Enter to choose another: "
            }
            let second: SecretBytes
            do { second = try read(from: .terminal, prompt: confirm) } catch .empty { continue }
            if first.isEqual(to: second) { return first }
            if round < 3 { warn("the two entries do not match; try again") }
        }
        throw .mismatch
    }

    public static var hasTerminal: Bool { ControllingTerminal.descriptor != nil }

    private static func readFromTerminal(prompt: String) throws(SecretInputError) -> SecretBytes {
        guard let fd = ControllingTerminal.descriptor else { throw .noTerminal }
        let buffer = SecretBytes(count: maximumLength)
        var length = 0
        let result = buffer.withUnsafeMutableBytes { raw in
            gv_tty_read_secret_on(fd, prompt, raw.baseAddress!.assumingMemoryBound(to: UInt8.self), raw.count, &length)
        }
        switch Int(result) {
        case Int(GV_TTY_OK): buffer.truncate(to: length); return buffer
        case Int(GV_TTY_NO_TERMINAL): throw .noTerminal
        case Int(GV_TTY_TOO_LONG): throw .tooLong(limit: maximumLength)
        case Int(GV_TTY_EOF): throw .empty
        default: throw .unreadable("the terminal")
        }
    }

    /// Reads byte by byte so that nothing past the first line is consumed from a shared descriptor.
    /// A trailing CR is dropped, for files written on Windows.
    private static func readLine(_ file: FileDescriptor, wholeInput: Bool) throws(SecretInputError) -> SecretBytes {
        let buffer = SecretBytes(count: maximumLength)
        var length = 0
        var failure: SecretInputError?
        buffer.withUnsafeMutableBytes { raw in
            var byte: UInt8 = 0
            defer { byte = 0 }
            while true {
                let read = withUnsafeMutableBytes(of: &byte) { one in Result { () throws(SystemError) in try file.read(into: one) } }
                guard case .success(let n) = read else {
                    if case .failure(let error) = read { failure = .unreadable("\(file.path): \(error.reason)") }
                    return
                }
                if n == 0 { return }
                if !wholeInput && byte == 0x0a { return }
                guard length < raw.count else { failure = .tooLong(limit: maximumLength); return }
                raw[length] = byte
                length += 1
            }
        }
        if let failure { throw failure }
        buffer.truncate(to: length)
        if !wholeInput, length > 0, buffer.withUnsafeBytes({ $0[length - 1] }) == 0x0d { buffer.truncate(to: length - 1) }
        return buffer
    }
}

/// The controlling terminal, opened once per process: whether there is one, and every secret
/// or answer read from it, cost one open of /dev/tty (the only one).
public enum ControllingTerminal {
    /// The descriptor, or nil without a controlling terminal; -2 until first asked. A
    /// command runs its prompts on one thread.
    nonisolated(unsafe) private static var opened: Int32 = -2
    /// How many times /dev/tty was opened: at most once (the unit tests check it).
    nonisolated(unsafe) public private(set) static var opens = 0

    public static var descriptor: Int32? {
        if opened == -2 {
            opens += 1
            opened = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY)
        }
        return opened >= 0 ? opened : nil
    }
}
