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
