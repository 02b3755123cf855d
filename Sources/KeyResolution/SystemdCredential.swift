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

    /// What a credential file may hold: a key is far shorter.
    static let sizeLimit = 8192

    /// The key in the credential, trimmed; nil when there is no such credential. The folder is
    /// walked and checked as the vault's is (no link or folder another user controls on the
    /// way), so nobody can point the command at another service's credential.
    static func read(_ path: String, directory: String, warn: (String) -> Void) throws -> ResolvedKey? {
        let opened: FileDescriptor?
        do throws(TrustedOpenError) {
            let (folderPath, name) = TrustedFolder.parent(of: path)
            guard let folder = try TrustedFolder.open(folderPath) else { return nil }
            opened = try TrustedFile.open(name, in: folder, requirement: .configuration)
        } catch {
            switch error {
            case .refused(let failure): throw ConfigError.refused(failure)
            case .failed(let failure): throw ConfigError.unreadable(path: path, reason: failure.reason)
            }
        }
        guard let file = opened else { return nil }
        if PlainFile.isInMemory(folder: directory) == false {
            warn("the credentials folder \(directory) is not on tmpfs or ramfs, so the key in it may be on a disk")
        }
        let buffer = SecretBytes(count: Self.sizeLimit + 1)
        let length: Int
        do { length = try buffer.withUnsafeMutableBytes { raw throws(SystemError) in try file.readFully(into: raw) } }
        catch { throw ConfigError.unreadable(path: path, reason: error.reason) }
        guard length <= Self.sizeLimit else { throw ConfigError.unreadable(path: path, reason: "the credential is larger than \(Self.sizeLimit) bytes; a key is one short line") }
        buffer.truncate(to: length)
        let key = buffer.trimmingWhitespace()
        guard key.count > 0 else { throw ConfigError.unreadable(path: path, reason: "the credential is empty") }
        return ResolvedKey(secret: key, source: .systemdCredential(path: path), updated: (try? file.status())?.modified)
    }
}
