import Agent
import SystemIO
import VaultCore

/// Why `unlock` could not start its agent.
public enum AgentStartFailure: Error, Equatable {
    /// The socket's path is longer than a path may be.
    case socketPathTooLong(path: String, folder: String)
    /// The agent's folder is not one this user may trust; `runtimeFolderSet`: XDG_RUNTIME_DIR names it.
    case folderRefused(message: String, fix: String, runtimeFolderSet: Bool)
    /// The socket's name is longer than a socket address holds, and /proc/self/fd cannot shorten it.
    case socketNameTooLong(path: String)
    /// The agent's program could not be started.
    case notSpawned(reason: String)
    /// The agent exited at once; the last error in its log, if any.
    case stoppedAtOnce(lastError: String?, log: String)
    /// No answer within `AgentLaunch.startLimit` seconds.
    case didNotStart(log: String)
}

/// Starting this vault's agent in the background: its folder and socket checked first, its log a
/// private file beside the socket, no secret in its argv or environment; then waiting until it answers.
extension VaultSession {
    /// Seconds an agent gets to answer after it was started.
    public static let startLimit = 5.0

    /// Starts `command` (the agent for `paths.vaultPath`) in its own session, once its socket is known to be reachable.
    public func spawnAgent(_ paths: AgentPaths, command: [String], environment: [String: String]) throws -> ChildProcess {
        let folder: TrustedFolder
        do {
            guard let opened = try paths.openFolder(create: true) else { throw VaultError.notFound(path: paths.folder) }
            folder = opened
        } catch TrustedOpenError.failed(let failure) where failure.isNameTooLong {
            throw AgentStartFailure.socketPathTooLong(path: paths.socketPath, folder: paths.folder)
        } catch TrustedOpenError.refused(let failure) {
            throw AgentStartFailure.folderRefused(message: failure.message, fix: failure.fix, runtimeFolderSet: environment["XDG_RUNTIME_DIR"] != nil)
        } catch let error as TrustedOpenError {
            throw VaultError(error)
        }
        // Refused now, rather than by an agent that could not listen while unlock waits for it.
        do {
            _ = try UnixSocket.address(of: paths.socketName, in: folder.descriptor, path: paths.socketPath)
        } catch {
            throw AgentStartFailure.socketNameTooLong(path: paths.socketPath)
        }
        let log: FileDescriptor
        do {
            guard let opened = try TrustedFile.open(paths.logName, in: folder, requirement: .secret, flags: OpenFlags.appendCreate) else {
                throw VaultError.notFound(path: paths.logPath)
            }
            log = opened
        } catch let error as TrustedOpenError {
            throw VaultError(error)
        }
        var environment = environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        do {
            return try ProcessSpawner.spawn(command, environment: environment, input: .null, output: .null, errors: .file(log), newSession: true)
        } catch {
            throw AgentStartFailure.notSpawned(reason: error.reason)
        }
    }

    /// Waits until the agent answers, asking often at first: it is usually up within
    /// milliseconds. An agent that exits instead is reported at once, with its reason.
    public func waitForAgent(_ agent: ChildProcess, paths: AgentPaths) throws {
        let deadline = Deadline(after: Self.startLimit)
        var pause = 0.001
        while !deadline.hasPassed {
            if (try? status()) != nil { return }
            if agent.endedYet() != nil {
                // Another unlock's agent may have won the race and be serving.
                if (try? status()) != nil { return }
                throw AgentStartFailure.stoppedAtOnce(lastError: Self.lastError(inLog: paths), log: paths.logPath)
            }
            Clock.sleep(pause)
            pause = min(pause * 2, 0.02)
        }
        throw AgentStartFailure.didNotStart(log: paths.logPath)
    }

    /// The last error the agent wrote to its log, without the `gemvault: error: ` prefix.
    static func lastError(inLog paths: AgentPaths) -> String? {
        guard let folder = try? paths.openFolder(create: false),
              let log = try? TrustedFile.open(paths.logName, in: folder, requirement: .secret, flags: OpenFlags.readOnly),
              let bytes = try? log.readTail(limit: 64 << 10) else { return nil }
        let prefix = "gemvault: error: "
        let line = String(decoding: bytes, as: UTF8.self).split(separator: "\n").last { $0.hasPrefix(prefix) }
        return line.map { String($0.dropFirst(prefix.count)) }
    }
}

/// What `unlock` found, or opened for a new session.
public enum SessionUnlock {
    /// A session already holds the vault (`reopened`: its PIN opened it again after an idle lock).
    case running(AgentStatus, reopened: Bool)
    /// The vault, opened for a new session; the agent started while Argon2 ran, if one was.
    case opened(UnlockedVault, agent: ChildProcess?)
}

extension VaultAccess {
    /// `unlock`'s first half: a running session is left alone (one locked while idle with a PIN
    /// asks for it); otherwise the vault is opened, and once the passphrase is read the agent
    /// (`agentCommand`) starts while Argon2 runs (one core each), so the unlock costs the KDF
    /// alone. A wrong passphrase stops that agent again.
    public func unlockForNewSession(paths: AgentPaths, agentCommand: [String], environment: [String: String]) throws -> SessionUnlock {
        let agent = session
        if let status = try? agent.status(), status.unlocked || (status.pinTriesLeft != nil && (try? sessionIsOpen()) == true),
           let current = status.unlocked ? status : try? agent.status() {
            return .running(current, reopened: !status.unlocked)
        }
        var spawned: ChildProcess?
        do {
            let unlocked = try unlockForSession(whileDeriving: {
                if spawned == nil, (try? agent.status()) == nil { spawned = try agent.spawnAgent(paths, command: agentCommand, environment: environment) }
            })
            return .opened(unlocked, agent: spawned)
        } catch {
            if let spawned, (try? agent.waitForAgent(spawned, paths: paths)) != nil { try? agent.lock() }
            throw error
        }
    }
}
