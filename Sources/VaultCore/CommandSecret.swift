import SystemIO

extension KeyCommand {
    /// Runs the command and returns its trimmed stdout in secret memory: one header-safe
    /// line, or a failure (a second line would go out as extra HTTP headers).
    public static func secret(_ line: String, timeout: Double, environment: [String: String], setting: String = "key_command") throws(Failure) -> SecretBytes {
        let output = SecretBytes(count: outputLimit)
        let (count, stderr) = try output.withUnsafeMutableBytes { raw throws(Failure) in
            try run(line, timeout: timeout, environment: environment, setting: setting, into: raw)
        }
        output.truncate(to: count)
        let key = output.trimmingWhitespace()
        let program = split(line)?.first ?? setting
        guard key.count > 0 else {
            throw Failure(program: program, detail: "printed nothing on stdout", stderr: stderr)
        }
        guard key.isHeaderSafe else {
            throw Failure(program: program, detail: "printed more than one line, or a space or a control character (only one line, followed by nothing but a line break, is taken)",
                          stderr: stderr)
        }
        return key
    }
}
