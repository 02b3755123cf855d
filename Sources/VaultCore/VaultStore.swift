#if canImport(Glibc)
import Glibc
#endif

/// The vault on disk: where it lives, the lock that serialises writers, and the atomic save.
///
/// A save writes a temp file (O_CREAT|O_EXCL, 0600) in the same folder, fsyncs it, keeps the
/// current file as `vault.bak` through a hard link, renames the temp file over the vault and
/// fsyncs the folder. A crash at any point leaves either the old or the new vault in place.
public struct VaultStore: Sendable {
    public let path: String

    public init(path: String) { self.path = path }

    public var directory: String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
    public var lockPath: String { path + ".lock" }
    public var backupPath: String { path + ".bak" }

    /// Whether anything (even a dangling symlink) is at the vault's path.
    public var exists: Bool { FileSecurity.mode(of: path) != nil }

    /// Reads the vault's bytes after the permission checks; nil when there is no vault.
    public func readIfPresent() throws(VaultError) -> [UInt8]? {
        try FileSecurity.checkPrivateFile(path)
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw .io(operation: "open", path: path, errno: errno)
        }
        defer { close(fd) }
        do {
            return try PlainIO.readAll(fd: fd, limit: VaultFile.maxPayload + 4096)
        } catch .failed(let code) {
            throw .io(operation: "read", path: path, errno: code)
        } catch {
            throw .damaged(path: path, detail: "the file is larger than any vault")
        }
    }

    /// Reads the vault, failing with `.notFound` when there is none.
    public func read() throws(VaultError) -> [UInt8] {
        guard let bytes = try readIfPresent() else { throw .notFound(path: path) }
        return bytes
    }

    /// Creates the vault's folder (0700) if needed, including missing parents.
    public func prepareDirectory() throws(VaultError) {
        var partial = ""
        for component in directory.split(separator: "/", omittingEmptySubsequences: true) {
            partial += "/" + component
            if mkdir(partial, 0o700) != 0 && errno != EEXIST {
                throw .io(operation: "mkdir", path: partial, errno: errno)
            }
        }
    }

    /// Runs `body` holding an exclusive flock on `vault.lock`, so read-modify-write cycles
    /// of concurrent processes never interleave.
    public func withExclusiveLock<T>(_ body: () throws -> T) throws -> T {
        try prepareDirectory()
        let fd = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw VaultError.io(operation: "open lock file", path: lockPath, errno: errno) }
        defer { close(fd) }
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else { throw VaultError.io(operation: "lock", path: lockPath, errno: errno) }
        }
        defer { flock(fd, LOCK_UN) }
        return try body()
    }

    /// Replaces the vault with `bytes` atomically; the previous version becomes `vault.bak`.
    /// Call it while holding the lock. On failure the old vault is untouched.
    public func writeAtomically(_ bytes: [UInt8]) throws(VaultError) {
        try prepareDirectory()
        let temp = directory + "/.vault.tmp.\(getpid()).\(Sodium.randomUniform(UInt32.max))"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .io(operation: "create", path: temp, errno: errno) }
        var failure: VaultError?
        var written = 0
        bytes.withUnsafeBytes { raw in
            while written < raw.count {
                let n = write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    failure = .io(operation: "write", path: temp, errno: errno)
                    return
                }
                written += n
            }
        }
        if failure == nil && fsync(fd) != 0 { failure = .io(operation: "fsync", path: temp, errno: errno) }
        if close(fd) != 0 && failure == nil { failure = .io(operation: "close", path: temp, errno: errno) }
        if let failure {
            unlink(temp)
            throw failure
        }
        if FileSecurity.mode(of: path) != nil {
            do {
                try keepBackup()
            } catch {
                unlink(temp)
                throw error
            }
        }
        guard rename(temp, path) == 0 else {
            let code = errno
            unlink(temp)
            throw .io(operation: "rename", path: path, errno: code)
        }
        syncDirectory()
    }

    /// Makes the current vault `vault.bak`: a hard link, or a copy where links are not supported.
    private func keepBackup() throws(VaultError) {
        let backupTemp = backupPath + ".tmp"
        unlink(backupTemp)
        if link(path, backupTemp) != 0 {
            guard [EPERM, EXDEV, EMLINK, ENOTSUP].contains(errno) else {
                throw .io(operation: "keep backup", path: backupPath, errno: errno)
            }
            let bytes = try read()
            let fd = open(backupTemp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw .io(operation: "keep backup", path: backupTemp, errno: errno) }
            let copied = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) == $0.count } && fsync(fd) == 0
            close(fd)
            guard copied else {
                unlink(backupTemp)
                throw .io(operation: "keep backup", path: backupTemp, errno: errno)
            }
        }
        guard rename(backupTemp, backupPath) == 0 else {
            let code = errno
            unlink(backupTemp)
            throw .io(operation: "keep backup", path: backupPath, errno: code)
        }
    }

    private func syncDirectory() {
        let fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        fsync(fd)
        close(fd)
    }
}

extension VaultStore {
    /// Writes a non-vault private file (the config file) with the same temp-file-and-rename
    /// discipline, without keeping a backup.
    public func writePlainFile(_ bytes: [UInt8]) throws(VaultError) {
        try prepareDirectory()
        let temp = directory + "/.\(getpid()).\(Sodium.randomUniform(UInt32.max)).tmp"
        let fd = open(temp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .io(operation: "create", path: temp, errno: errno) }
        let ok = bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) == $0.count } && fsync(fd) == 0
        close(fd)
        guard ok, rename(temp, path) == 0 else {
            let code = errno
            unlink(temp)
            throw .io(operation: "write", path: path, errno: code)
        }
    }
}
