import Glibc
import SystemIO
import VaultCore

/// Why `systemd-creds encrypt` gave no credential; nothing was written in any case.
public enum SystemdCredentialFailure: Error, Equatable {
    /// It had not finished after `seconds` (a TPM that never answers).
    case timedOut(seconds: Int)
    /// There is no systemd-creds to run.
    case notInstalled
    /// It needs root, and there is no sudo: the pipe to run as root by hand.
    case noSudo(hostKey: String, manualPipe: String)
    /// The program (`systemd-creds` or `sudo`) could not be started.
    case notStarted(program: String, reason: String)
    /// The key could not be written to its stdin.
    case keyNotTaken(reason: String)
    /// It exited with `status`, saying `said` on stderr.
    case exited(throughSudo: Bool, status: Int32, said: String, manualPipe: String)
    /// A signal ended it (or its output passed the limit, and it was killed).
    case signaled(throughSudo: Bool, signal: Int32, manualPipe: String)
    /// `-o FILE`: whether it exists could not be told (`--force` goes on anyway).
    case targetUnknown(path: String, reason: String)
    /// `-o FILE` is a symbolic link, never written through.
    case targetIsLink(path: String)
    /// `-o FILE` exists, and `--force` was not given.
    case targetExists(path: String)
}

extension SystemdCredentialEncryption {
    /// What systemd-creds may print: a credential is the key plus some hundred bytes.
    public static let outputLimit = 1 << 20
    /// Seconds systemd-creds gets (a TPM may be slow; a stuck one must not hold the command).
    public static let timeout = 60.0
    /// Added through sudo, whose password prompt gives up after 5 minutes.
    public static let sudoPromptTime = 300.0

    /// How one export runs systemd-creds.
    public struct Run: Sendable {
        public let arguments: [String]
        /// Run as root through sudo: the host key is root's.
        public let throughSudo: Bool
        /// The pipe to run by hand when gemvault cannot (for hints).
        public let manualPipe: String

        public init(arguments: [String], throughSudo: Bool, manualPipe: String) {
            self.arguments = arguments
            self.throughSudo = throughSudo
            self.manualPipe = manualPipe
        }
    }

    /// An existing file is replaced only with `replacing` (--force), and never a link. Through
    /// sudo the user may not see into the folder: then only --force goes on.
    public static func checkTarget(_ output: String, replacing: Bool) throws(SystemdCredentialFailure) {
        guard let existing = FileStatus.of(link: output) else {
            let code = errno
            if code == ENOENT || replacing { return }
            throw .targetUnknown(path: output, reason: SystemError("lstat", path: output, code: code).reason)
        }
        if existing.kind == .symbolicLink { throw .targetIsLink(path: output) }
        if !replacing { throw .targetExists(path: output) }
    }

    /// Runs systemd-creds with `secret` on its stdin; its stdout, or a `SystemdCredentialFailure`.
    public static func encrypt(_ secret: SecretBytes, with encryption: Run, environment: [String: String]) throws -> [UInt8] {
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: outputLimit, alignment: 1)
        defer { output.deallocate() }
        // A systemd-creds that hangs (a TPM that never answers) must not hold the command.
        let limit = timeout + (encryption.throughSudo ? sudoPromptTime : 0)
        let run = try start(encryption, environment: environment) { () throws(ProcessRunner.Failure) in
            try secret.withUnsafeBytes { bytes throws(ProcessRunner.Failure) in
                // sudo stays in the terminal's foreground process group, where it may read the
                // password; systemd-creds alone gets a group of its own to stop.
                try ProcessRunner.run(encryption.arguments, environment: environment, input: bytes, output: output, errorLimit: 8192,
                                      deadline: Deadline(after: limit, clock: .standard),
                                      stop: encryption.throughSudo ? .terminate(grace: 2) : .killGroup)
            }
        }
        switch run.ending {
        case .timedOut: throw SystemdCredentialFailure.timedOut(seconds: Int(limit))
        case .outputTooLarge: throw failure(.signaled(SIGKILL), run.errors, encryption)
        case .finished(let ended):
            guard ended == .exited(0), run.inputTaken else { throw failure(ended, run.errors, encryption) }
            return Array(UnsafeRawBufferPointer(rebasing: output[0..<run.outputCount]))
        }
    }

    /// systemd-creds, or sudo running it, started by `running`; its failures to start (or to
    /// take the key) named. sudo passes SIGTERM on to root's systemd-creds, which gemvault may
    /// not signal itself; sudo is killed if it has not ended within 2 s.
    private static func start(_ encryption: Run, environment: [String: String],
                              running: () throws(ProcessRunner.Failure) -> ProcessRunner.Outcome) throws(SystemdCredentialFailure) -> ProcessRunner.Outcome {
        if encryption.throughSudo, inPath("systemd-creds", environment: environment) == nil { throw .notInstalled }
        // Root's systemd-creds writes -o FILE under the union of this umask and sudo's: 0600.
        let previousMask = umask(0o077)
        defer { umask(previousMask) }
        let started: SystemError
        do throws(ProcessRunner.Failure) {
            return try running()
        } catch {
            switch error {
            case .input(let failure): throw .keyNotTaken(reason: failure.reason)
            case .start(let failure): started = failure
            }
        }
        guard started.code == ENOENT else { throw .notStarted(program: encryption.arguments[0], reason: started.reason) }
        if encryption.throughSudo { throw .noSudo(hostKey: hostKey(environment: environment), manualPipe: encryption.manualPipe) }
        throw .notInstalled
    }

    private static func failure(_ ended: ChildProcess.Termination, _ errors: [UInt8], _ encryption: Run) -> SystemdCredentialFailure {
        switch ended {
        case .exited(let code):
            .exited(throughSudo: encryption.throughSudo, status: code, said: String(decoding: errors, as: UTF8.self).trimmedWhitespace,
                    manualPipe: encryption.manualPipe)
        case .signaled(let signal):
            .signaled(throughSudo: encryption.throughSudo, signal: signal, manualPipe: encryption.manualPipe)
        }
    }
}
