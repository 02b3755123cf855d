import Agent
import Foundation
import Glibc
import VaultCore

/// A real session agent for a vault, serving on a socket in a private runtime folder from a
/// thread of the test process. Counts of what it answered are read between requests (the
/// agent waits in poll then) or after it stopped.
public final class InProcessAgent: @unchecked Sendable {
    public let server: AgentServer
    public let paths: AgentPaths
    public let client: AgentClient
    /// The environment that names the runtime folder, for code that finds the agent itself.
    public let environment: [String: String]
    private let stopped = DispatchSemaphore(value: 0)
    private var isStopped = false

    /// Starts the agent of `store` and waits until it answers. `runtimeFolder` must be private
    /// (a `TemporaryFolder` is).
    public init(store: VaultStore, generations: GenerationRecord, runtimeFolder: String,
                log: @escaping @Sendable (String) -> Void = { _ in }) throws {
        environment = ["XDG_RUNTIME_DIR": runtimeFolder]
        paths = AgentPaths(environment: environment, vaultPath: store.path)
        server = AgentServer(paths: paths, store: store, generations: generations, log: log)
        client = AgentClient(paths: paths)
        let running = Running(server: server, stopped: stopped)
        Thread.detachNewThread {
            _ = try? running.server.run()
            running.stopped.signal()
        }
        for _ in 0..<1000 {
            if (try? client.status()) != nil { return }
            usleep(5_000)
        }
        throw AgentError.notRunning
    }

    /// Requests answered so far.
    public var requestsAnswered: Int { server.requestsAnswered }

    /// How many requests `work` cost the agent.
    public func requests<T>(of work: () throws -> T) rethrows -> (T, Int) {
        let before = server.requestsAnswered
        let value = try work()
        return (value, server.requestsAnswered - before)
    }

    /// Hands the agent `document`'s key-encryption key (what `gemvault unlock` does).
    @discardableResult
    public func unlock(_ document: VaultDocument, idle: Double = 600, max: Double = 600) throws -> AgentStatus {
        guard let kek = document.keyEncryptionKey else { throw VaultError.wrongPassphrase }
        return try client.unlock(kek: kek, idle: idle, max: max)
    }

    /// Waits until the agent's loop ended (it locked, or expired); true when it did within `seconds`.
    public func waitUntilStopped(seconds: Double = 30) -> Bool {
        if isStopped { return true }
        isStopped = stopped.wait(timeout: .now() + seconds) == .success
        return isStopped
    }

    /// Locks the agent (ending it) and waits for its thread.
    public func stop() {
        guard !isStopped else { return }
        try? client.lock()
        _ = waitUntilStopped()
    }

    deinit { stop() }

    /// What the agent's thread holds: the server is touched there only, the counts read between requests.
    private struct Running: @unchecked Sendable {
        let server: AgentServer
        let stopped: DispatchSemaphore
    }
}
