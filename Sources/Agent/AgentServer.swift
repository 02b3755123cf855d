import AgeFormat
import CSystemShims
import GoogleKeys
import Settings
import SystemIO
import VaultCore

/// The session agent: holds one unlocked vault (its data key, key-encryption key and
/// contents, all in sodium_malloc'd memory) and serves it over a uid-checked Unix socket.
///
/// One thread, one poll loop, non-blocking sockets. Each connection carries one request and
/// gets one answer; its state (the request so far, the answer not yet taken, its deadline)
/// lives in an `AgentConnection`, so a slow, silent or hostile client holds one of the
/// `Limits.connections` slots for a few seconds at most and never delays another. When every
/// slot is taken, the connection idle the longest makes room for the new one.
public final class AgentServer {
    public struct Timeouts: Sendable {
        public var idle: Double
        public var max: Double
        public init(idle: Double, max: Double) {
            self.idle = idle
            self.max = max
        }

        /// The session_idle and session_max settings' defaults, for an unlock that names no limits.
        static var settingsDefaults: Timeouts {
            Timeouts(idle: Setting.sessionIdle.defaultValue, max: Setting.sessionMax.defaultValue)
        }
    }

    /// What one client may cost (Docs/session.md lists them).
    enum Limits {
        static let connections = 32
        /// From the connection to the request's first byte.
        static let firstByte = 5.0
        /// From a request's first byte to its last.
        static let request = 2.0
        /// From an answer being ready to the client having taken all of it.
        static let answer = 5.0
        /// The secret memory all requests being received may hold together. While a request
        /// grows, the old and the new buffer live side by side, under twice its size. So every slot
        /// can receive a request of 80 KiB at once (a change of any value, a file's stanzas); a
        /// larger change or share (a sharing record naming post-quantum recipients, up to
        /// `maxChangeRequest`) is taken while room is left, and no flood makes the agent hold more.
        static let requestMemory = connections * 2 * AgentProtocol.maxStanzaRequest
        /// The memory answers not yet taken may hold together; slow readers of large answers
        /// beyond it are dropped, idlest first.
        static let answerMemory = 2 * AgentProtocol.maxFrame
        /// Connections taken from the backlog per turn of the loop, so the ones just accepted
        /// are read before a flood behind them could push them out.
        static let acceptsPerTurn = 16
        /// Drops are logged at most this often (summed), so a flood cannot fill the log.
        static let dropReportInterval = 10.0
        /// The least time between two PIN guesses, whoever sends them.
        static let pinInterval = 0.2
    }

    let paths: AgentPaths
    let store: VaultStore
    /// The vault file's rules, the commands' own (VaultCore's VaultFileAccess).
    let file: VaultFileAccess
    let log: (String) -> Void
    /// No session outlives a year, whatever a client asks (and no arithmetic overflows).
    static let longestSession: Int64 = 366 * 86400

    var document: VaultDocument?
    /// The vault file and its records as they were when last read (`refreshIfChanged`).
    var fileSignature: FileSignature?
    var timeouts = Timeouts.settingsDefaults
    var unlockedAt: Int64 = 0
    var lastActivity = 0.0
    var startedMonotonic = 0.0
    var uses: [String: Int64] = [:]
    /// The session's key wrapped under a PIN (`pin set`, `unlock --pin`): kept through an idle
    /// lock, until the absolute limit, a lock, a passphrase change or the last wrong try.
    var pinUnlock: PINWrappedKey?
    /// Google access tokens by credential and scopes (`TokenCache.swift`), in secret memory.
    var tokenCache: [String: (token: SecretBytes, expiresAt: Int64)] = [:]
    /// The vault's hybrid identity expanded (`HybridDecapsulation.swift`), while unlocked.
    var heldHybridIdentity: HybridIdentity?
    /// The data key's check when the PIN was set: after a rekey it opens nothing.
    var pinDataKeyCheck: SecretBytes?
    var pinTriesLeft = 0
    var pinTries = 0
    /// When the last PIN was tried: guesses come at most every `Limits.pinInterval`.
    var lastPINAttempt = -Double.infinity
    /// Requests answered: the unit tests count a command's round trips with it.
    public private(set) var requestsAnswered = 0
    private var connections: [AgentConnection] = []
    /// The chats watching the session, outside the connection slots and their deadlines.
    let watchers = SessionWatchers()
    var stopRequested = false
    private var drops: [String: Int] = [:]
    private var lastDropReport = -Double.infinity

    public init(paths: AgentPaths, store: VaultStore, generations: GenerationRecord, log: @escaping @Sendable (String) -> Void) {
        self.paths = paths
        self.store = store
        // The agent never accepts a rollback: that is a command's choice, made without it.
        self.file = VaultFileAccess(store: store, rollback: RollbackGuard(record: generations, vaultPath: paths.vaultPath, acceptsRollback: false),
                                    warn: log)
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
        do {
            listening = try UnixSocket.listen(paths.socketName, in: folder.descriptor, path: paths.socketPath)
        } catch {
            throw .socket(error)
        }
        listening.setNonBlocking()
        gv_agent_signals_install()
        ProcessIdentity.leaveWorkingFolder()
        log("agent for \(paths.vaultPath) listening on \(paths.socketPath) (pid \(ProcessIdentity.current))")
        serve(listening)
        reportDrops(force: true)
        wipe(persist: true)
        folder.remove(paths.socketName)
        withExtendedLifetime(lock) {}
        log("agent for \(paths.vaultPath) stopped")
        return 0
    }

    // MARK: The loop

    private func serve(_ listening: FileDescriptor) {
        while !stopRequested {
            if gv_agent_stop_requested() != 0 {
                log("signal received: wiping and exiting")
                break
            }
            if let reason = expiry() {
                log("session \(reason): wiping and exiting")
                break
            }
            let current = connections
            let watching = watchers.descriptors
            let watched = [(listening, Poller.Interest.read)] + current.map { ($0.descriptor, $0.interest) } + watching.map { ($0, .read) }
            let ready = Poller.ready(watched, timeout: nextTimeout())
            // Clients first, then new connections: one that was just accepted gets its turn
            // before a flood behind it could push it out.
            for index in ready where index > 0 && index <= current.count {
                // After a lock (or a limit found passed), nobody else is served from the vault.
                if stopRequested { break }
                service(current[index - 1])
            }
            // A chat's turn is a use of the session, as its request per turn was.
            if watchers.takeTurns(ready: ready.filter { $0 > current.count }.map { watching[$0 - current.count - 1] }), document != nil {
                lastActivity = Clock.bootSeconds()
            }
            if ready.first == 0 && !stopRequested { acceptConnections(listening) }
            dropLate()
            connections.removeAll { $0.isFinished }
            reportDrops(force: false)
        }
        finishAnswers()
    }

    /// Until the nearest connection deadline, and at most half a second (signals and the
    /// session's own limits are checked between turns).
    private func nextTimeout() -> Double {
        let now = Clock.bootSeconds()
        let nearest = connections.map(\.deadline).min() ?? .infinity
        return max(0, min(0.5, nearest - now))
    }

    private func acceptConnections(_ listening: FileDescriptor) {
        for _ in 0..<Limits.acceptsPerTurn {
            guard let connection = UnixSocket.accept(listening) else { return }
            // Every peer is checked; any other uid, root included, is refused.
            guard let peer = try? UnixSocket.peer(of: connection), peer.uid == CurrentUser.id else {
                let peer = try? UnixSocket.peer(of: connection)
                log("refused a connection from uid \(peer.map { String($0.uid) } ?? "?") (pid \(peer.map { String($0.pid) } ?? "?")): only uid \(CurrentUser.id) may use this agent")
                continue
            }
            if connections.count >= Limits.connections, let idlest = connections.min(by: { $0.lastProgress < $1.lastProgress }) {
                noteDrop("were idle longest when \(Limits.connections) connections were open and another came")
                idlest.finish()
                connections.removeAll { $0 === idlest }
            }
            connection.setNonBlocking()
            connections.append(AgentConnection(descriptor: connection, now: Clock.bootSeconds(), firstByteWait: Limits.firstByte))
        }
    }

    private func service(_ connection: AgentConnection) {
        guard !connection.isFinished else { return }
        if connection.interest == .read { receive(connection) } else { send(connection) }
    }

    /// Reads what the client sent; once its request is whole (or refused), answers it.
    private func receive(_ connection: AgentConnection) {
        let before = connection.request.received
        let heldByOthers = connections.reduce(0) { $0 + ($1 === connection ? 0 : $1.request.held) }
        let outcome = connection.request.take(room: Limits.requestMemory - heldByOthers) { buffer in
            let attempt = Result { () throws(SystemError) in try connection.descriptor.readAvailable(into: buffer) }
            guard case .success(let count) = attempt else { return 0 }  // an error reads as the client leaving
            return count
        }
        if connection.request.received > before {
            let now = Clock.bootSeconds()
            if before == 0 { connection.deadline = now + Limits.request }
            connection.lastProgress = now
        }
        switch outcome {
        case .waiting:
            return
        case .closed:
            connection.finish()
        case .refused(let refusal):
            answer(connection, Self.refusal(refusal))
        case .complete(let body):
            // A request that arrives after a limit passed finds the session over.
            if let reason = expiry() { end("session \(reason): wiping and exiting") }
            guard let request = AgentMessage.parse(body: body), let operation = AgentProtocol.Operation(rawValue: request.code) else {
                answer(connection, Self.error(.badRequest, "malformed request"))
                return
            }
            requestsAnswered += 1
            let response = perform(operation, request)
            connection.becomesWatcher = operation == .watch && response.code == 0
            answer(connection, response)
        }
    }

    private static func refusal(_ refusal: FrameAssembler.Refusal) -> AgentMessage {
        switch refusal {
        case .malformed: error(.badRequest, "malformed request")
        case .unknownOperation(let code): error(.badRequest, "unknown operation \(code)")
        case .tooLarge(let limit): error(.badRequest, "request larger than \(limit) bytes, the most its operation takes")
        case .noRoom: error(.failed, "the agent is busy receiving other large requests; try again")
        case .outOfMemory: error(.failed, "the agent has no memory for this request")
        }
    }

    /// Queues the answer and sends what the socket takes now (usually all of it).
    private func answer(_ connection: AgentConnection, _ message: AgentMessage) {
        connection.request = FrameAssembler(kind: .request)  // the request's memory goes now
        guard let frame = message.frameIfMemory() else {
            noteDrop("could not be answered for lack of memory")
            connection.finish()
            return
        }
        let now = Clock.bootSeconds()
        connection.answer = frame
        connection.deadline = now + Limits.answer
        connection.lastProgress = now
        send(connection)
        if !connection.isFinished { makeRoomForAnswers(besides: connection) }
    }

    /// Answers still waiting for their clients hold at most `Limits.answerMemory` together:
    /// beyond it, the clients idle longest are dropped.
    private func makeRoomForAnswers(besides newest: AgentConnection) {
        var waiting = connections.filter { !$0.isFinished && $0.answer != nil && $0 !== newest }.sorted { $0.lastProgress < $1.lastProgress }
        var held = waiting.reduce(newest.answer?.count ?? 0) { $0 + ($1.answer?.count ?? 0) }
        while held > Limits.answerMemory, let idlest = waiting.first {
            held -= idlest.answer?.count ?? 0
            noteDrop("had not taken their answers when a new one needed the memory")
            idlest.finish()
            waiting.removeFirst()
        }
    }

    /// Writes what the client takes without blocking; closes the connection once it took all.
    private func send(_ connection: AgentConnection) {
        guard let frame = connection.answer else { return }
        while connection.answerSent < frame.count {
            let attempt = frame.withUnsafeBytes { bytes in
                Result { () throws(SystemError) in try connection.descriptor.writeSome(UnsafeRawBufferPointer(rebasing: bytes[connection.answerSent...])) }
            }
            switch attempt {
            case .failure:
                connection.finish()  // the client left
                return
            case .success(nil):
                return  // the socket is full; poll says when it takes more
            case .success(let written?):
                connection.answerSent += written
                connection.lastProgress = Clock.bootSeconds()
            }
        }
        if connection.becomesWatcher, !stopRequested { watchers.add(connection.descriptor) }
        connection.finish()
    }

    private func dropLate() {
        let now = Clock.bootSeconds()
        for connection in connections where !connection.isFinished && connection.deadline <= now {
            if connection.answer != nil {
                noteDrop("did not take their answer within \(Int(Limits.answer)) s")
            } else if connection.request.hasStarted {
                noteDrop("sent no complete request within \(Int(Limits.request)) s of its first byte")
            } else {
                noteDrop("sent nothing within \(Int(Limits.firstByte)) s")
            }
            connection.finish()
        }
    }

    /// On the way out: answers already made (lock's) get a moment to reach their clients.
    private func finishAnswers() {
        let until = Clock.bootSeconds() + 1
        while true {
            let pending = connections.filter { !$0.isFinished && $0.answer != nil }
            let left = until - Clock.bootSeconds()
            guard !pending.isEmpty, left > 0 else { break }
            for index in Poller.ready(pending.map { ($0.descriptor, .write) }, timeout: left) { send(pending[index]) }
        }
        connections = []
    }

    private func noteDrop(_ reason: String) {
        drops[reason, default: 0] += 1
    }

    /// Logs the drops since the last report, summed, at most every `Limits.dropReportInterval`.
    private func reportDrops(force: Bool) {
        guard !drops.isEmpty else { return }
        let now = Clock.bootSeconds()
        guard force || now - lastDropReport >= Limits.dropReportInterval else { return }
        for (reason, count) in drops.sorted(by: { $0.key < $1.key }) {
            log("dropped \(count) connection\(count == 1 ? "" : "s") that \(reason)")
        }
        drops = [:]
        lastDropReport = now
    }

    static func error(_ kind: AgentProtocol.ErrorKind, _ message: String) -> AgentMessage {
        var response = AgentMessage(code: 1)
        response.add(.errorKind, number: Int64(kind.rawValue))
        response.add(.message, text: message)
        return response
    }

    // MARK: Ending

    /// The boot-time clock keeps counting while the machine sleeps, and the wall clock is
    /// checked too, so a laptop closed overnight wakes locked.
    /// An idle session with a PIN is not ended: its vault is wiped and the PIN-wrapped key
    /// stays until the absolute limit.
    private func expiry() -> String? {
        guard document != nil || pinUnlock != nil else { return nil }
        let now = Clock.bootSeconds()
        if now - startedMonotonic >= timeouts.max || Double(Clock.now() - unlockedAt) >= timeouts.max {
            return "open for \(Int(timeouts.max)) s"
        }
        if document != nil, now - lastActivity >= timeouts.idle {
            guard pinUnlock != nil else { return "idle for \(Int(timeouts.idle)) s" }
            log("session idle for \(Int(timeouts.idle)) s: the vault was wiped; the PIN opens it again until the absolute limit")
            wipe(persist: true, keepingPIN: true)
        }
        return nil
    }

    /// Ends the session now (a limit passed while a request waited): the loop then stops.
    private func end(_ reason: String) {
        log(reason)
        wipe(persist: true)
        stopRequested = true
    }

    /// Records last uses in the vault (best effort), then drops every secret: SecretBytes
    /// are wiped by sodium_free as their last reference goes.
    func wipe(persist: Bool, keepingPIN: Bool = false) {
        if persist, document != nil, !uses.isEmpty {
            _ = try? locked({ document in
                document.contents.recordUse(self.uses)
                return nil
            }, backup: .previous)
        }
        document = nil
        uses = [:]
        // Google tokens are the unlocked session's: a PIN that opens it again fetches them anew.
        tokenCache = [:]
        heldHybridIdentity = nil
        watchers.closeAll()
        if !keepingPIN { forgetPIN() }
    }
}

/// The session ended while answering (the file was replaced by another vault).
struct AgentLocked: Error {}
