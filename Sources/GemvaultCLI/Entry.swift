import Glibc
import SystemIO
import TerminalIO
import VaultCore

public let gemvaultVersion = "0.1.0"

/// The entry point: harden the process, parse argv against the table, run, map errors.
public enum GemvaultMain {
    public static func run(arguments: [String], environment: [String: String]) -> Int32 {
        ProcessHardening.disableCoreDumps()
        // libcurl would write TLS session secrets to this file (mode 0644 at that).
        unsetenv("SSLKEYLOGFILE")
        // A closed stdout (| head) must end the process quietly, not kill it mid-save.
        signal(SIGPIPE, SIG_IGN)
        // A file size limit must fail the write (EFBIG), which leaves the vault intact, not kill us.
        signal(SIGXFSZ, SIG_IGN)
        do {
            switch try ArgumentParser.parse(arguments) {
            case .version:
                Console.out("gemvault \(gemvaultVersion)\n")
            case .help(let spec):
                Console.out(spec.map(HelpText.command) ?? HelpText.overview())
            case .groupHelp(let prefix):
                Console.out(HelpText.group(prefix))
            case .reference:
                Console.out(HelpText.reference())
            case .run(let spec, let positionals, let options):
                let context = Context(environment: environment, options: options)
                try spec.run(Invocation(command: spec, positionals: positionals, options: options, context: context))
            }
            return ExitCode.success.rawValue
        } catch {
            return ErrorReport.report(error).rawValue
        }
    }

    /// The process environment as a dictionary.
    public static var processEnvironment: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}
