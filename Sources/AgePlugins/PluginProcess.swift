import AgeFormat
import Glibc
import SystemIO
import VaultCore

/// One run of `age-plugin-NAME --age-plugin=STATE_MACHINE`: stanzas written to its stdin and read
/// from its stdout, each read within a deadline and every line and body within a bound; its
/// stderr kept (bounded) to show when it fails. Its process group is killed when it is closed.
final class PluginProcess {
    let name: String
    let limits: AgePluginLimits
    private let child: ChildProcess
    private let runDeadline: Deadline
    private var pending: [UInt8] = []
    private var errors: [UInt8] = []
    private var closed = false
    /// Until its stderr ends (a closed stream stays readable: polled no more).
    private var errorsOpen = true
    /// Set when the plugin said `done` at the end of phase 2: it is then given a moment to exit.
    var finished = false

    init(plugin name: String, stateMachine: String, environment: [String: String], limits: AgePluginLimits) throws(AgeError) {
        self.name = name
        self.limits = limits
        let program = AgePluginName.program(name)
        guard let path = Self.find(program, in: environment["PATH"] ?? ""), let checked = try Self.open(path) else {
            throw AgeError(.plugin, "\(program) was not found on PATH: install the plugin for '\(name)' recipients and identities")
        }
        do throws(SystemError) {
            child = try ProcessSpawner.spawn([path, "--age-plugin=\(stateMachine)"], environment: environment, input: .pipe, output: .pipe,
                                             errors: .pipe, ownProcessGroup: true, program: checked)
        } catch {
            throw AgeError(.plugin, "\(program) could not be started: \(error.reason)")
        }
        runDeadline = Deadline(after: limits.runSeconds, clock: limits.clock)
        // Room for the longest line and one more read: a buffer that grew would leave copies of
        // a file key's base64 behind, unwiped.
        pending.reserveCapacity(max(limits.lineBytes, AgePluginWire.bodyColumns) + Self.readBytes + 1)
        if let input = child.standardInput { _ = fcntl(input.raw, F_SETFL, fcntl(input.raw, F_GETFL) | O_NONBLOCK) }
    }

    deinit { close() }

    var program: String { AgePluginName.program(name) }

    /// The first executable regular file called `program` in an absolute PATH entry: relative
    /// entries (the current directory) are never searched (age-plugin.md).
    static func find(_ program: String, in path: String) -> String? {
        for folder in path.split(separator: ":") where folder.hasPrefix("/") {
            let candidate = folder.hasSuffix("/") ? "\(folder)\(program)" : "\(folder)/\(program)"
            if FileStatus.of(candidate)?.kind == .regular, access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    /// The plugin found at `path`, opened and checked on its descriptor (the one then run): it
    /// is refused, never run, when another account could have changed it (Docs/security.md).
    static func open(_ path: String) throws(AgeError) -> FileDescriptor? {
        do throws(TrustedOpenError) {
            return try TrustedFile.openProgram(path)
        } catch {
            switch error {
            case .refused(let failure):
                throw AgeError(.plugin, "refusing to run the age plugin \(path): \(failure.path) \(failure.problem.description) (\(failure.fix))")
            case .failed(let failure):
                throw AgeError(.plugin, "the age plugin \(path) could not be opened: \(failure.reason)")
            }
        }
    }

    /// A failure naming the plugin, with the end of what it wrote to stderr (neutralised by the caller's printing).
    func failure(_ detail: String) -> AgeError {
        let said = String(decoding: errors.suffix(600), as: UTF8.self).split(whereSeparator: \.isNewline).suffix(3).joined(separator: " / ")
        return AgeError(.plugin, "the age plugin \(program) \(detail)" + (said.isEmpty ? "" : "; it said: \(said)"))
    }

    // MARK: Writing

    /// Writes one command; the body's encoding is wiped after.
    func send(_ command: String, _ arguments: [String] = [], body: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) throws(AgeError) {
        var bytes = AgePluginWire.encode(command, arguments, body: body)
        defer { SecretBytes.wipe(&bytes) }
        try write(bytes)
    }

    func send(_ command: String, _ arguments: [String] = [], body: [UInt8]) throws(AgeError) {
        // Array's withUnsafeBytes rethrows untyped: the typed error travels in a Result.
        try body.withUnsafeBytes { raw in Result { () throws(AgeError) in try send(command, arguments, body: raw) } }.get()
    }

    /// `add-identity IDENTITY` built from secret memory: the identity never becomes a String.
    func sendIdentity(_ identity: SecretBytes) throws(AgeError) {
        var bytes = Array("-> add-identity ".utf8)
        bytes.reserveCapacity(bytes.count + identity.count + 2)
        identity.withUnsafeBytes { bytes += $0 }
        bytes += [10, 10]
        defer { SecretBytes.wipe(&bytes) }
        try write(bytes)
    }

    private func write(_ bytes: [UInt8]) throws(AgeError) {
        guard let input = child.standardInput else { throw failure("closed its input") }
        let deadline = stepDeadline()
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { Glibc.write(input.raw, $0.baseAddress! + written, $0.count - written) }
            if count > 0 { written += count; continue }
            if count < 0 && errno == EINTR { continue }
            guard count < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) else { throw ended() }
            guard !deadline.hasPassed else { throw failure("did not read its input within \(Self.seconds(limits.stepSeconds))") }
            drainErrors()
            _ = Poller.ready([(input, .write)], timeout: deadline.slice(atMost: 0.5))
        }
    }

    // MARK: Reading

    /// The next stanza from the plugin, within one step's deadline.
    func receive() throws(AgeError) -> PluginCommand {
        let deadline = stepDeadline()
        var first = try line(limit: limits.lineBytes, deadline: deadline)
        defer { SecretBytes.wipe(&first) }
        guard first.starts(with: Array("-> ".utf8)) else { throw failure("sent a line that is not a command (the protocol was broken)") }
        let words = first.dropFirst(3).split(separator: 32, omittingEmptySubsequences: false)
        guard !words.isEmpty, words.allSatisfy(AgePluginWire.isArgument) else { throw failure("sent a command with malformed arguments") }
        var body: [UInt8] = []
        // Room for the largest body at once: a growing array would leave copies of a file key behind.
        body.reserveCapacity(limits.bodyBytes + AgePluginWire.bodyColumns)
        while true {
            var bodyLine = try line(limit: AgePluginWire.bodyColumns, deadline: deadline)
            defer { SecretBytes.wipe(&bodyLine) }
            guard var decoded = AgePluginWire.decodeLine(bodyLine) else { throw failure("sent a body that is not canonical base64 in lines of 64 columns") }
            body += decoded
            SecretBytes.wipe(&decoded)
            guard body.count <= limits.bodyBytes else {
                SecretBytes.wipe(&body)
                throw failure("sent a command body over \(limits.bodyBytes) bytes")
            }
            if bodyLine.count < AgePluginWire.bodyColumns { break }
        }
        let strings = words.map { String(decoding: $0, as: UTF8.self) }
        return PluginCommand(type: strings[0], arguments: Array(strings.dropFirst()), body: body)
    }

    /// One line without its newline, at most `limit` bytes.
    private func line(limit: Int, deadline: Deadline) throws(AgeError) -> [UInt8] {
        while true {
            if let end = pending.firstIndex(of: 10) {
                guard end <= limit else { throw failure("sent a line over \(limit) bytes") }
                let line = Array(pending[..<end])
                dropPending(end + 1)
                return line
            }
            guard pending.count <= limit else { throw failure("sent a line over \(limit) bytes") }
            try fill(deadline: deadline)
        }
    }

    /// The first `count` bytes of `pending` gone, the rest moved up in place and the bytes it
    /// leaves zeroed: no copy of a line stays past the end.
    private func dropPending(_ count: Int) {
        pending.withUnsafeMutableBytes { raw in
            guard let base = raw.baseAddress else { return }
            memmove(base, base + count, raw.count - count)
            memset(base + raw.count - count, 0, count)
        }
        pending.removeLast(count)
    }

    static let readBytes = 4096

    /// More of stdout (and any stderr meanwhile), waiting at most until `deadline`.
    private func fill(deadline: Deadline) throws(AgeError) {
        guard let output = child.standardOutput else { throw failure("has no output") }
        var chunk = [UInt8](repeating: 0, count: Self.readBytes)
        defer { SecretBytes.wipe(&chunk) }
        while true {
            guard !deadline.hasPassed else {
                throw failure(runDeadline.hasPassed ? "ran past gemvault's bound of \(Self.seconds(limits.runSeconds)) for one run"
                                                    : "did not answer within \(Self.seconds(limits.stepSeconds))")
            }
            let streams = [output] + (errorsOpen ? child.standardError.map { [$0] } ?? [] : [])
            for stream in Poller.readable(streams, timeout: deadline.slice(atMost: 0.5)) {
                let count = chunk.withUnsafeMutableBytes { (try? stream.read(into: $0)) ?? 0 }
                if stream === output {
                    guard count > 0 else { throw ended() }
                    pending += chunk[0..<count]
                    return
                }
                if count <= 0 { errorsOpen = false } else if errors.count < limits.errorBytes { errors += chunk[0..<count] }
            }
        }
    }

    /// The plugin closed its end: it ended (or is ending) early; its status and stderr tell why.
    private func ended() -> AgeError {
        let status = endingText()
        drainErrors()
        return failure("ended before finishing" + status)
    }

    /// Reads what stderr holds now, without waiting.
    private func drainErrors() {
        guard errorsOpen, let stream = child.standardError else { return }
        var chunk = [UInt8](repeating: 0, count: 4096)
        // A few reads at most: a plugin writing stderr without end cannot hold gemvault here.
        for _ in 0..<8 where !Poller.readable([stream], timeout: 0).isEmpty {
            let count = chunk.withUnsafeMutableBytes { (try? stream.read(into: $0)) ?? 0 }
            guard count > 0 else { errorsOpen = false; return }
            if errors.count < limits.errorBytes { errors += chunk[0..<count] }
        }
    }

    private func endingText() -> String {
        let grace = Deadline(after: 0.5)
        while !grace.hasPassed {
            if let ending = child.endedYet() {
                // Reaped: whatever it left running in its group goes now.
                child.signalGroup(SIGKILL)
                closed = true
                switch ending {
                case .exited(let code): return " (exit status \(code))"
                case .signaled(let signal): return " (killed by signal \(signal))"
                }
            }
            usleep(10_000)
        }
        return ""
    }

    static func seconds(_ value: Double) -> String { value == 1 ? "1 second" : "\(Int(value)) seconds" }

    private func stepDeadline() -> Deadline {
        let step = Deadline(after: limits.stepSeconds, clock: limits.clock)
        return step.moment < runDeadline.moment ? step : runDeadline
    }

    // MARK: Ending

    /// Ends the run: stdin closed, a moment for a plugin that finished to exit on its own, then
    /// its whole process group killed (whatever it started goes too) and the plugin reaped.
    func close() {
        guard !closed else { return }
        closed = true
        child.closeStandardInput()
        if finished, let output = child.standardOutput {
            let grace = Deadline(after: 1)
            var chunk = [UInt8](repeating: 0, count: 512)
            while !grace.hasPassed, !Poller.readable([output], timeout: grace.slice(atMost: 0.2)).isEmpty {
                if chunk.withUnsafeMutableBytes({ (try? output.read(into: $0)) ?? 0 }) <= 0 { break }
            }
            SecretBytes.wipe(&chunk)
        }
        child.signalGroup(SIGKILL)
        _ = child.wait()
        SecretBytes.wipe(&pending)
    }
}

/// One command as read: its body may be a file key, so it can be wiped.
struct PluginCommand {
    let type: String
    let arguments: [String]
    var body: [UInt8]
}
