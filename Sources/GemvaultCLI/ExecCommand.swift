import CSystemShims
import KeyResolution
import Settings
import SystemIO
import TerminalIO
import ToolSecrets
import VaultCore

let execCommands: [CommandSpec] = [
    CommandSpec(path: ["exec"], arguments: "-- COMMAND [ARGS...]", argumentRange: 1...Int.max,
                summary: "run a command with the API key, or named secrets, in its environment",
                options: [.env, .forceNested, .execSecret, .execSecretFile] + keySourceOptions,
                details: """
                Without --secret, the API key goes in GEMINI_API_KEY (or --env VAR). With --secret VAR=NAME (repeatable), each named secret of the vault goes in its own variable and nothing else from the vault: the API key only when --key asks for it.
                --secret-file VAR=NAME writes the secret to a new file in a private folder of $XDG_RUNTIME_DIR and puts its path in VAR; gemvault waits for the command and removes the file when it ends, also when the command is killed (a gemvault killed with SIGKILL leaves it to the next --secret-file run, which removes it).
                With --secret, a locked vault asks for the passphrase on the controlling terminal; without one it fails at once ('the vault is locked'), as an MCP server started by an editor must.
                GOOGLE_API_KEY is removed when the key is passed, unless --env names it, so it cannot shadow the key. --env and --secret refuse the variables the
                dynamic loader and the C library read (every LD_ name, GCONV_PATH, TMPDIR and the rest of glibc's list). The command gets only
                descriptors 0, 1 and 2; SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGWINCH sent to gemvault are passed on.
                The exit code is the command's, or 128 plus the signal that ended it.
                Examples: gemvault exec -- gemini;  gemvault exec --secret GITHUB_TOKEN=github -- github-mcp-server stdio;  gemvault exec --env GOOGLE_API_KEY -- node app.js
                """,
                run: ExecCommand.run),
]

enum ExecCommand {
    static func run(_ call: Invocation) throws {
        let context = call.context
        let plan = try ExecPlan(secrets: call.values(.execSecret).map { ($0, false, OptionSpec.execSecret.name) }
                                    + call.values(.execSecretFile).map { ($0, true, OptionSpec.execSecretFile.name) },
                                env: call.value(.env), keyNamed: call.value(.key) != nil || call.value(.keyFile) != nil,
                                environment: context.environment, forceNested: call.flag(.forceNested))
        // Changes the spawner makes to the environment, not a changed copy of it: a copy's first
        // use is a runtime type lookup (Docs/performance.md).
        var changes = plan.environmentChanges
        var values: [(variable: String, value: SecretBytes)] = []
        if plan.passesKey {
            let resolver = try context.keyResolver(call)
            let (key, settings): (ResolvedKey, Settings)
            do { (key, settings) = try resolver.resolve() } catch is GoogleIdentityWanted { throw KeylessCommand.execRefusal(plan.keyVariable) }
            context.rotationReminder.remind(key: key, settings: settings, warn: { Console.warning($0) })
            values.append((plan.keyVariable, key.secret))
        }
        let handOut = SecretHandOut()
        defer { handOut.removeFiles() }
        try fetchSecrets(plan.bindings, into: handOut, call)
        values += handOut.values
        for (name, path) in handOut.paths { changes.append((name, path)) }
        throw ExitStatus(code: try spawnAndWait(call.positionals, environment: context.environment, changes: changes, values: values))
    }

    /// Each secret from the session (one request each), or from the vault opened once with the
    /// passphrase on the terminal; with neither, the command fails at once.
    static func fetchSecrets(_ bindings: [SecretBinding], into handOut: SecretHandOut, _ call: Invocation) throws {
        guard !bindings.isEmpty else { return }
        let context = call.context
        try handOut.fetch(bindings, from: context.vault, runtimeFolder: {
            do { return try SecretHandOut.runtimeFolder(environment: context.environment) } catch {
                throw CommandFailure(.failure, "--secret-file needs a private runtime folder, and XDG_RUNTIME_DIR is not set (nor is /run/user/\(CurrentUser.id) there, private to you)",
                                     hint: "set XDG_RUNTIME_DIR to a private tmpfs folder, or use --secret")
            }
        }, beforePrompt: {
            guard context.canOpenVault else {
                throw CommandFailure(.failure, "the vault is locked: run 'gemvault unlock'",
                                     hint: "the secrets come from the unlocked session, or from the passphrase typed on a terminal")
            }
        }, current: SecretCommand.linked(context, call).current)
    }

    /// Starts the command with `values` built into its environment from secret memory, passes
    /// signals on, and returns its shell status.
    static func spawnAndWait(_ arguments: [String], environment: [String: String], changes: [(name: String, value: String?)],
                             values: [(variable: String, value: SecretBytes)]) throws -> Int32 {
        let child: ChildProcess
        // Signals are held back until the forwarding knows the child, so none is lost between.
        gv_forward_signals_block()
        do {
            child = try SecretBytes.withAllBytes(values.map(\.value)) { buffers throws(SystemError) in
                try ProcessSpawner.spawn(arguments, environment: environment, changes: changes,
                                         secretVariables: zip(values, buffers).map { (name: $0.0.variable, value: $0.1) })
            }
        } catch {
            gv_forward_signals_unblock()
            // As env(1) and shells do: 127 when the command is not found, 126 when it cannot run.
            Console.error("cannot run '\(arguments[0])': \(error.reason)")
            return error.code == 2 ? 127 : 126
        }
        gv_forward_signals_to(child.pid)
        gv_forward_signals_unblock()
        return child.wait().shellStatus
    }
}

/// Ends the process with a given code and no message (exec passes its child's code on).
struct ExitStatus: Error {
    let code: Int32
}
