import Glibc
import Settings
import SystemIO
import TerminalIO
import VaultCore

let credentialCommands: [CommandSpec] = [
    CommandSpec(path: ["key", "export"], arguments: "[NAME]", argumentRange: 0...1,
                summary: "encrypt a key as a systemd credential for a service, and print the unit lines that load it",
                options: [.systemdCreds, .credentialOutput, .overwrite, .tpm2],
                details: """
                --systemd-creds pipes the key (never in argv) into 'systemd-creds encrypt --name=CREDENTIAL', CREDENTIAL being the credential_name setting (default gemini-api-key), with the host's key (/var/lib/systemd/credential.secret), or the host's key and the TPM with --tpm2; systemd-creds needs root to read the host key. -o FILE writes the encrypted credential atomically with mode 0600 and prints LoadCredentialEncrypted= for the unit; without -o the credential is printed inline as SetCredentialEncrypted=. Either way the ExecStart= lines follow: the service's gemvault then takes the key from $CREDENTIALS_DIRECTORY (Docs/configuration.md). A systemd-creds that has not finished after 60 s is stopped, and nothing is written.
                """,
                run: CredentialCommand.export),
]

enum CredentialCommand {
    /// What systemd-creds may print: a credential is the key plus some hundred bytes.
    static let outputLimit = 1 << 20
    /// Seconds systemd-creds gets (a TPM may be slow; a stuck one must not hold the command).
    static let timeout = 60.0

    static func export(_ call: Invocation) throws {
        guard call.flag(.systemdCreds) else {
            throw UsageError("key export writes a systemd credential: give --systemd-creds ('gemvault key get' prints the key itself)", command: call.command)
        }
        let name = call.positionals.first ?? Setting.key.defaultValue
        try VaultContents.validateName(name)
        let output = call.value(.credentialOutput).map { ProcessIdentity.absolutePath(ProcessIdentity.expandingTilde($0)) }
        if let output, !call.flag(.overwrite), FileStatus.of(link: output) != nil {
            throw CommandFailure(.failure, "\(output) exists; nothing was written", hint: "--force replaces it")
        }
        let vault = call.context.vault
        try vault.checkBeforePrompt()
        let settings = try GoogleRotation.settings(call, vault: try vault.settings())
        let credential = settings[.credentialName]
        guard let stored = try vault.key(name, markUsed: false) else { throw VaultError.keyNotFound(name: name) }
        let value = try VaultCommand.currentValue(of: stored, call)
        let arguments = ["systemd-creds", "encrypt", "--name=\(credential)", "--with-key=" + (call.flag(.tpm2) ? "host+tpm2" : "host")]
            + (output == nil ? ["--pretty"] : []) + ["-", "-"]
        let encrypted = try run(arguments, feeding: value, environment: call.context.helperEnvironment)
        let program = ProcessIdentity.executablePath
        var lines = "# For the [Service] section of the unit that runs gemvault:\n"
        if let output {
            try Output.save(encrypted, to: output, mode: 0o600, replacing: call.flag(.overwrite))
            lines += "LoadCredentialEncrypted=\(credential):\(output)\n"
        } else {
            lines += String(decoding: encrypted, as: UTF8.self)
            if !lines.hasSuffix("\n") { lines += "\n" }
        }
        lines += "ExecStart=\(program) ask \"…\"\n# or, for a program that reads GEMINI_API_KEY:\n# ExecStart=\(program) exec -- /path/to/program\n"
        try Console.out(lines)
        Console.note("encrypted '\(name)' as the systemd credential '\(credential)'" + (output.map { " in \($0)" } ?? ""))
    }

    /// Runs systemd-creds with `secret` on its stdin; its stdout, or a failure with its stderr.
    private static func run(_ arguments: [String], feeding secret: SecretBytes, environment: [String: String]) throws -> [UInt8] {
        let child: ChildProcess
        do {
            child = try ProcessSpawner.spawn(arguments, environment: environment, input: .pipe, output: .pipe, errors: .pipe, ownProcessGroup: true)
        } catch where error.code == ENOENT {
            throw CommandFailure(.failure, "systemd-creds is not installed; nothing was written", hint: "it comes with systemd 250 or later: on Debian and Ubuntu, 'apt install systemd'")
        } catch {
            throw CommandFailure(.failure, "systemd-creds could not be started: \(error.reason)")
        }
        // A key is far smaller than a pipe's buffer: written whole before anything is read.
        do throws(SystemError) {
            try secret.withUnsafeBytes { bytes throws(SystemError) in
                try child.standardInput!.writeAll(bytes)
            }
        } catch {
            child.signalGroup(SIGKILL)
            _ = child.wait()
            throw CommandFailure(.failure, "could not hand the key to systemd-creds: \(error.reason)")
        }
        child.closeStandardInput()
        var output: [UInt8] = []
        var errors: [UInt8] = []
        var streams = [child.standardOutput!, child.standardError!]
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        // A systemd-creds that hangs (a TPM that never answers) must not hold the command.
        let clock = WaitClock.standard
        let deadline = clock.now() + timeout
        while !streams.isEmpty {
            let remaining = deadline - clock.now()
            guard remaining > 0 else {
                child.signalGroup(SIGKILL)
                _ = child.wait()
                throw CommandFailure(.failure, "systemd-creds did not finish within \(Int(timeout)) s; nothing was written")
            }
            for stream in Poller.readable(streams, timeout: min(remaining, 1)) {
                let count = buffer.withUnsafeMutableBytes { (try? stream.read(into: $0)) ?? 0 }
                if count <= 0 { streams.removeAll { $0 === stream }; continue }
                if stream === child.standardOutput { output += buffer[0..<count] } else if errors.count < 8192 { errors += buffer[0..<count] }
                if output.count > outputLimit { child.signalGroup(SIGKILL); streams = [] }
            }
        }
        let said = String(decoding: errors, as: UTF8.self).trimmedWhitespace
        switch child.wait() {
        case .exited(0) where output.count <= outputLimit:
            return output
        case .exited(let code):
            throw CommandFailure(.failure, "systemd-creds failed (status \(code))" + (said.isEmpty ? "" : ": \(EscapeNeutralizer.neutralize(said))") + "; nothing was written",
                                 hint: getuid() == 0 ? nil : "systemd-creds reads the host's key, which only root may: run it with sudo")
        case .signaled(let signal):
            throw CommandFailure(.failure, "systemd-creds was stopped by signal \(signal); nothing was written")
        }
    }
}
