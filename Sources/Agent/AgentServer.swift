import CSystemShims
import GoogleKeys
import SystemIO
import VaultCore

/// The session agent: holds one unlocked vault (its data key, key-encryption key and
/// contents, all in sodium_malloc'd memory) and serves it over a uid-checked Unix socket.
///
/// One thread, one poll loop. Each connection carries one request and gets one response,
/// with a 5 s deadline for the whole request, so a stalled or hostile client costs a slot
/// for at most that long and never blocks another.
public final class AgentServer {
    public struct Timeouts: Sendable {
        public var idle: Double
        public var max: Double
        public init(idle: Double, max: Double) {
            self.idle = idle
            self.max = max
        }
    }

    let paths: AgentPaths
    let store: VaultStore
    let generations: GenerationRecord
    let log: (String) -> Void
    let requestDeadline = 5.0
    /// No session outlives a year, whatever a client asks (and no arithmetic overflows).
    static let longestSession: Int64 = 366 * 86400
    let maxConnections = 64

    private var document: VaultDocument?
    private var timeouts = Timeouts(idle: 900, max: 28800)
    private var unlockedAt: Int64 = 0
    private var lastActivity = 0.0
    private var startedMonotonic = 0.0
    private var uses: [String: Int64] = [:]
    private var connections: [PendingRequest] = []
    private var stopRequested = false

    public init(paths: AgentPaths, store: VaultStore, generations: GenerationRecord, log: @escaping (String) -> Void) {
        self.paths = paths
        self.store = store
        self.generations = generations
        self.log = log
    }

    public enum StartFailure: Error {
        case folder(TrustedOpenError)
        case alreadyRunning(String)
        case socket(SystemError)
    }

    /// Binds the socket (after taking the per-vault agent lock, so two agents never serve
    /// one vault) and serves until locked, expired or signalled. Returns the exit code.
    public func run() throws(StartFailure) -> Int32 {
        let opened: TrustedFolder?
        do throws(TrustedOpenError) { opened = try paths.openFolder(create: true) } catch { throw .folder(error) }
        guard let folder = opened else { throw .folder(.failed(SystemError("open", path: paths.folder, code: 2))) }
        let lock: FileLock
        do throws(FileLock.Failure) {
            lock = try FileLock.acquire(paths.lockName, in: folder, timeout: 0, onWait: { _ in })
        } catch {
            switch error {
            case .timedOut: throw .alreadyRunning(paths.socketPath)
            case .open(let failure): throw .folder(failure)
            case .failed(let failure): throw .socket(failure)
            }
        }
        // Holding the lock, any socket file left is a dead agent's.
        folder.remove(paths.socketName)
        let listening: FileDescriptor
        do { listening = try UnixSocket.listen(paths.socketPath) } catch { throw .socket(error) }
        listening.setNonBlocking()
        gv_agent_signals_install()
        ProcessIdentity.leaveWorkingFolder()
        log("agent for \(paths.vaultPath) listening on \(paths.socketPath) (pid \(ProcessIdentity.current))")
        serve(listening)
        wipe(persist: true)
        folder.remove(paths.socketName)
        withExtendedLifetime(lock) {}
        log("agent for \(paths.vaultPath) stopped")
        return 0
    }

    private func serve(_ listening: FileDescriptor) {
        while !stopRequested {
            if gv_agent_stop_requested() != 0 {
                log("signal received: wiping and exiting")
                return
            }
            if let reason = expiry() {
                log("session \(reason): wiping and exiting")
                return
            }
            let ready = Poller.readable([listening] + connections.map(\.descriptor), timeout: 0.5)
            if ready.contains(where: { $0 === listening }) { acceptConnections(listening) }
            // Each ready connection gets what it sent so far; nobody waits for a slow one.
            for connection in ready where connection !== listening { advance(connection) }
            let now = Clock.bootSeconds()
            connections.removeAll { pending in
                guard pending.deadline < now else { return false }
                log("dropped a client that sent no complete request within \(Int(requestDeadline)) s")
                return true
            }
        }
    }

    private func acceptConnections(_ listening: FileDescriptor) {
        while let connection = UnixSocket.accept(listening) {
            // Every peer is checked; any other uid, root included, is refused.
            guard let peer = try? UnixSocket.peer(of: connection), peer.uid == CurrentUser.id else {
                let peer = try? UnixSocket.peer(of: connection)
                log("refused a connection from uid \(peer.map { String($0.uid) } ?? "?") (pid \(peer.map { String($0.pid) } ?? "?")): only uid \(CurrentUser.id) may use this agent")
                continue
            }
            guard connections.count < maxConnections else {
                log("refused a connection: \(maxConnections) are already open")
                continue
            }
            connection.setNonBlocking()
            connections.append(PendingRequest(descriptor: connection, deadline: Clock.bootSeconds() + requestDeadline))
        }
    }

    /// Reads what a connection sent; once its request is whole, answers and closes it.
    private func advance(_ connection: FileDescriptor) {
        guard let index = connections.firstIndex(where: { $0.descriptor === connection }) else { return }
        let pending = connections[index]
        let outcome = pending.read()
        switch outcome {
        case .waiting:
            return
        case .closed:
            connections.remove(at: index)
        case .failed(let message):
            connections.remove(at: index)
            respond(connection, Self.error(.badRequest, message))
        case .complete(let body):
            connections.remove(at: index)
            guard let request = AgentMessage.parse(body: body), let operation = AgentProtocol.Operation(rawValue: request.code) else {
                respond(connection, Self.error(.badRequest, "malformed request"))
                return
            }
            respond(connection, perform(operation, request))
        }
    }

    private func respond(_ connection: FileDescriptor, _ message: AgentMessage) {
        // Responses are small next to the socket buffer; a client that stopped reading or left
        // gets at most a moment, never the whole deadline.
        let frame = message.frame()
        let until = Clock.bootSeconds() + 1
        frame.withUnsafeBytes { bytes in
            var offset = 0
            while offset < bytes.count && Clock.bootSeconds() < until {
                let attempt = Result { () throws(SystemError) in try connection.writeSome(UnsafeRawBufferPointer(rebasing: bytes[offset...])) }
                guard case .success(let written) = attempt else { return }  // the client left
                if let written { offset += written } else { _ = connection.waitWritable(timeout: 0.1) }
            }
        }
    }

    static func error(_ kind: AgentProtocol.ErrorKind, _ message: String) -> AgentMessage {
        var response = AgentMessage(code: 1)
        response.add(.errorKind, number: Int64(kind.rawValue))
        response.add(.message, text: message)
        return response
    }

    // MARK: Operations

    private func perform(_ operation: AgentProtocol.Operation, _ request: AgentMessage) -> AgentMessage {
        switch operation {
        case .status:
            return status()  // never extends the session
        case .keyNames:
            return keyNames()  // for completion: no secret, and no use
        case .unlock:
            return unlock(request)
        case .lock:
            stopRequested = true
            log("locked on request")
            return AgentMessage(code: 0)
        case .contents, .write, .rekey:
            guard document != nil else { return Self.error(.locked, "the session is locked") }
            lastActivity = Clock.bootSeconds()
            switch operation {
            case .contents: return contents(request)
            case .write: return write(request)
            default: return rekey()
            }
        }
    }

    private func status() -> AgentMessage {
        var response = AgentMessage(code: 0)
        response.add(.state, number: document == nil ? 0 : 1)
        response.add(.vaultPath, text: paths.vaultPath)
        response.add(.pid, number: Int64(ProcessIdentity.current))
        if document != nil {
            let now = Clock.now()
            let elapsedIdle = Clock.bootSeconds() - lastActivity
            let elapsedTotal = Clock.bootSeconds() - startedMonotonic
            response.add(.unlockedAt, number: unlockedAt)
            response.add(.idleDeadline, number: now + Int64(max(0, timeouts.idle - elapsedIdle)))
            response.add(.maxDeadline, number: now + Int64(max(0, timeouts.max - elapsedTotal)))
        }
        return response
    }

    private func unlock(_ request: AgentMessage) -> AgentMessage {
        guard let kek = request.secret(.keyEncryptionKey) else { return Self.error(.badRequest, "unlock needs the key-encryption key") }
        let idle = Double(min(max(request.number(.idleSeconds) ?? 900, 1), Self.longestSession))
        let maximum = Double(min(max(request.number(.maxSeconds) ?? 28800, 1), Self.longestSession))
        do {
            let file = try readFile()
            let opened = try VaultDocument.open(file, path: store.path, kek: kek)
            if let previous = document { opened.contents.recordUse(uses); _ = previous }
            document = opened
            remember(file)
        } catch let error as VaultError {
            return failure(error)
        } catch is AgentLocked {
            return Self.error(.locked, "the session ended")
        } catch {
            return Self.error(.failed, "\(error)")
        }
        timeouts = Timeouts(idle: max(1, idle), max: max(1, maximum))
        unlockedAt = Clock.now()
        startedMonotonic = Clock.bootSeconds()
        lastActivity = startedMonotonic
        log("unlocked \(paths.vaultPath) (idle \(Int(timeouts.idle)) s, at most \(Int(timeouts.max)) s)")
        return status()
    }

    private func keyNames() -> AgentMessage {
        guard let document else { return Self.error(.locked, "the session is locked") }
        var response = AgentMessage(code: 0)
        response.add(.keyNames, text: document.contents.keys.map(\.name).joined(separator: "\n"))
        response.add(.keyKinds, text: document.contents.keys.map(\.secret.googleKeyKind.rawValue).joined(separator: "\n"))
        return response
    }

    private func contents(_ request: AgentMessage) -> AgentMessage {
        answering {
            try refreshIfChanged()
            guard let document else { return Self.error(.locked, "the session is locked") }
            if let name = request.text(.keyName), document.contents.key(named: name) != nil {
                uses[name] = Clock.now()
                document.contents.recordUse([name: uses[name]!])
            }
            var response = AgentMessage(code: 0)
            response.add(.generation, number: Int64(document.file.generation))
            response.add(.payload, secret: try document.contents.exported())
            return response
        }
    }

    /// Replaces the contents with a client's edit, if it was based on the current generation.
    private func write(_ request: AgentMessage) -> AgentMessage {
        guard let payload = request.secret(.payload), let base = request.number(.generation) else {
            return Self.error(.badRequest, "write needs a payload and its generation")
        }
        let backup: VaultStore.Backup = request.number(.backup) == 1 ? .new : .previous
        return answering {
            let imported = try VaultContents.imported(payload, source: "the client's edit")
            return try locked({ document in
                guard UInt64(bitPattern: base) == document.file.generation else {
                    return Self.error(.stale, "the vault changed since it was read (generation \(document.file.generation), not \(base))")
                }
                imported.recordUse(uses)
                document.replaceContents(imported)
                return nil
            }, backup: backup)
        }
    }

    private func rekey() -> AgentMessage {
        var code: SecretBytes?
        return answering {
            var response = try locked({ document in
                code = try document.rekey()
                return nil
            }, backup: .new)
            if let code { response.add(.recoveryCode, secret: code) }
            return response
        }
    }

    /// The answer `body` gives, or the error it threw, as the client should see it.
    private func answering(_ body: () throws -> AgentMessage) -> AgentMessage {
        do {
            return try body()
        } catch let error as VaultError {
            return failure(error)
        } catch is AgentLocked {
            return Self.error(.locked, "the session ended")
        } catch {
            return Self.error(.failed, "\(error)")
        }
    }

    /// A write under the vault's lock: the file is re-read first (another writer may have
    /// been there), `change` edits the document or answers instead, then the save.
    private func locked(_ change: (VaultDocument) throws -> AgentMessage?, backup: VaultStore.Backup) throws -> AgentMessage {
        try store.withExclusiveLock { session in
            guard let bytes = try session.read() else { throw VaultError.notFound(path: store.path) }
            try adopt(try VaultFile.parse(bytes, path: store.path))
            guard let document else { return Self.error(.locked, "the session is locked") }
            if let answer = try change(document) { return answer }
            let seen = document.file.vaultIDHex.flatMap { try? generations.highestSeen(vaultID: $0) } ?? 0
            try store.write(try document.sealed(minimumGeneration: seen), in: session, backup: backup)
            remember(document.file)
            var response = AgentMessage(code: 0)
            response.add(.generation, number: Int64(document.file.generation))
            return response
        }
    }

    // MARK: The file underneath

    private func readFile() throws -> VaultFile {
        let file = try VaultFile.parse(try store.read(), path: store.path)
        do {
            try checkNotRolledBack(file)
            return file
        } catch VaultError.rolledBack {
            // Read without the lock, the file can look older than a record just written.
            let again = try VaultFile.parse(try store.read(), path: store.path)
            try checkNotRolledBack(again)
            return again
        }
    }

    /// The same rule as every command: not older than the highest generation recorded for the
    /// vault's id (for format 1 files, which have none, for its path).
    private func checkNotRolledBack(_ file: VaultFile) throws {
        let record = file.vaultIDHex ?? pathRecord
        if let seen = try? generations.highestSeen(vaultID: record), file.generation < seen {
            throw VaultError.rolledBack(path: store.path, generation: file.generation, seen: seen)
        }
    }

    private var pathRecord: String { Sodium.fingerprint(paths.vaultPath) }

    private func remember(_ file: VaultFile) {
        if let id = file.vaultIDHex { try? generations.record(vaultID: id, generation: file.generation) }
        try? generations.record(vaultID: pathRecord, generation: file.generation, allowLower: file.vaultIDHex != nil)
    }

    /// Another writer (or a sync from another machine) may have changed the file: reload it.
    private func refreshIfChanged() throws {
        try adopt(try readFile())
    }

    private func adopt(_ file: VaultFile) throws {
        guard let current = document else { return }
        if file.vaultID == current.file.vaultID && file.generation == current.file.generation { return }
        guard file.vaultID != nil, file.vaultID == current.file.vaultID else {
            // Another vault, or an older format's copy, put in its place: this session is over,
            // and the commands' own checks judge the file.
            log("the vault file was replaced by another vault or an older format: wiping and exiting")
            wipe(persist: false)
            stopRequested = true
            throw AgentLocked()
        }
        if file.generation < current.file.generation {
            throw VaultError.rolledBack(path: store.path, generation: file.generation, seen: current.file.generation)
        }
        try checkNotRolledBack(file)
        guard let kek = current.keyEncryptionKey, let reloaded = try? VaultDocument.open(file, path: store.path, kek: kek) else {
            // The passphrase changed underneath: this session can no longer follow the vault.
            log("the vault was changed by a writer with another passphrase; locking")
            wipe(persist: false)
            stopRequested = true
            throw VaultError.wrongPassphrase
        }
        reloaded.contents.recordUse(uses)
        document = reloaded
        remember(file)
        log("reloaded \(store.path) at generation \(file.generation)")
    }

    private func failure(_ error: VaultError) -> AgentMessage {
        switch error {
        case .rolledBack(_, let generation, let seen):
            var response = Self.error(.rolledBack, "the vault went back from generation \(seen) to \(generation)")
            response.add(.generation, number: Int64(generation))
            response.add(.seenGeneration, number: Int64(seen))
            return response
        case .wrongPassphrase:
            return Self.error(.wrongKey, "the key does not open the vault")
        default:
            return Self.error(.failed, "\(error)")
        }
    }

    // MARK: Ending

    /// The boot-time clock keeps counting while the machine sleeps, and the wall clock is
    /// checked too, so a laptop closed overnight wakes locked.
    private func expiry() -> String? {
        guard document != nil else { return nil }
        let now = Clock.bootSeconds()
        if now - lastActivity >= timeouts.idle { return "idle for \(Int(timeouts.idle)) s" }
        if now - startedMonotonic >= timeouts.max || Double(Clock.now() - unlockedAt) >= timeouts.max {
            return "open for \(Int(timeouts.max)) s"
        }
        return nil
    }

    /// Records last uses in the vault (best effort), then drops every secret: SecretBytes
    /// are wiped by sodium_free as their last reference goes.
    private func wipe(persist: Bool) {
        if persist, document != nil, !uses.isEmpty {
            _ = try? locked({ document in
                document.contents.recordUse(self.uses)
                return nil
            }, backup: .previous)
        }
        document = nil
        uses = [:]
        for connection in connections { _ = connection }
        connections = []
    }
}

/// The session ended while answering (the file was replaced by another vault).
struct AgentLocked: Error {}

/// A request arriving on one connection: the 8-byte header, then the body, read as bytes come.
final class PendingRequest {
    enum Outcome {
        case waiting, closed
        case failed(String)
        case complete(SecretBytes)
    }

    let descriptor: FileDescriptor
    let deadline: Double
    private var header = [UInt8](repeating: 0, count: 8)
    private var headerCount = 0
    private var body: SecretBytes?
    private var bodyCount = 0

    init(descriptor: FileDescriptor, deadline: Double) {
        self.descriptor = descriptor
        self.deadline = deadline
    }

    func read() -> Outcome {
        if headerCount < 8 {
            switch header.withUnsafeMutableBytes({ pull(into: $0, from: headerCount) }) {
            case .some(let count) where count > 0: headerCount += count
            case .some: return .closed
            case .none: return .waiting
            }
            guard headerCount == 8 else { return .waiting }
            do throws(FrameReader.Failure) { body = SecretBytes(count: try FrameReader.bodyLength(header)) } catch {
                return .failed(error == .tooLarge ? "request larger than \(AgentProtocol.maxFrame) bytes" : "malformed request")
            }
        }
        guard let body else { return .failed("malformed request") }
        switch body.withUnsafeMutableBytes({ pull(into: $0, from: bodyCount) }) {
        case .some(let count) where count > 0: bodyCount += count
        case .some: return .closed
        case .none: return .waiting
        }
        return bodyCount == body.count ? .complete(body) : .waiting
    }

    /// Bytes read into `buffer` after `offset`: nil when none are waiting, 0 when the client left.
    private func pull(into buffer: UnsafeMutableRawBufferPointer, from offset: Int) -> Int? {
        let outcome = Result { () throws(SystemError) in try descriptor.readAvailable(into: UnsafeMutableRawBufferPointer(rebasing: buffer[offset...])) }
        guard case .success(let count) = outcome else { return 0 }
        return count
    }
}
