import Agent
import GoogleKeys
import Settings
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

let sessionCommands: [CommandSpec] = [
    CommandSpec(path: ["unlock"], arguments: "", argumentRange: 0...0,
                summary: "unlock the vault once for a session: later commands need no passphrase",
                options: [.idle, .max, .pin, .ageIdentity],
                details: "Starts a background agent holding the vault in locked memory, or hands the key to one already running (agent --foreground).\nA second unlock leaves a running session alone; one locked while idle with a PIN asks for the PIN. A vault with an age slot opens without a prompt for the identity -i FILE or the age_identity setting names, or, for a slot sealed to an age plugin's recipient (a YubiKey's), with no identity file, through the plugin's default identity when its hardware is present; one with an ssh-agent slot whose key SSH_AUTH_SOCK holds, likewise.\nWith --pin, a PIN is asked twice afterwards (Docs/quick-unlock.md). Docs/session.md explains the session.",
                run: SessionCommand.unlock),
    CommandSpec(path: ["lock"], arguments: "", argumentRange: 0...0,
                summary: "make the agent wipe the vault from memory and exit",
                options: [], details: "", run: SessionCommand.lock),
    CommandSpec(path: ["status"], arguments: "", argumentRange: 0...0,
                summary: "whether a session is unlocked, for which vault, since when, and when it locks",
                options: [.json], details: "Never extends the session.", run: SessionCommand.status),
    CommandSpec(path: ["agent"], arguments: "", argumentRange: 0...0,
                summary: "run the session agent (for a systemd user service)",
                options: [.foreground],
                details: "It starts locked; 'gemvault unlock' hands it the vault. Docs/session.md has a unit file.",
                run: SessionCommand.agent),
]

enum SessionCommand {
    static func unlock(_ call: Invocation) throws {
        let context = call.context
        // The flags are checked first: a bad value is refused before a passphrase is typed or an
        // agent started, and also while a session runs.
        _ = try duration(call, .idle)
        _ = try duration(call, .max)
        let paths = AgentPaths(environment: context.environment, vaultPath: context.vaultPath)
        switch try context.vault.unlockForNewSession(paths: paths, agentCommand: agentCommand(paths), environment: context.helperEnvironment) {
        case .running(let current, let reopened):
            Console.note("\(current.vaultPath) is \(reopened ? "unlocked again with its PIN" : "already unlocked") (agent pid \(current.pid)); the running session was left alone\(current.locksAt.map { ", it locks at \(Output.localDate($0))" } ?? "")")
            if call.flag(.pin) { try PinCommand.setPIN(call) }
        case .opened(let unlocked, let spawned):
            try startSession(call, vault: unlocked, agentSpawned: spawned)
        }
    }

    /// Hands an open vault's key-encryption key to the agent, starting one when none runs
    /// (or waiting for the one `unlock` started while Argon2 ran).
    static func startSession(_ call: Invocation, vault: UnlockedVault, agentSpawned spawned: ChildProcess? = nil) throws {
        let context = call.context
        let agent = context.vault.session
        let layers = try context.settingLayers(call)
        var withVault = layers
        withVault.vaultSettings = vault.document.contents.settings
        withVault.vaultPath = context.vaultPath
        let settings = try Settings.resolve(withVault)
        let idle = try duration(call, .idle) ?? settings[.sessionIdle]
        let max = try duration(call, .max) ?? settings[.sessionMax]
        if let spawned { try waitForAgent(context, spawned) } else if (try? agent.status()) == nil { try startAgent(context) }
        let status = try context.vault.startSession(with: vault.document, idle: idle, max: max)
        Console.note("unlocked \(status.vaultPath); it locks after \(DurationText.text(idle)) unused, and at the latest at \(status.maxDeadline.map(Output.localDate) ?? "?")")
        if call.command.offers(.pin), call.flag(.pin) { try PinCommand.setPIN(call, tries: settings[.pinTries]) }
    }

    static func duration(_ call: Invocation, _ option: OptionSpec) throws -> Double? {
        guard let text = call.value(option) else { return nil }
        guard let seconds = DurationText.seconds(text), seconds >= 1, seconds <= 366 * 86400 else {
            throw UsageError("\(option.name) takes a duration from 1s to 366d, such as 90s, 15m, 8h or 1h30m, not '\(text)'", command: call.command)
        }
        return seconds
    }

    /// Starts `gemvault agent --foreground` in its own session, logging to a private file
    /// beside its socket, and waits until it answers. No secret is in its argv or environment.
    static func startAgent(_ context: Context) throws {
        try waitForAgent(context, try spawnAgent(context))
    }

    /// Starts `gemvault agent` in its own session, once its socket is known to be reachable (VaultAccess).
    static func spawnAgent(_ context: Context) throws -> ChildProcess {
        let paths = AgentPaths(environment: context.environment, vaultPath: context.vaultPath)
        return try context.vault.session.spawnAgent(paths, command: agentCommand(paths), environment: context.helperEnvironment)
    }

    /// The agent for `paths.vaultPath`, in the foreground of the process unlock starts.
    static func agentCommand(_ paths: AgentPaths) -> [String] {
        [ProcessIdentity.executablePath, "agent", OptionSpec.foreground.name, OptionSpec.vault.name, paths.vaultPath]
    }

    static func waitForAgent(_ context: Context, _ agent: ChildProcess) throws {
        try context.vault.session.waitForAgent(agent, paths: AgentPaths(environment: context.environment, vaultPath: context.vaultPath))
    }

    static func lock(_ call: Invocation) throws {
        do throws(AgentError) {
            try call.context.vault.session.lock()
            Console.note("locked; the agent wiped the vault from memory and exited")
        } catch {
            guard error == .notRunning else { throw error }
            Console.note("no session is unlocked for \(call.context.vaultPath)")
        }
    }

    struct StatusReport: Encodable {
        let unlocked: Bool
        let vault: String
        /// The agent's pid when one runs (a locked `agent --foreground` too).
        @Nullable var agentPid: Int32?
        @Nullable var since: String?
        @Nullable var locksAt: String?
        @Nullable var idleLocksAt: String?
        @Nullable var maxLocksAt: String?
        /// The unlocked vault's keys and their kinds; null while locked.
        @Nullable var keys: [KeySummary]?
        /// Whether a PIN can open the session (again, after an idle lock), its tries left and until when.
        let pinAvailable: Bool
        @Nullable var pinTriesLeft: Int?
        @Nullable var pinUntil: String?
    }

    struct KeySummary: Encodable {
        let name: String
        let kind: GoogleKeyKind
    }

    static func status(_ call: Invocation) throws {
        let context = call.context
        var status: AgentStatus?
        do throws(AgentError) { status = try context.vault.session.status() } catch {
            if case .refused(let failure) = error { Console.warning("no session can run: \(failure.message)") }
            else if error != .notRunning { throw error }
        }
        let report = StatusReport(unlocked: status?.unlocked ?? false, vault: ProcessIdentity.absolutePath(context.vaultPath),
                                  agentPid: status?.pid, since: status?.unlockedAt.map(Output.isoDate),
                                  locksAt: status?.locksAt.map(Output.isoDate), idleLocksAt: status?.idleDeadline.map(Output.isoDate),
                                  maxLocksAt: status?.maxDeadline.map(Output.isoDate),
                                  keys: status?.unlocked == true ? (try? context.vault.session.keySummary())?.map { KeySummary(name: $0.name, kind: $0.kind) } : nil,
                                  pinAvailable: status?.pinTriesLeft != nil, pinTriesLeft: status?.pinTriesLeft,
                                  pinUntil: status?.pinTriesLeft != nil ? status?.maxDeadline.map(Output.isoDate) : nil)
        if call.flag(.json) { try Output.json(report, schema: .status); return }
        if report.unlocked {
            let keys = (report.keys ?? []).map { "\($0.name) (\($0.kind.label))" }.joined(separator: ", ")
            try Console.out("unlocked: \(report.vault)\nsince:    \(report.since ?? "?")\nlocks at: \(report.locksAt ?? "?") (idle limit \(report.idleLocksAt ?? "?"), at the latest \(report.maxLocksAt ?? "?"))\nagent:    pid \(report.agentPid ?? 0)\nkeys:     \(keys.isEmpty ? "none" : keys)\n"
                + (report.pinTriesLeft.map { "PIN:      set (\(PinCommand.tries($0))); it opens the session again after an idle lock\n" } ?? ""))
            if report.keys?.contains(where: { $0.kind.isRetired }) == true {
                Console.warning("the vault holds standard keys, which Google rejects since September 2026; 'gemvault key list' names them")
            }
        } else if let left = report.pinTriesLeft {
            try Console.out("locked (PIN available, \(PinCommand.tries(left)), until \(status?.maxDeadline.map(Output.localDate) ?? "?")): \(report.vault)\n")
        } else {
            try Console.out("locked: \(report.vault)\n")
        }
    }

    static func agent(_ call: Invocation) throws {
        guard call.flag(.foreground) else {
            throw UsageError("the agent runs only in the foreground (for systemd)", command: call.command,
                             fix: "'gemvault unlock' starts one in the background; a systemd unit runs 'gemvault agent --foreground'")
        }
        let context = call.context
        // The agent leaves its working folder, so every path it keeps is absolute.
        let vault = ProcessIdentity.absolutePath(context.vaultPath)
        let server = context.vault.agentServer(paths: AgentPaths(environment: context.environment, vaultPath: vault),
                                               log: { Console.err("gemvault agent: \(Output.isoDate(Output.now())) \($0)\n") })
        let code: Int32
        do throws(AgentServer.StartFailure) {
            code = try server.run()
        } catch {
            switch error {
            case .alreadyRunning(let socket):
                throw CommandFailure(.failure, "an agent already serves \(context.vaultPath) (\(socket))", hint: "'gemvault status' shows it; 'gemvault lock' stops it")
            case .folder(let failure):
                throw VaultError(failure)
            case .socket(let failure):
                throw CommandFailure(.failure, "cannot listen on \(failure.path): \(failure.reason)")
            }
        }
        if code != 0 { throw CommandFailure(.failure, "") }
    }
}
