import Glibc

/// A private folder made for one run (`exec --secret-file`): a fresh name (mkdtemp, 0700) in
/// a folder that passes the vault's checks, files written once (0600, new names only), and
/// everything removed at the end.
public final class ScratchFolder {
    public let path: String
    private var names: [String] = []
    private var removed = false

    private init(path: String) { self.path = path }

    /// A new folder `prefix-XXXXXX` in `parent`, which must be private to the user.
    public static func create(in parent: String, prefix: String) throws(TrustedOpenError) -> ScratchFolder {
        guard try TrustedFolder.open(parent) != nil else { throw .failed(SystemError("open", path: parent, code: ENOENT)) }
        var template = Array((parent + "/" + prefix + "-XXXXXX").utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw .failed(SystemError("mkdtemp", path: parent)) }
        return ScratchFolder(path: String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }

    /// Writes `bytes` to a new file `name` (0600) and returns its path.
    public func write(_ name: String, _ bytes: UnsafeRawBufferPointer) throws(SystemError) -> String {
        let full = path + "/" + name
        let fd = retryingOnInterrupt { Glibc.open(full, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw SystemError("create", path: full) }
        names.append(name)
        let file = FileDescriptor(owning: fd, path: full)
        try file.writeAll(bytes)
        return full
    }

    /// Overwrites each file with zeros, removes it, then the folder. Safe to call twice.
    public func remove() {
        guard !removed else { return }
        removed = true
        for name in names {
            let full = path + "/" + name
            var info = stat()
            if lstat(full, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
                let fd = Glibc.open(full, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)
                if fd >= 0 {
                    let zeros = [UInt8](repeating: 0, count: Int(info.st_size))
                    _ = zeros.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                    close(fd)
                }
            }
            unlink(full)
        }
        rmdir(path)
    }

    /// Folders `prefix-PID-…` in `parent` left by a run that was killed before it could remove
    /// them (SIGKILL): this user's, their process gone. Their files are zeroed and removed.
    public static func sweepOrphans(in parent: String, prefix: String) {
        for entry in FolderListing.entries(parent) ?? [] where entry.isDirectory && entry.name.hasPrefix(prefix + "-") {
            guard let pid = entry.name.dropFirst(prefix.count + 1).split(separator: "-").first.flatMap({ pid_t($0) }), pid > 0,
                  kill(pid, 0) != 0, errno == ESRCH else { continue }
            let path = parent + "/" + entry.name
            var info = stat()
            guard lstat(path, &info) == 0, info.st_uid == getuid(), (info.st_mode & S_IFMT) == S_IFDIR else { continue }
            let orphan = ScratchFolder(path: path)
            orphan.names = (FolderListing.entries(path) ?? []).filter { !$0.isDirectory }.map(\.name)
            orphan.remove()
        }
    }

    deinit { remove() }
}
