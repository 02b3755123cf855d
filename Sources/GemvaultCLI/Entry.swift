import CommandLineKit
import Glibc
import Sharing
import SystemIO
import TerminalIO
import VaultCore

public let gemvaultVersion = "0.1.0"

/// The entry point: harden the process, parse argv against the table, run, map errors.
public enum GemvaultMain {
    /// `environment` is read only by the commands that use it: `--version` and help answer without it.
    public static func run(arguments: [String], environment readEnvironment: @autoclosure () -> [String: String]) -> Int32 {
        ProcessHardening.prepareProcess()
        AgeSlot.register()
        KeyDerivationProgress.install { purpose in
            let line = ProgressLine.start(purpose == .unlocking ? "unlocking…" : "protecting the vault…")
            return { line?.stop() }
        }
        do {
            let parsed = try commandLine.parse(arguments)
            var environment: [String: String] { readEnvironment() }
            switch parsed {
            case .version:
                try Console.out("gemvault \(gemvaultVersion)\n")
            case .help(let spec):
                let width = Terminal.columns
                try Console.out(spec.map { helpText.command($0, width: width) } ?? helpText.overview(width: width))
            case .groupHelp(let prefix):
                try Console.out(helpText.group(prefix, width: Terminal.columns))
            case .reference:
                try Console.out(helpText.reference())
            case .manual:
                try Console.out(ManualPage.render())
            case .complete(let words):
                try CompletionCommand.complete(words, environment: environment)
            case .start:
                try FirstRun.start(Context(environment: environment, options: .none))
            case .run(let spec, let positionals, let options):
                if let color = options.value(.color), ColorMode(rawValue: color) == nil {
                    throw UsageError("--color takes auto, always or never, not '\(color)'", command: spec)
                }
                let context = Context(environment: environment, options: options)
                let call = Invocation(command: spec, positionals: positionals, options: options, context: context)
                // Every value a flag gives is checked before a command asks for anything.
                try call.checkFlagValues()
                if spec.usesNetwork { ProviderChoice.current.prepare() }
                try spec.run(call)
            }
            return ExitCode.success.rawValue
        } catch let exit as ExitStatus {
            return exit.code
        } catch {
            if let usage = error as? UsageError {
                do { try ChatCommand.reportUsageError(usage, arguments: arguments) } catch { return ErrorReport.report(error).rawValue }
            }
            return ErrorReport.report(error).rawValue
        }
    }

    /// `run` with another chat provider than Gemini, for tests (GemvaultTesting's scripted one):
    /// the binary calls only `main`, so nothing a user types reaches it.
    public static func run(arguments: [String], environment: [String: String], provider: ProviderChoice) -> Int32 {
        ProviderChoice.$current.withValue(provider) { run(arguments: arguments, environment: environment) }
    }

    /// The whole program: the command, then exit with its code. The environment is read when
    /// a command first needs it, after `run` has removed SSLKEYLOGFILE; its value is kept
    /// here so that doctor can still report it.
    public static func main() -> Never {
        let arguments = Array(CommandLine.arguments.dropFirst())
        // ask's prompt and --system's text are readable by every user in /proc/PID/cmdline: now
        // that they are copied, they are wiped there, rather than shown for the whole request.
        var privateArguments: [PrivateArgument] = []
        _ = try? commandLine.parse(arguments, privateArguments: &privateArguments)
        for argument in privateArguments { ProcessHardening.wipeArgument(argument.index + 1, from: argument.offset) }
        let keyLogFile = getenv("SSLKEYLOGFILE").map { String(cString: $0) }
        let code = run(arguments: arguments, environment: {
            var environment = ProcessHardening.environment
            environment["SSLKEYLOGFILE"] = keyLogFile
            return environment
        }())
        ProviderChoice.settle()
        ProcessHardening.exit(code)
    }
}
