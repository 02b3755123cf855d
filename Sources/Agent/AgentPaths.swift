import SystemIO
import VaultCore

/// Where the agent of a vault listens: `$XDG_RUNTIME_DIR/gemvault/`; when that is unset,
/// `/run/user/<uid>/gemvault/` if the login manager made that folder, else `/tmp/gemvault-<uid>/`. The folder must be the user's own with mode 0700; one socket per vault.
public struct AgentPaths: Sendable {
    public let folder: String
    /// The vault's absolute path, which names its socket.
    public let vaultPath: String

    public init(environment: [String: String], vaultPath: String) {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            folder = runtime + "/gemvault"
        } else if let login = CurrentUser.loginRuntimeFolder() {
            // An MCP client may pass a wrapped server only HOME and PATH: it still finds the
            // session a login shell (with XDG_RUNTIME_DIR set) started.
            folder = login + "/gemvault"
        } else {
            folder = "/tmp/gemvault-\(CurrentUser.id)"
        }
        self.vaultPath = ProcessIdentity.absolutePath(vaultPath)
    }

    var baseName: String { "agent-" + Sodium.fingerprint(vaultPath) }
    public var socketName: String { baseName + ".sock" }
    public var socketPath: String { folder + "/" + socketName }
    var lockName: String { baseName + ".lock" }
    public var logName: String { baseName + ".log" }
    public var logPath: String { folder + "/" + logName }

    /// Opens the folder, creating it (0700) when missing, and refuses one that is a symlink,
    /// someone else's, or open to group or others (a socket there could be replaced).
    public func openFolder(create: Bool) throws(TrustedOpenError) -> TrustedFolder? {
        // Deeper folders could be made one name at a time, but never checked or reached again.
        guard socketPath.utf8.count <= SystemError.longestPath else { throw .failed(SystemError.nameTooLong("open", path: folder)) }
        if create, FileStatus.of(link: folder) == nil {
            _ = try TrustedFolder.create(folder)
        }
        guard let status = FileStatus.of(link: folder) else { return nil }
        if status.kind == .symbolicLink { throw .refused(FileCheckFailure(path: folder, problem: .symbolicLink)) }
        guard let opened = try TrustedFolder.open(folder) else { return nil }
        let checked = try? opened.descriptor.status()
        if let checked, checked.owner != CurrentUser.id {
            throw .refused(FileCheckFailure(path: folder, problem: .folderForeignOwner(owner: checked.owner)))
        }
        if let checked, checked.permissions & 0o077 != 0 {
            throw .refused(FileCheckFailure(path: folder, problem: .folderOpenToOthers(mode: checked.octalMode)))
        }
        return opened
    }
}
