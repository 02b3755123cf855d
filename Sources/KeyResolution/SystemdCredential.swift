import Glibc
import Settings
import SystemIO
import VaultCore

/// A key systemd hands a service (`LoadCredential=`, `LoadCredentialEncrypted=`): the file
/// named by `credential_name` in `$CREDENTIALS_DIRECTORY`, decrypted by systemd before the
/// service starts. It is taken only as systemd writes it: a regular file, not a link, the
/// caller's own, that group and others cannot write.
enum SystemdCredential {
    static let directoryVariable = "CREDENTIALS_DIRECTORY"

    /// The credential's path, when the environment names a credentials folder.
    static func path(environment: [String: String], name: String) throws -> String? {
        guard let directory = environment[directoryVariable], !directory.isEmpty else { return nil }
        guard name != ".", name != ".." else {
            throw ConfigError.unreadable(path: directory, reason: "'\(name)' is not a credential name (the setting \(Setting.credentialName.name))")
        }
        return (directory.hasSuffix("/") ? directory : directory + "/") + name
    }

    /// The key in the credential, trimmed; nil when there is no such credential. The folder is
    /// walked and checked as the vault's is (no link or folder another user controls on the
    /// way), so nobody can point the command at another service's credential.
    static func read(_ path: String, warn: (String) -> Void) throws -> ResolvedKey? {
        let (folderPath, name) = TrustedFolder.parent(of: path)
        let opened: FileDescriptor?
        do throws(TrustedOpenError) {
            guard let folder = try TrustedFolder.open(folderPath) else { return nil }
            opened = try TrustedFile.open(name, in: folder, requirement: .configuration)
        } catch {
            switch error {
            case .refused(let failure): throw ConfigError.refused(failure)
            case .failed(let failure): throw ConfigError.unreadable(path: path, reason: failure.reason)
            }
        }
        guard let file = opened else { return nil }
        // Asked of the file opened, which is where the key is.
        if PlainFile.isInMemory(file) == false {
            warn("the credentials folder \(folderPath) is not on tmpfs or ramfs, so the key in it may be on a disk")
        }
        let key = try KeyFile.key(in: file, path: path) { ConfigError.unreadable(path: path, reason: $0.reason) }
        // The file's time is when systemd decrypted it for this run, not the key's age: unknown.
        return ResolvedKey(secret: key, source: .systemdCredential(path: path), updated: nil)
    }
}

/// How `key export --systemd-creds` runs `systemd-creds encrypt`. It needs the host's key
/// (/var/lib/systemd/credential.secret), which only root may read, while the vault is the
/// user's: so gemvault stays the user, and only systemd-creds runs as root, through sudo,
/// the key on its stdin. Root's gemvault never opens a vault in another user's home.
public enum SystemdCredentialEncryption {
    public static let hostKeyPath = "/var/lib/systemd/credential.secret"
    /// systemd-creds' own variable naming another host key (tests use it).
    public static let hostKeyVariable = "SYSTEMD_CREDENTIAL_SECRET"
    /// What sudo says when it asks for the password (%p: the account whose password it is).
    public static let sudoPrompt = "[sudo] password for %p, to run systemd-creds for gemvault: "

    /// The host key systemd-creds will read.
    public static func hostKey(environment: [String: String]) -> String {
        environment[hostKeyVariable].flatMap { $0.isEmpty ? nil : $0 } ?? hostKeyPath
    }

    /// Whether systemd-creds must run as root: not root, and the host key is not readable.
    public static func needsRoot(environment: [String: String], effectiveUser: uid_t = geteuid()) -> Bool {
        effectiveUser != 0 && access(hostKey(environment: environment), R_OK) != 0
    }

    /// `systemd-creds encrypt`, the key on stdin; the credential to `output`, or stdout ("-").
    public static func arguments(credential: String, tpm2: Bool, output: String?, pretty: Bool) -> [String] {
        ["systemd-creds", "encrypt", "--name=\(credential)", "--with-key=" + (tpm2 ? "host+tpm2" : "host")]
            + (pretty ? ["--pretty"] : []) + ["-", output ?? "-"]
    }

    /// The same through sudo: its password prompt on the terminal, the key still on stdin.
    public static func throughSudo(_ arguments: [String]) -> [String] {
        ["sudo", "-p", sudoPrompt, "--"] + arguments
    }

    /// The pipe that does by hand what gemvault could not: the key from `key get` into a root
    /// systemd-creds, under umask 077 so the file is 0600.
    public static func manualPipe(program: String, name: String, credential: String, tpm2: Bool, output: String?) -> String {
        let encrypt = arguments(credential: credential, tpm2: tpm2, output: output, pretty: output == nil).map(ShellQuote.quote)
        return "(umask 077; \(ShellQuote.quote(program)) key get \(ShellQuote.quote(name)) | sudo \(encrypt.joined(separator: " ")))"
    }

    /// The program `name` in PATH, as posix_spawnp would find it; nil when there is none.
    public static func inPath(_ name: String, environment: [String: String]) -> String? {
        let folders = (environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: false)
        for folder in folders {
            let path = (folder.isEmpty ? "." : String(folder)) + "/" + name
            if access(path, X_OK) == 0, FileStatus.of(path)?.kind == .regular { return path }
        }
        return nil
    }

}
