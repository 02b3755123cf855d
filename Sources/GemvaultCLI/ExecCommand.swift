import CSystemShims
import KeyResolution
import Settings
import SystemIO
import TerminalIO
import VaultCore

let execCommands: [CommandSpec] = [
    CommandSpec(path: ["exec"], arguments: "-- COMMAND [ARGS...]", argumentRange: 1...Int.max,
                summary: "run a command with the API key in its environment (GEMINI_API_KEY)",
                options: [.env, .forceNested] + keySourceOptions,
                details: """
                GOOGLE_API_KEY is removed unless --env names it, so it cannot shadow the key. --env refuses the variables the
                dynamic loader and the C library read (every LD_ name, GCONV_PATH, TMPDIR and the rest of glibc's list). The command gets only
                descriptors 0, 1 and 2; SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGWINCH sent to gemvault are passed on.
                The exit code is the command's, or 128 plus the signal that ended it.
                Examples: gemvault exec -- gemini;  gemvault exec -- python3 app.py;  gemvault exec --env GOOGLE_API_KEY -- node app.js
                """,
                run: ExecCommand.run),
]

enum ExecCommand {
    static let nestingVariable = "GEMVAULT_EXEC"
    /// The variable the key is put in unless --env names another.
    static let defaultVariable = "GEMINI_API_KEY"

    /// Besides every LD_ name: what glibc removes from the environment of setuid programs
    /// (its "unsecure" list), since the loader or libc reads each as a path or an option.
    /// `LD_PRELOAD=KEY`, for one, makes ld.so print the key in an error on every start.
    static let loaderVariables: Set<String> = [
        "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE",
        "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR", "TZDIR",
    ]

    static func isReadByTheLoader(_ variable: String) -> Bool {
        variable.hasPrefix("LD_") || loaderVariables.contains(variable)
    }

    static func run(_ call: Invocation) throws {
        let context = call.context
        if context.environment[nestingVariable] != nil && !call.flag(.forceNested) {
            throw CommandFailure(.failure, "already inside 'gemvault exec' (\(nestingVariable) is set)",
                                 hint: "run the command directly, or pass --force to nest on purpose")
        }
        let variable = call.value(.env) ?? defaultVariable
        guard !variable.isEmpty, variable.utf8.allSatisfy({ $0 == 0x5f || ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7a) }),
              variable.first.map({ !$0.isNumber }) == true else {
            throw UsageError("--env takes a variable name, not '\(variable)'", command: call.command)
        }
        if isReadByTheLoader(variable) {
            throw UsageError("--env \(variable): the dynamic loader or the C library reads \(variable), and would take the key for a file name or a setting (and may print it)",
                             command: call.command)
        }
        let resolver = try context.keyResolver(call)
        let (key, settings): (ResolvedKey, Settings)
        do { (key, settings) = try resolver.resolve() } catch is GoogleIdentityWanted { throw KeylessCommand.execRefusal(variable) }
        RotationReminder(context: context).remind(key: key, settings: settings)
        var environment = context.environment
        // Nothing may shadow the key, and its TLS sessions must not be logged.
        environment["GOOGLE_API_KEY"] = nil
        environment["SSLKEYLOGFILE"] = nil
        environment[nestingVariable] = "1"
        let child: ChildProcess
        // Signals are held back until the forwarding knows the child, so none is lost between.
        gv_forward_signals_block()
        do {
            child = try key.secret.withUnsafeBytes { value throws(SystemError) in
                try ProcessSpawner.spawn(call.positionals, environment: environment, secretVariable: (variable, value))
            }
        } catch {
            gv_forward_signals_unblock()
            // As env(1) and shells do: 127 when the command is not found, 126 when it cannot run.
            Console.error("cannot run '\(EscapeNeutralizer.neutralize(call.positionals[0]))': \(error.reason)")
            throw ExitStatus(code: error.code == 2 ? 127 : 126)
        }
        gv_forward_signals_to(child.pid)
        gv_forward_signals_unblock()
        let status = child.wait().shellStatus
        throw ExitStatus(code: status)
    }
}

/// Ends the process with a given code and no message (exec passes its child's code on).
struct ExitStatus: Error {
    let code: Int32
}
