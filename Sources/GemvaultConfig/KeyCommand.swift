import SystemIO
import VaultCore

/// The environment of a program gemvault starts for itself (the agent, the pager,
/// `key_command`, `token_command`): no API key, which is none of its business, and no
/// SSLKEYLOGFILE, which `main` keeps only so that doctor can report it.
public enum HelperEnvironment {
    public static func of(_ environment: [String: String]) -> [String: String] {
        environment.filter { !["GEMINI_API_KEY", "GOOGLE_API_KEY", "SSLKEYLOGFILE"].contains($0.key) }
    }
}

/// Runs `key_command` without a shell and captures its stdout as the key.
public enum KeyCommand {
    static let outputLimit = 8192
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

    /// Runs the command and returns its trimmed stdout in secret memory. Messages name only
    /// the program, never the whole command line, which may carry a token.
    /// `setting` names the setting the command came from in messages (`token_command` runs
    /// the same way).
    public static func run(_ line: String, timeout: Double, environment: [String: String], setting: String = "key_command") throws(ConfigError) -> SecretBytes {
        guard let arguments = split(line) else {
            throw .keyCommandFailed(command: setting, detail: "cannot be parsed (unbalanced quote?)", stderr: "", setting: setting)
        }
        let program = arguments[0]
        let child: ChildProcess
        // The command fetches the key: TLS secrets it logged would let anyone decrypt it, and
        // an API key in the environment is not its to see.
        do {
            child = try ProcessSpawner.spawn(arguments, environment: HelperEnvironment.of(environment), input: .null, output: .pipe, errors: .pipe,
                                             ownProcessGroup: true)
        } catch {
            throw .keyCommandFailed(command: program, detail: "could not be started: \(error.reason)", stderr: "", setting: setting)
        }
        let output = SecretBytes(count: outputLimit)
        var outputLength = 0
        var errorText: [UInt8] = []
        var timedOut = false
        var overflow = false
        let deadline = Clock.monotonicSeconds() + timeout
        var streams = [child.standardOutput!, child.standardError!]
        while !streams.isEmpty {
            let remaining = deadline - Clock.monotonicSeconds()
            guard remaining > 0 else { timedOut = true; break }
            for stream in Poller.readable(streams, timeout: min(remaining, 1)) {
                if stream === child.standardOutput {
                    let n = output.withUnsafeMutableBytes { raw in
                        outputLength < raw.count ? (try? stream.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[outputLength...]))) ?? 0 : -1
                    }
                    if n < 0 { overflow = true }
                    if n <= 0 { streams.removeAll { $0 === stream } } else { outputLength += n }
                } else {
                    var chunk = [UInt8](repeating: 0, count: 4096)
                    let n = chunk.withUnsafeMutableBytes { (try? stream.read(into: $0)) ?? 0 }
                    if n <= 0 { streams.removeAll { $0 === stream } } else if errorText.count < 4096 { errorText += chunk[0..<n] }
                }
            }
        }
        if timedOut || overflow { child.signalGroup(9) }
        let termination = child.wait()
        let stderrText = String(decoding: errorText, as: UTF8.self).trimmedWhitespace
        if timedOut {
            throw .keyCommandFailed(command: program, detail: "timed out after \(Int(timeout)) s (key_command_timeout)", stderr: stderrText, setting: setting)
        }
        if overflow {
            throw .keyCommandFailed(command: program, detail: "printed more than \(outputLimit) bytes", stderr: stderrText, setting: setting)
        }
        switch termination {
        case .exited(0): break
        case .exited(let code): throw .keyCommandFailed(command: program, detail: "exited with status \(code)", stderr: stderrText, setting: setting)
        case .signaled(let signal): throw .keyCommandFailed(command: program, detail: "was killed by signal \(signal)", stderr: stderrText, setting: setting)
        }
        output.truncate(to: outputLength)
        let key = output.trimmingWhitespace()
        guard key.count > 0 else {
            throw .keyCommandFailed(command: program, detail: "printed nothing on stdout", stderr: stderrText, setting: setting)
        }
        // A second line would go out as extra HTTP headers: one line, or nothing.
        guard key.isHeaderSafe else {
            throw .keyCommandFailed(command: program, detail: "printed more than one line, or a space or a control character (only one line, followed by nothing but a line break, is taken)",
                                    stderr: stderrText, setting: setting)
        }
        return key
    }
}
