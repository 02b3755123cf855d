import SystemIO

/// The vault on disk: where it lives, the lock that serialises writers, and the atomic save.
///
/// The folder is opened once and checked (the user's or root's, not writable by others);
/// every name in it is then reached through that descriptor. A save writes a temp file
/// (O_EXCL, 0600), fsyncs it, keeps a backup through a hard link, renames the temp file over
/// the vault and fsyncs the folder. A crash at any point leaves the old or the new vault.
public struct VaultStore: Sendable {
    public let path: String
    /// Seconds a writer waits for another writer's lock.
    public var lockTimeout: Double

    /// Seconds a command waits for another process's lock (GEMVAULT_LOCK_TIMEOUT when set).
    public static let defaultLockTimeout = 10.0

    public init(path: String, lockTimeout: Double = defaultLockTimeout) {
        self.path = path
        self.lockTimeout = lockTimeout
    }

    public var directory: String { TrustedFolder.parent(of: path).folder }
    public var name: String { TrustedFolder.parent(of: path).name }
    public var lockPath: String { path + ".lock" }
    public var backupPath: String { path + ".bak" }
    var tempPrefix: String { "." + name + ".tmp." }

    /// Whether anything (even a dangling symlink) is at the vault's path.
    public var exists: Bool { FileStatus.of(link: path) != nil }

    /// The checked folder, or nil when it does not exist.
    func openFolder() throws(VaultError) -> TrustedFolder? {
        do { return try TrustedFolder.open(directory) } catch { throw VaultError(error) }
    }

    /// Reads the vault's bytes after the checks; nil when there is no vault.
    public func readIfPresent() throws(VaultError) -> [UInt8]? {
        guard let folder = try openFolder() else { return nil }
        return try read(name, in: folder)
    }

    /// Reads the vault, failing with `.notFound` when there is none.
    public func read() throws(VaultError) -> [UInt8] {
        guard let bytes = try readIfPresent() else { throw .notFound(path: path) }
        return bytes
    }

    /// Reads the backup, failing with `.noBackup` when there is none.
    public func readBackup() throws(VaultError) -> [UInt8] {
        guard let folder = try openFolder(), let bytes = try read(name + ".bak", in: folder) else { throw .noBackup(path: backupPath) }
        return bytes
    }

    private func read(_ file: String, in folder: TrustedFolder) throws(VaultError) -> [UInt8]? {
        let descriptor: FileDescriptor?
        do { descriptor = try TrustedFile.open(file, in: folder, requirement: .secret) } catch { throw VaultError(error) }
        guard let descriptor else { return nil }
        do {
            return try descriptor.readAll(limit: VaultFile.maximumSize)
        } catch .failed(let system) {
            throw .system(system)
        } catch {
            throw .damaged(path: folder.path(of: file), detail: "it is larger than any vault (\(VaultFile.maximumSize) bytes)")
        }
    }

    /// A vault folder opened for writing, with the lock held.
    public final class WriteSession {
        let store: VaultStore
        let folder: TrustedFolder
        private let lock: FileLock

        init(store: VaultStore, folder: TrustedFolder, lock: FileLock) {
            self.store = store
            self.folder = folder
            self.lock = lock
        }

        /// The current vault's bytes, or nil when there is none.
        public func read() throws(VaultError) -> [UInt8]? { try store.read(store.name, in: folder) }

        /// Keeps the current vault beside itself as `vault<suffix>` (a hard link, or a copy).
        /// Returns the new path.
        public func keepAside(suffix: String) throws(VaultError) -> String {
            // Never over an earlier copy kept the same second.
            var target = store.name + suffix
            var number = 2
            while folder.exists(target) {
                target = store.name + suffix + "-\(number)"
                number += 1
            }
            do { try store.keepCopy(of: store.name, as: target, in: folder) } catch {
                throw .writeFailed(path: store.path, reason: "could not keep the old vault aside: \(error.reason)")
            }
            return folder.path(of: target)
        }

        public func readBackup() throws(VaultError) -> [UInt8] {
            guard let bytes = try store.read(store.name + ".bak", in: folder) else { throw .noBackup(path: store.backupPath) }
            return bytes
        }
    }

    /// What becomes `vault.bak` when a save succeeds.
    public enum Backup: Sendable {
        /// The vault being replaced (ordinary saves).
        case previous
        /// The new vault itself, so no copy under a retired key or passphrase survives (rekeys).
        case new
        /// Left as it is (restoring the backup).
        case unchanged
    }

    /// Runs `body` holding an exclusive lock on `vault.lock`, so read-modify-write cycles of
    /// concurrent processes never interleave. Temp files of killed writers are removed first.
    public func withExclusiveLock<T>(onWait: (String) -> Void = { _ in }, _ body: (WriteSession) throws -> T) throws -> T {
        let folder: TrustedFolder
        do { folder = try TrustedFolder.create(directory) } catch { throw VaultError(error) }
        let lock: FileLock
        do { lock = try FileLock.acquire(name + ".lock", in: folder, timeout: lockTimeout, onWait: onWait) } catch { throw VaultError(error) }
        let leftovers = folder.names(withPrefix: tempPrefix) + folder.names(withPrefix: name + ".").filter { $0.hasSuffix(".tmp") }
        for stale in leftovers { folder.remove(stale) }
        return try body(WriteSession(store: self, folder: folder, lock: lock))
    }

    /// Replaces the vault with `bytes` atomically. Call it inside `withExclusiveLock`.
    /// On failure the vault is untouched and the error says so.
    public func write(_ bytes: [UInt8], in session: WriteSession, backup: Backup = .previous) throws(VaultError) {
        let folder = session.folder
        let hadVault = folder.exists(name)
        do {
            // Only once the new file is complete: a failed write leaves the backup too.
            try folder.replace(name, with: bytes, tempPrefix: tempPrefix, beforeRename: { (temp) throws(SystemError) in
                if backup == .previous && hadVault { try keepBackup(of: name, in: folder) }
                // A rekey's backup becomes the new vault just before the vault does: at every
                // moment one exists, and once the rename is done none keeps a retired slot.
                if backup == .new { try keepCopy(of: temp, as: name + ".bak", in: folder) }
            })
        } catch {
            throw .writeFailed(path: path, reason: error.operation == "write" || error.operation == "fsync"
                               ? error.reason : "\(error.operation) \(error.path): \(error.reason)")
        }
        folder.sync()
    }

    /// Makes `vault.bak` a hard link to `source`, or a copy where links are not supported.
    private func keepBackup(of source: String, in folder: TrustedFolder) throws(SystemError) {
        try keepCopy(of: source, as: name + ".bak", in: folder)
    }

    /// Makes `target` a hard link to `source`, or a copy, through a temp name and a rename.
    func keepCopy(of source: String, as target: String, in folder: TrustedFolder) throws(SystemError) {
        let backupTemp = target + ".tmp"
        folder.remove(backupTemp)
        do {
            try folder.link(source, to: backupTemp)
        } catch let error where error.isLinkUnsupported {
            guard let bytes = try? read(source, in: folder) else { throw error }
            do {
                try folder.replace(backupTemp, with: bytes, tempPrefix: tempPrefix)
            } catch {
                folder.remove(backupTemp)
                throw error
            }
        }
        do { try folder.rename(backupTemp, to: target) } catch {
            folder.remove(backupTemp)
            throw error
        }
        // When `target` already was a link to `source` (after a rekey), rename(2) succeeds
        // without doing anything and the temp name stays.
        folder.remove(backupTemp)
    }
}

extension VaultStore {
    /// Writes a non-vault file (config.json) with the same temp-file-and-rename discipline,
    /// without a backup and without the vault lock.
    public static func writePlainFile(_ path: String, _ bytes: [UInt8]) throws(VaultError) {
        let (directory, name) = TrustedFolder.parent(of: path)
        let folder: TrustedFolder
        do { folder = try TrustedFolder.create(directory) } catch { throw VaultError(error) }
        do {
            try folder.replace(name, with: bytes, tempPrefix: "." + name + ".tmp.")
        } catch {
            throw .writeFailed(path: path, reason: error.reason)
        }
    }
}
