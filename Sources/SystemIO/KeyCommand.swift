import Glibc

/// The environment of a program gemvault starts for itself (the agent, the pager,
/// `key_command`, `token_command`): no API key, which is none of its business, and no
/// SSLKEYLOGFILE, which `main` keeps only so that doctor can report it.
public enum HelperEnvironment {
    public static func of(_ environment: [String: String]) -> [String: String] {
        environment.filter { !["GEMINI_API_KEY", "GOOGLE_API_KEY", "SSLKEYLOGFILE"].contains($0.key) }
    }
}

/// Runs `key_command` (or `token_command`) without a shell and captures its stdout, which
/// holds a secret: it goes straight into the caller's memory (VaultCore's `KeyCommand.secret`
/// gives it in secret memory).
public enum KeyCommand {
    public static let outputLimit = 8192

    /// Why the command gave no key. Messages name only the program, never the whole command
    /// line, which may carry a token.
    public struct Failure: Error, Sendable, Equatable {
        /// The program, or the setting when the line cannot be parsed.
        public let program: String
        /// What happened, ready to follow the program's name ("exited with status 4").
        public let detail: String
        /// What the command wrote to stderr, trimmed (at most 4 KiB).
        public let stderr: String

        public init(program: String, detail: String, stderr: String) {
            self.program = program
            self.detail = detail
            self.stderr = stderr
        }
    }

    /// Splits a command line into arguments: white space separates, single and double quotes
    /// group, backslash escapes. No expansion of any kind happens.
    public static func split(_ line: String) -> [String]? {
        var arguments: [String] = []
        var current = ""
        var inArgument = false
        var quote: Character?
        var escaped = false
        for character in line {
            if escaped { current.append(character); escaped = false; continue }
            if character == "\\" && quote != "'" { escaped = true; inArgument = true; continue }
            if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
                continue
            }
            if character == "'" || character == "\"" { quote = character; inArgument = true; continue }
            if character == " " || character == "\t" || character == "\n" {
                if inArgument { arguments.append(current); current = ""; inArgument = false }
                continue
            }
            current.append(character)
            inArgument = true
        }
        guard quote == nil, !escaped else { return nil }
        if inArgument { arguments.append(current) }
        return arguments.isEmpty ? nil : arguments
    }

    /// Runs the command and puts its stdout into `output` (at most `outputLimit` bytes);
    /// returns how many bytes came, and the stderr text for the checks that follow.
    /// `setting` names the setting the command came from in messages.
    public static func run(_ line: String, timeout: Double, environment: [String: String], setting: String,
                           into output: UnsafeMutableRawBufferPointer) throws(Failure) -> (count: Int, stderr: String) {
        guard let arguments = split(line) else {
            throw Failure(program: setting, detail: "cannot be parsed (unbalanced quote?)", stderr: "")
        }
        let program = arguments[0]
        let run: ProcessRunner.Outcome
        // The command fetches the key: TLS secrets it logged would let anyone decrypt it, and
        // an API key in the environment is not its to see.
        do {
            run = try ProcessRunner.run(arguments, environment: HelperEnvironment.of(environment),
                                        output: UnsafeMutableRawBufferPointer(rebasing: output[0..<min(output.count, outputLimit)]),
                                        deadline: Deadline(after: timeout))
        } catch {
            throw Failure(program: program, detail: "could not be started: \(error.system.reason)", stderr: "")
        }
        let stderrText = String(decoding: run.errors, as: UTF8.self).trimmedWhitespace
        switch run.ending {
        case .timedOut: throw Failure(program: program, detail: "timed out after \(Int(timeout)) s (key_command_timeout)", stderr: stderrText)
        case .outputTooLarge: throw Failure(program: program, detail: "printed more than \(outputLimit) bytes", stderr: stderrText)
        case .finished(.exited(0)): return (run.outputCount, stderrText)
        case .finished(.exited(let code)): throw Failure(program: program, detail: "exited with status \(code)", stderr: stderrText)
        case .finished(.signaled(let signal)): throw Failure(program: program, detail: "was killed by signal \(signal)", stderr: stderrText)
        }
    }
}
