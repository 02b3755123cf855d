import CSystemShims
import Glibc

/// A child process started by `ProcessSpawner`.
public final class ChildProcess {
    public let pid: pid_t
    /// The writing end of the child's stdin, with `Input.pipe`.
    public private(set) var standardInput: FileDescriptor?
    public let standardOutput: FileDescriptor?
    public let standardError: FileDescriptor?

    init(pid: pid_t, standardInput: FileDescriptor?, standardOutput: FileDescriptor?, standardError: FileDescriptor?) {
        self.pid = pid
        self.standardInput = standardInput
        self.standardOutput = standardOutput
        self.standardError = standardError
    }

    public enum Termination: Equatable, Sendable {
        case exited(Int32)
        case signaled(Int32)

        /// The shell's convention: the exit code, or 128 plus the signal.
        public var shellStatus: Int32 {
            switch self {
            case .exited(let code): code
            case .signaled(let signal): 128 + signal
            }
        }
    }

    /// Closes the writing end of the child's stdin, so the child reads its end.
    public func closeStandardInput() { standardInput = nil }

    public func wait() -> Termination {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f)
    }

    /// How the child ended, if it has (without waiting); nil while it runs.
    public func endedYet() -> Termination? {
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, WNOHANG) } while result < 0 && errno == EINTR
        guard result == pid else { return nil }
        return (status & 0x7f) == 0 ? .exited((status >> 8) & 0xff) : .signaled(status & 0x7f)
    }

    /// Sends `signal` to the child's whole process group (it must have been given its own).
    public func signalGroup(_ signal: Int32) { kill(-pid, signal) }

    /// Sends `signal` to the child alone (one that shares gemvault's process group).
    public func signal(_ signal: Int32) { kill(pid, signal) }
}

/// The one way gemvault starts another program: no shell, and only descriptors 0, 1 and 2.
public enum ProcessSpawner {
    public enum Input: Sendable { case inherit, null, pipe }
    public enum Output: Sendable {
        case inherit, pipe, null
        /// An already open file, such as a log.
        case file(FileDescriptor)
    }

    /// Starts `arguments[0]`, searched in PATH. Signals that gemvault ignores or catches get
    /// their default action back in the child.
    ///
    /// With `program` (a file opened and checked by `TrustedFile.openProgram`), that file runs,
    /// not a name looked up again: it becomes the child's descriptor 3 and is executed through
    /// /proc/self/fd/3 (fexecve's way, which posix_spawn lacks), so what runs is what was
    /// checked. `arguments[0]` is then only the name the program sees; a script's interpreter
    /// is given /proc/self/fd/3 as the script's path, and reads it there.
    ///
    /// `changes` set (or, with nil, remove) variables of `environment` for the child, the last
    /// change to a name winning; secret variables win over both.
    public static func spawn(_ arguments: [String], environment: [String: String], changes: [(name: String, value: String?)] = [], input: Input = .inherit,
                             output: Output = .inherit, errors: Output = .inherit,
                             ownProcessGroup: Bool = false, newSession: Bool = false, program: FileDescriptor? = nil,
                             secretVariables: [(name: String, value: UnsafeRawBufferPointer)] = []) throws(SystemError) -> ChildProcess {
        precondition(!arguments.isEmpty)
        precondition(program.map { $0.raw > 2 } ?? true, "a program's descriptor is above the standard streams")
        var inPipe: [Int32] = [-1, -1]
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        func closeAll() { for fd in inPipe + outPipe + errPipe where fd >= 0 { close(fd) } }
        if case .pipe = input, pipe(&inPipe) != 0 { throw SystemError("pipe") }
        if case .pipe = output, pipe(&outPipe) != 0 { closeAll(); throw SystemError("pipe") }
        if case .pipe = errors, pipe(&errPipe) != 0 { closeAll(); throw SystemError("pipe") }
        for fd in inPipe + outPipe + errPipe where fd >= 0 { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        addStreams(&actions, input: (input, inPipe[0]), output: (output, outPipe[1]), errors: (errors, errPipe[1]), program: program)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        setAttributes(&attributes, ownProcessGroup: ownProcessGroup, newSession: newSession)

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environmentBlock(environment, changes: changes, secretVariables: secretVariables)
        defer {
            argv.forEach { free($0) }
            // The environment may carry a key for the child (exec): wipe before freeing.
            for entry in envp { if let entry { explicit_bzero(entry, strlen(entry)) }; free(entry) }
        }
        var pid: pid_t = 0
        let spawned = program == nil ? posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
                                     : posix_spawn(&pid, "/proc/self/fd/\(Self.programDescriptor)", &actions, &attributes, argv, envp)
        for fd in [inPipe[0], outPipe[1], errPipe[1]] where fd >= 0 { close(fd) }
        guard spawned == 0 else {
            for fd in [inPipe[1], outPipe[0], errPipe[0]] where fd >= 0 { close(fd) }
            throw SystemError("start", path: arguments[0], code: spawned)
        }
        return ChildProcess(pid: pid,
                            standardInput: inPipe[1] >= 0 ? FileDescriptor(owning: inPipe[1], path: "\(arguments[0]) stdin") : nil,
                            standardOutput: outPipe[0] >= 0 ? FileDescriptor(owning: outPipe[0], path: "\(arguments[0]) stdout") : nil,
                            standardError: errPipe[0] >= 0 ? FileDescriptor(owning: errPipe[0], path: "\(arguments[0]) stderr") : nil)
    }

    /// The child's standard streams (`pipeEnd` is the child's end of a pipe), the checked program
    /// at descriptor 3 if any, and nothing else: whatever else is open (a --passphrase-fd, a
    /// lock, a socket) stays with gemvault.
    private static func addStreams(_ actions: inout posix_spawn_file_actions_t, input: (Input, pipeEnd: Int32), output: (Output, pipeEnd: Int32),
                                   errors: (Output, pipeEnd: Int32), program: FileDescriptor?) {
        switch input.0 {
        case .null: posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        case .pipe: posix_spawn_file_actions_adddup2(&actions, input.pipeEnd, 0)
        case .inherit: break
        }
        for (stream, target, pipeEnd) in [(output.0, Int32(1), output.pipeEnd), (errors.0, Int32(2), errors.pipeEnd)] {
            switch stream {
            case .pipe: posix_spawn_file_actions_adddup2(&actions, pipeEnd, target)
            case .null: posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            case .file(let file): posix_spawn_file_actions_adddup2(&actions, file.raw, target)
            case .inherit: break
            }
        }
        if let program {
            posix_spawn_file_actions_adddup2(&actions, program.raw, programDescriptor)
            gv_spawn_close_from(&actions, programDescriptor + 1)
        } else {
            gv_spawn_close_from(&actions, 3)
        }
    }

    /// Where a checked program sits in the child, to be executed from.
    static let programDescriptor: Int32 = 3

    /// Signals back to their default actions, none blocked, and the child's group or session.
    private static func setAttributes(_ attributes: inout posix_spawnattr_t, ownProcessGroup: Bool, newSession: Bool) {
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT, SIGTSTP, SIGWINCH] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var noneBlocked = sigset_t()
        sigemptyset(&noneBlocked)
        posix_spawnattr_setsigmask(&attributes, &noneBlocked)
        var flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK
        if ownProcessGroup {
            posix_spawnattr_setpgroup(&attributes, 0)
            flags |= POSIX_SPAWN_SETPGROUP
        }
        if newSession { flags |= GV_POSIX_SPAWN_SETSID }
        posix_spawnattr_setflags(&attributes, Int16(flags))
    }

    /// The child's environment as C strings, ending in nil; the secret variables, if any, are
    /// built straight from secret memory. The caller wipes and frees every entry.
    private static func environmentBlock(_ environment: [String: String], changes: [(name: String, value: String?)],
                                         secretVariables: [(name: String, value: UnsafeRawBufferPointer)]) -> [UnsafeMutablePointer<CChar>?] {
        // Lists searched, not a Set or a filtered copy of the dictionary: the first use of either
        // is a runtime type lookup that costs more than building the block (Docs/performance.md).
        func isSecret(_ name: String) -> Bool { secretVariables.contains { $0.name == name } }
        var envp: [UnsafeMutablePointer<CChar>?] = []
        envp.reserveCapacity(environment.count + changes.count + secretVariables.count + 1)
        for (name, value) in environment where !isSecret(name) && !changes.contains(where: { $0.name == name }) {
            envp.append(strdup("\(name)=\(value)"))
        }
        for (index, change) in changes.enumerated() where !isSecret(change.name) && !changes[(index + 1)...].contains(where: { $0.name == change.name }) {
            if let value = change.value { envp.append(strdup("\(change.name)=\(value)")) }
        }
        for secretVariable in secretVariables {
            // NAME=value built straight from secret memory, never as a Swift string; the caller wipes it.
            let name = Array(secretVariable.name.utf8) + [UInt8(ascii: "=")]
            let entry = malloc(name.count + secretVariable.value.count + 1)!.assumingMemoryBound(to: CChar.self)
            name.withUnsafeBytes { UnsafeMutableRawPointer(entry).copyMemory(from: $0.baseAddress!, byteCount: name.count) }
            if let base = secretVariable.value.baseAddress {
                (UnsafeMutableRawPointer(entry) + name.count).copyMemory(from: base, byteCount: secretVariable.value.count)
            }
            entry[name.count + secretVariable.value.count] = 0
            envp.append(entry)
        }
        envp.append(nil)
        return envp
    }
}
