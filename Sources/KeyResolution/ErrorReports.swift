import SystemIO
import VaultCore

extension KeySourceError: ReportableError {
    public var report: FailureReport {
        switch self {
        case .noKey(let reasons, let vaultKeys):
            FailureReport(.noKey, "no API key available (" + reasons.joined(separator: "; ") + ")",
                          hint: vaultKeys.first.map { "choose one of the vault's keys: '--key \($0)' for one command, or 'gemvault config set key \($0)' for every command" }
                              ?? "store one with 'gemvault key set', or export GEMINI_API_KEY, or write it to the key file, or set key_command")
        case .vaultNeedsPassphrase(let path):
            FailureReport(.noKey, "the API key is in the vault \(path), but there is no terminal to ask for its passphrase and no unlocked session",
                          hint: "run 'gemvault unlock' first, or pass --passphrase-fd N or --passphrase-file PATH")
        case .keyCommandFailed(let command, let detail, let stderr):
            FailureReport(.noKey, "key_command '\(command)' \(detail)" + (stderr.isEmpty ? "" : "; its stderr: " + stderr),
                          hint: "check the command with: gemvault config get key_command")
        case .secretUnreachable(let name, let secret, let since, let detail):
            FailureReport(.network, "'\(name)' could not be refreshed from Secret Manager \(secret) since \(Clock.localDate(since)) (\(detail)), longer than secret_max_stale allows; its copy was not used",
                          hint: "check the network and the Google credentials, or raise secret_max_stale")
        case .keyFile(let vault):
            // A refused file (someone else's, open to others, a link) exits 1 as every refused file does.
            if case .refused = vault { vault.report } else {
                FailureReport(vault.report.outcome == .failure ? .noKey : vault.report.outcome, vault.report.message, hint: vault.report.hint)
            }
        }
    }
}

extension MalformedKeyError: ReportableError {
    public var report: FailureReport {
        FailureReport(.noKey, "the key from \(source) is more than one line, or holds a space or a control character; it was not used (a key is one line, and only a line break may follow it)",
                      hint: hint)
    }
}

extension GoogleIdentityWanted: ReportableError {
    public var report: FailureReport {
        FailureReport(.usage, "this command needs an API key, and auth is 'google' (Docs/keyless.md)", hint: "pass --auth key, or unset the auth setting")
    }
}

/// `key export --systemd-creds`: systemd-creds (or sudo) gave no credential (exit 1).
extension SystemdCredentialFailure: ReportableError {
    public var report: FailureReport {
        func sudoHint(_ throughSudo: Bool, _ pipe: String) -> String? {
            throughSudo ? "if sudo could not run it (no terminal for its password, no rule for you), run: \(pipe)" : nil
        }
        return switch self {
        case .timedOut(let seconds): FailureReport(.failure, "systemd-creds did not finish within \(seconds) s; nothing was written")
        case .notInstalled:
            FailureReport(.failure, "systemd-creds is not installed; nothing was written", hint: "it comes with systemd 250 or later: on Debian and Ubuntu, 'apt install systemd'")
        case .noSudo(let hostKey, let pipe):
            FailureReport(.failure, "systemd-creds needs root to read the host's key (\(hostKey)), and sudo is not installed; nothing was written",
                          hint: "install sudo, or run as root the equivalent of: \(pipe)")
        case .notStarted(let program, let reason): FailureReport(.failure, "\(program) could not be started: \(reason)")
        case .keyNotTaken(let reason): FailureReport(.failure, "could not hand the key to systemd-creds: \(reason)")
        case .exited(let sudo, let status, let said, let pipe):
            FailureReport(.failure, "\(sudo ? "sudo systemd-creds" : "systemd-creds") failed (status \(status))" + (said.isEmpty ? "" : ": \(said)") + "; nothing was written",
                          hint: sudoHint(sudo, pipe))
        case .signaled(let sudo, let signal, let pipe):
            FailureReport(.failure, "\(sudo ? "sudo systemd-creds" : "systemd-creds") was stopped by signal \(signal); nothing was written", hint: sudoHint(sudo, pipe))
        case .targetUnknown(let path, let reason): FailureReport(.failure, "cannot tell whether \(path) exists: \(reason); nothing was written", hint: "--force writes it anyway")
        case .targetIsLink(let path): FailureReport(.failure, "\(path) is a symbolic link; nothing was written")
        case .targetExists(let path): FailureReport(.failure, "\(path) exists; nothing was written", hint: "--force replaces it")
        }
    }
}

/// `--from` that is not a reference is `key set`'s usage mistake: the CLI adds its usage line
/// (also when `secret set --from` made it).
extension SecretLinking.Refusal: ReportableError {
    public var report: FailureReport {
        switch self {
        case .notAReference(let text):
            FailureReport(.usage, "--from takes gsm://projects/PROJECT/secrets/SECRET or …/versions/N, not '\(text)'", commandPath: ["key", "set"])
        case .olderVersion(let name, let taken, let answered, let resource, let reference):
            FailureReport(.failure, "'\(name)' took version \(taken) of \(resource), and Secret Manager now answers version \(answered), older; nothing was changed",
                          hint: "when that is right (version \(taken) was forged, or disabled on purpose): gemvault key set \(name) --from \(reference) --relink")
        }
    }
}
