import CSystemShims
import Glibc

/// The open(2) flags callers outside this module need.
public enum OpenFlags {
    public static let readOnly = O_RDONLY
    public static let readWriteCreate = O_RDWR | O_CREAT
    public static let appendCreate = O_WRONLY | O_APPEND | O_CREAT
}

/// Errors of opening a file that gemvault trusts: refused by a check, or failed.
public enum TrustedOpenError: Error, Equatable, Sendable {
    case refused(FileCheckFailure)
    case failed(SystemError)
}

/// The one way gemvault opens a file it trusts: once, without following a symbolic link,
/// then checked on the descriptor it got (fstat), so nothing can be swapped in between.
public enum TrustedFile {
    /// Opens `path` for reading; nil when it does not exist.
    ///
    /// O_NONBLOCK keeps a FIFO from blocking the open itself; it is cleared once the
    /// descriptor is known to be a regular file.
    public static func open(_ path: String, requirement: FileRequirement) throws(TrustedOpenError) -> FileDescriptor? {
        let fd = retryingOnInterrupt { Glibc.open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) }
        return try adopt(fd, path: path, requirement: requirement)
    }

    /// A path naming one of this process's own descriptors (`/dev/fd/63`, as the shell's
    /// `<(pass show gemvault)` makes), or nil. Such a pipe is the user's own, not a planted link.
    public static func inheritedDescriptor(_ path: String) throws(TrustedOpenError) -> FileDescriptor? {
        let number: Substring
        if path.hasPrefix("/dev/fd/") { number = path.dropFirst("/dev/fd/".count) }
        else if path.hasPrefix("/proc/self/fd/") { number = path.dropFirst("/proc/self/fd/".count) }
        else { return nil }
        guard let fd = Int32(number), fd > 2 else { return nil }
        let descriptor = FileDescriptor(borrowing: fd, path: path)
        let status: FileStatus
        do { status = try descriptor.status() } catch { throw .failed(error) }
        switch status.kind {
        case .fifo, .socket:
            guard status.owner == CurrentUser.id else {
                throw .refused(FileCheckFailure(path: path, problem: .foreignOwner(owner: status.owner, mode: status.octalMode)))
            }
        default:
            if let problem = FileProblem.check(status, .secret) { throw .refused(FileCheckFailure(path: path, problem: problem)) }
        }
        return descriptor
    }

    /// Opens `name` inside an already checked folder.
    public static func open(_ name: String, in folder: TrustedFolder, requirement: FileRequirement,
                            flags: Int32 = O_RDONLY, mode: mode_t = 0o600) throws(TrustedOpenError) -> FileDescriptor? {
        let fd = retryingOnInterrupt { openat(folder.descriptor.raw, name, flags | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode) }
        return try adopt(fd, path: folder.path(of: name), requirement: requirement)
    }

    private static func adopt(_ fd: Int32, path: String, requirement: FileRequirement) throws(TrustedOpenError) -> FileDescriptor? {
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            // O_NOFOLLOW on a link fails with ELOOP.
            if code == ELOOP { throw .refused(FileCheckFailure(path: path, problem: .symbolicLink)) }
            throw .failed(SystemError("open", path: path, code: code))
        }
        let descriptor = FileDescriptor(owning: fd, path: path)
        let status: FileStatus
        do { status = try descriptor.status() } catch { throw .failed(error) }
        if let problem = FileProblem.check(status, requirement) {
            throw .refused(FileCheckFailure(path: path, problem: problem))
        }
        descriptor.setBlocking()
        return descriptor
    }

    /// Creates `path` (or reuses the user's own file there) as a private file and empties it,
    /// for a file the user names (/save). The mode is set before anything is written.
    public static func createPrivate(_ path: String) throws(TrustedOpenError) -> FileDescriptor {
        let fd = retryingOnInterrupt { Glibc.open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0o600) }
        guard fd >= 0 else {
            let code = errno
            if code == ELOOP { throw .refused(FileCheckFailure(path: path, problem: .symbolicLink)) }
            throw .failed(SystemError("open", path: path, code: code))
        }
        let descriptor = FileDescriptor(owning: fd, path: path)
        let status: FileStatus
        do { status = try descriptor.status() } catch { throw .failed(error) }
        if status.kind != .regular { throw .refused(FileCheckFailure(path: path, problem: .notRegular(status.kind))) }
        if status.owner != CurrentUser.id {
            throw .refused(FileCheckFailure(path: path, problem: .foreignOwner(owner: status.owner, mode: status.octalMode)))
        }
        guard fchmod(fd, 0o600) == 0 else { throw .failed(SystemError("chmod", path: path)) }
        guard ftruncate(fd, 0) == 0 else { throw .failed(SystemError("truncate", path: path)) }
        descriptor.setBlocking()
        return descriptor
    }
}

/// A folder opened once and checked on its descriptor; names inside it are reached with the
/// *at() calls, so a folder swapped after the check cannot redirect them.
public final class TrustedFolder {
    public let path: String
    public let descriptor: FileDescriptor

    private init(path: String, descriptor: FileDescriptor) {
        self.path = path
        self.descriptor = descriptor
    }

    public func path(of name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

    /// Opens and checks an existing folder; nil when it does not exist. O_PATH needs only
    /// search permission, like the lookup of a name inside it would.
    public static func open(_ path: String) throws(TrustedOpenError) -> TrustedFolder? {
        let fd = retryingOnInterrupt { Glibc.open(path, GV_O_PATH | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { return nil }
            if code == ENOTDIR { throw .refused(FileCheckFailure(path: path, problem: .folderNotDirectory)) }
            throw .failed(SystemError("open", path: path, code: code))
        }
        let descriptor = FileDescriptor(owning: fd, path: path)
        let status: FileStatus
        do { status = try descriptor.status() } catch { throw .failed(error) }
        if let problem = FileProblem.checkFolder(status) { throw .refused(FileCheckFailure(path: path, problem: problem)) }
        return TrustedFolder(path: path, descriptor: descriptor)
    }

    /// Creates the folder and any missing parents (new ones 0700), then opens and checks it.
    public static func create(_ path: String) throws(TrustedOpenError) -> TrustedFolder {
        var partial = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            partial += "/" + component
            if mkdir(partial, 0o700) != 0 && errno != EEXIST {
                throw .failed(SystemError("mkdir", path: partial))
            }
        }
        guard let folder = try open(path) else { throw .failed(SystemError("open", path: path, code: ENOENT)) }
        return folder
    }

    /// The folder that holds `path`.
    public static func parent(of path: String) -> (folder: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let folder = slash == path.startIndex ? "/" : String(path[..<slash])
        return (folder, String(path[path.index(after: slash)...]))
    }

    // MARK: Names inside the folder

    public func rename(_ from: String, to: String) throws(SystemError) {
        guard renameat(descriptor.raw, from, descriptor.raw, to) == 0 else { throw SystemError("rename", path: path(of: to)) }
    }

    /// A hard link `to` for `from`; EEXIST is an error.
    public func link(_ from: String, to: String) throws(SystemError) {
        guard linkat(descriptor.raw, from, descriptor.raw, to, 0) == 0 else { throw SystemError("link", path: path(of: to)) }
    }

    @discardableResult
    public func remove(_ name: String) -> Bool { unlinkat(descriptor.raw, name, 0) == 0 }

    public func exists(_ name: String) -> Bool {
        var info = stat()
        return fstatat(descriptor.raw, name, &info, AT_SYMLINK_NOFOLLOW) == 0
    }

    /// Names in the folder starting with `prefix`.
    public func names(withPrefix prefix: String) -> [String] {
        let copy = retryingOnInterrupt { openat(descriptor.raw, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard copy >= 0, let handle = fdopendir(copy) else { return [] }
        defer { closedir(handle) }
        var found: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name.hasPrefix(prefix) { found.append(name) }
        }
        return found
    }

    /// Makes renames and new names durable (fsync needs a descriptor opened for reading).
    public func sync() {
        let fd = retryingOnInterrupt { openat(descriptor.raw, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }

    public func replace(_ name: String, with bytes: [UInt8], tempPrefix: String,
                        beforeRename: () throws(SystemError) -> Void = {}) throws(SystemError) {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try replace(name, with: raw, tempPrefix: tempPrefix, beforeRename: beforeRename) }
        }.get()
    }

    /// Writes `bytes` to `name` atomically: a fresh temp file (O_EXCL, 0600), fsync, rename
    /// over the old name, fsync of the folder. On failure the old file is untouched and the
    /// temp file is gone. `beforeRename` runs after the data is durable, before the swap.
    public func replace(_ name: String, with bytes: UnsafeRawBufferPointer, tempPrefix: String,
                        beforeRename: () throws(SystemError) -> Void = {}) throws(SystemError) {
        let random = UInt64.random(in: 0...UInt64.max)
        let temp = "\(tempPrefix)\(getpid()).\(String(random, radix: 36))"
        let fd = retryingOnInterrupt { openat(descriptor.raw, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw SystemError("create a temporary file in", path: path) }
        do {
            let file = FileDescriptor(owning: fd, path: path(of: temp))
            try file.writeAll(bytes)
            try file.sync()
            try beforeRename()
            try rename(temp, to: name)
        } catch {
            remove(temp)
            throw error
        }
        sync()
    }
}
