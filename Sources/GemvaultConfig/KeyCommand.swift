import Glibc
import VaultCore

/// Runs `key_command` without a shell and captures its stdout as the key.
public enum KeyCommand {
    static let outputLimit = 8192
    /// Splits a command line into arguments: white space separates, single and double quotes
    /// group, backslash escapes. No expansion of any kind happens.
    public static func split(_ line: String) -> [String]? {
        var arguments: [String] = []
        var current = ""
        var inArgument = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped { current.append(character); escaped = false; continue }
            if character == "\\" && quote != "'" { escaped = true; inArgument = true; continue }
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
                continue
            }
            if character == "'" || character == "\"" { quote = character; inArgument = true; continue }
            if character == " " || character == "\t" || character == "\n" {
                if inArgument { arguments.append(current); current = ""; inArgument = false }
                continue
            }
            current.append(character)
            inArgument = true
        }
        guard quote == nil, !escaped else { return nil }
        if inArgument { arguments.append(current) }
        return arguments.isEmpty ? nil : arguments
    }

    /// Runs the command and returns its trimmed stdout in secret memory.
    public static func run(_ line: String, timeout: Double, environment: [String: String]) throws(ConfigError) -> SecretBytes {
        guard let arguments = split(line) else {
            throw .keyCommandFailed(command: line, detail: "cannot parse the command line (unbalanced quote?)", stderr: "")
        }
        var outPipe: [Int32] = [-1, -1]
        var errPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else {
            throw .keyCommandFailed(command: arguments[0], detail: "cannot create pipes", stderr: "")
        }
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGPIPE, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        // Its own process group, so a timeout also stops whatever the command started.
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { argv.forEach { free($0) }; envp.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, envp)
        close(outPipe[1])
        close(errPipe[1])
        defer { close(outPipe[0]); close(errPipe[0]) }
        guard spawned == 0 else {
            throw .keyCommandFailed(command: arguments[0], detail: String(cString: strerror(spawned)), stderr: "")
        }

        let output = SecretBytes(count: outputLimit)
        var outputLength = 0
        var errorText: [UInt8] = []
        var open = [outPipe[0], errPipe[0]]
        var timedOut = false
        var overflow = false
        let deadline = monotonicSeconds() + timeout
        while !open.isEmpty {
            let remaining = deadline - monotonicSeconds()
            if remaining <= 0 { timedOut = true; break }
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            let ready = poll(&fds, nfds_t(fds.count), Int32(min(remaining, 1) * 1000))
            if ready < 0 && errno != EINTR { break }
            for entry in fds where entry.revents != 0 {
                if entry.fd == outPipe[0] {
                    let n = output.withUnsafeMutableBytes { raw in
                        outputLength < raw.count ? read(entry.fd, raw.baseAddress! + outputLength, raw.count - outputLength) : -2
                    }
                    if n == -2 { overflow = true; open.removeAll { $0 == entry.fd } }
                    else if n <= 0 { open.removeAll { $0 == entry.fd } } else { outputLength += n }
                } else {
                    var chunk = [UInt8](repeating: 0, count: 4096)
                    let n = read(entry.fd, &chunk, chunk.count)
                    if n <= 0 { open.removeAll { $0 == entry.fd } } else if errorText.count < 4096 { errorText += chunk[0..<n] }
                }
            }
        }
        if timedOut || overflow { kill(-pid, SIGKILL) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let stderrText = String(decoding: errorText, as: UTF8.self).trimmedWhitespace
        if timedOut {
            throw .keyCommandFailed(command: arguments[0], detail: "timed out after \(Int(timeout)) s (key_command_timeout)", stderr: stderrText)
        }
        if overflow {
            throw .keyCommandFailed(command: arguments[0], detail: "printed more than \(outputLimit) bytes", stderr: stderrText)
        }
        let exited = (status & 0x7f) == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            let detail = exited ? "exited with status \(code)" : "was killed by signal \(status & 0x7f)"
            throw .keyCommandFailed(command: arguments[0], detail: detail, stderr: stderrText)
        }
        output.truncate(to: outputLength)
        let key = output.trimmingWhitespace()
        guard key.count > 0 else {
            throw .keyCommandFailed(command: arguments[0], detail: "printed nothing on stdout", stderr: stderrText)
        }
        return key
    }

    static func monotonicSeconds() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}

