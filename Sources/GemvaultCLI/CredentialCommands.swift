import Glibc
import KeyResolution
import Settings
import SystemIO
import TerminalIO
import VaultCore

let credentialCommands: [CommandSpec] = [
    CommandSpec(path: ["key", "export"], arguments: "[NAME]", argumentRange: 0...1,
                summary: "encrypt a key as a systemd credential for a service, and print the unit lines that load it",
                options: [.systemdCreds, .credentialOutput, .overwrite, .tpm2],
                details: """
                --systemd-creds pipes the key (never in argv) into 'systemd-creds encrypt --name=CREDENTIAL', CREDENTIAL being the credential_name setting (default gemini-api-key), with the host's key (/var/lib/systemd/credential.secret), or the host's key and the TPM with --tpm2; systemd-creds needs root to read the host key: run as a user, gemvault opens the user's vault and runs only systemd-creds as root, through sudo (its password prompt on the terminal); under sudo, gemvault is root and uses root's vault. -o FILE writes the encrypted credential atomically with mode 0600 (through sudo, systemd-creds writes it as root, under umask 077) and prints LoadCredentialEncrypted= for the unit; without -o the credential is printed inline as SetCredentialEncrypted=. Either way the ExecStart= lines follow: the service's gemvault then takes the key from $CREDENTIALS_DIRECTORY (Docs/configuration.md). A systemd-creds that has not finished after 60 s (through sudo, 6 minutes, its password prompt included) is stopped, and nothing is written.
                """,
                run: CredentialCommand.export),
]

enum CredentialCommand {
    static func export(_ call: Invocation) throws {
        guard call.flag(.systemdCreds) else {
            throw UsageError("key export writes a systemd credential: give --systemd-creds ('gemvault key get' prints the key itself)", command: call.command)
        }
        let name = call.positionals.first ?? Setting.key.defaultValue
        try VaultContents.validateName(name)
        let output = call.value(.credentialOutput).map { ProcessIdentity.absolutePath(ProcessIdentity.expandingTilde($0)) }
        let throughSudo = SystemdCredentialEncryption.needsRoot(environment: call.context.environment)
        if let output { try SystemdCredentialEncryption.checkTarget(output, replacing: call.flag(.overwrite)) }
        let vault = call.context.vault
        do { try vault.checkBeforePrompt() } catch let error as VaultError { throw explainingSudo(error, environment: call.context.environment) }
        let settings = try call.settings(vault: try vault.settings())
        let credential = settings[.credentialName]
        guard let stored = try vault.key(name, markUsed: false) else { throw VaultError.keyNotFound(name: name) }
        let value = try VaultCommand.currentValue(of: stored, call)
        let program = ProcessIdentity.executablePath
        // Through sudo the file is written by root's systemd-creds: the folder (/etc/gemvault) is root's.
        let direct = SystemdCredentialEncryption.arguments(credential: credential, tpm2: call.flag(.tpm2),
                                                           output: throughSudo ? output : nil, pretty: output == nil)
        let encryption = SystemdCredentialEncryption.Run(arguments: throughSudo ? SystemdCredentialEncryption.throughSudo(direct) : direct, throughSudo: throughSudo,
                                    manualPipe: SystemdCredentialEncryption.manualPipe(program: program, name: name, credential: credential,
                                                                                       tpm2: call.flag(.tpm2), output: output))
        let encrypted = try SystemdCredentialEncryption.encrypt(value, with: encryption, environment: call.context.helperEnvironment)
        var lines = "# For the [Service] section of the unit that runs gemvault:\n"
        if let output {
            if throughSudo { checkWritten(output) } else { try Output.save(encrypted, to: output, mode: 0o600, replacing: call.flag(.overwrite)) }
            lines += "LoadCredentialEncrypted=\(credential):\(output)\n"
        } else {
            lines += String(decoding: encrypted, as: UTF8.self)
            if !lines.hasSuffix("\n") { lines += "\n" }
        }
        lines += "ExecStart=\(program) ask \"…\"\n# or, for a program that reads GEMINI_API_KEY:\n# ExecStart=\(program) exec -- /path/to/program\n"
        try Console.out(lines)
        Console.note("encrypted '\(name)' as the systemd credential '\(credential)'" + (output.map { " in \($0)" } ?? "")
                     + (throughSudo ? " (systemd-creds ran as root, through sudo)" : ""))
    }

    /// Root's systemd-creds wrote the file under umask 077; a sudoers umask_override could loosen it.
    private static func checkWritten(_ output: String) {
        guard let written = FileStatus.of(link: output), written.permissions & 0o077 != 0 else { return }
        Console.warning("\(output) has mode \(written.octalMode), not 0600 (sudo's umask setting): run 'sudo chmod 600 \(output)'")
    }

    /// Under sudo, HOME is root's: say whose vault that is, and how to use one's own.
    private static func explainingSudo(_ error: VaultError, environment: [String: String]) -> Error {
        guard geteuid() == 0, let user = environment["SUDO_USER"], !user.isEmpty, user != "root" else { return error }
        switch error {
        case .notFound, .refused: break
        default: return error
        }
        let (_, message, _) = ErrorReport.describe(error)
        let why: String
        if case .notFound = error { why = "under sudo, gemvault is root and opens root's vault, not \(user)'s" } else {
            why = "under sudo, gemvault is root, and root does not open a vault in a folder of \(user)'s"
        }
        return CommandFailure(.failure, message + " (\(why))",
                              hint: "run 'gemvault key export' as \(user), without sudo: gemvault then runs only systemd-creds as root, through sudo")
    }
}
