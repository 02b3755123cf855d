#if canImport(Glibc)
import Glibc
#endif

/// The checks gemvault makes before it reads a file holding a secret.
public enum FileSecurity {
    /// Refuses a symlink, a file owned by someone else, or one open to group or others.
    /// Returns normally when `path` does not exist; callers decide what absence means.
    public static func checkPrivateFile(_ path: String) throws(VaultError) {
        var info = stat()
        guard lstat(path, &info) == 0 else {
            if errno == ENOENT { return }
            throw .io(operation: "stat", path: path, errno: errno)
        }
        if (info.st_mode & S_IFMT) == S_IFLNK {
            throw .insecureFile(path: path, problem: "is a symbolic link",
                                fix: "replace the link with the file itself: cp --remove-destination \"$(readlink -f \(shellQuoted(path)))\" \(shellQuoted(path))")
        }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            throw .insecureFile(path: path, problem: "is not a regular file", fix: "point gemvault at a regular file")
        }
        if info.st_uid != geteuid() {
            throw .insecureFile(path: path, problem: "is owned by uid \(info.st_uid), not by you (uid \(geteuid()))",
                                fix: "sudo chown \(geteuid()) \(shellQuoted(path))")
        }
        if info.st_mode & 0o077 != 0 {
            throw .insecureFile(path: path, problem: "is readable or writable by group or others (mode \(octal(info.st_mode & 0o777)))",
                                fix: "chmod 600 \(shellQuoted(path))")
        }
    }

    /// Mode bits of a path, or nil when it does not exist.
    public static func mode(of path: String) -> UInt32? {
        var info = stat()
        return lstat(path, &info) == 0 ? UInt32(info.st_mode & 0o7777) : nil
    }

    public static func octal(_ mode: UInt32) -> String { "0" + String(mode, radix: 8) }

    /// Quotes a path for a shell command that the user may paste.
    public static func shellQuoted(_ path: String) -> String {
        let safe = path.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || "0123456789/._-+".unicodeScalars.contains($0)) }
        return safe ? path : "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
