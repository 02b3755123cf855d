import CSystemShims
import Glibc

/// Reading files that hold no secret and steer nothing: /proc, shell start-up files, .env scans.
public enum PlainFile {
    /// A whole regular file as text, or nil when it is missing, unreadable, not a regular file
    /// (a FIFO never blocks the open), or larger than `limit`. The descriptor stays
    /// non-blocking, so nothing that only looks regular can hang the read.
    ///
    /// Files met while scanning must live on a real file system (`realFilesOnly`), not /proc
    /// or /sys, whose "regular" files (/proc/kmsg) can block or be consumed by reading; .env
    /// files anyone could plant are also read without following a symlink.
    public static func readText(_ path: String, limit: Int = 1 << 20, followLinks: Bool = true, realFilesOnly: Bool = false) -> String? {
        let flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | (followLinks ? 0 : O_NOFOLLOW)
        guard let file = try? FileDescriptor.openIfPresent(path, flags: flags),
              let status = try? file.status(), status.kind == .regular else { return nil }
        if realFilesOnly {
            let type = gv_file_system_type(file.raw)
            guard type >= 0, !virtualFileSystems.contains(Int64(type)) else { return nil }
        }
        guard let bytes = try? file.readAll(limit: limit) else { return nil }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// proc, sysfs, devpts, debugfs, tracefs, securityfs, cgroup2.
    static let virtualFileSystems: Set<Int64> = [0x9fa0, 0x62656572, 0x1cd1, 0x64626720, 0x74726163, 0x73636673, 0x63677270]

    /// tmpfs and ramfs: what systemd keeps credentials on, never written to a disk.
    static let memoryFileSystems: Set<Int64> = [0x0102_1994, 0x8584_58f6]

    /// Whether the open file lives in memory (tmpfs or ramfs); nil when it cannot be told.
    public static func isInMemory(_ file: FileDescriptor) -> Bool? {
        let type = gv_file_system_type(file.raw)
        return type < 0 ? nil : memoryFileSystems.contains(Int64(type))
    }
}

/// Listing folders that are only looked at, never trusted (doctor's scans).
public enum FolderListing {
    public struct Entry: Sendable {
        public let name: String
        /// As the folder entry says, without following a symbolic link.
        public let isDirectory: Bool
    }

    /// The entries of `path` other than . and .., or nil when it cannot be read.
    public static func entries(_ path: String) -> [Entry]? {
        guard let handle = opendir(path) else { return nil }
        defer { closedir(handle) }
        var entries: [Entry] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if name == "." || name == ".." { continue }
            entries.append(Entry(name: name, isDirectory: entry.pointee.d_type == UInt8(DT_DIR)))
        }
        return entries
    }

    /// `path` with every symbolic link followed (realpath), or nil when it does not resolve.
    public static func resolved(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}

public enum ProcessIdentity {
    public static var parent: Int32 { getppid() }
    public static var current: Int32 { getpid() }

    /// Whether a process with this id runs on this machine (one of another user counts).
    public static func isRunning(_ pid: Int32) -> Bool {
        guard pid > 0 else { return false }
        return kill(pid, 0) == 0 || errno == EPERM
    }

    /// This boot's id, new at every boot (also of a cloned machine that shares /etc/machine-id).
    public static var bootID: String? {
        PlainFile.readText("/proc/sys/kernel/random/boot_id", limit: 128).map { $0.filter { !$0.isWhitespace } }.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The PID namespace this process runs in (the inode of /proc/self/ns/pid): containers
    /// that share a machine id and a boot differ here, and a pid means something only inside it.
    public static var pidNamespace: String? {
        var info = stat()
        guard stat("/proc/self/ns/pid", &info) == 0 else { return nil }
        return String(info.st_ino)
    }

    /// A long-lived process should not keep the folder it was started in busy.
    public static func leaveWorkingFolder() { _ = chdir("/") }

    /// This program's own file (/proc/self/exe), to start a copy of it.
    public static var executablePath: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return CommandLine.arguments[0] }
        return String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The account's home folder from the password database (not $HOME, which anyone can set).
    public static var homeDirectory: String? {
        guard let entry = getpwuid(geteuid()), let directory = entry.pointee.pw_dir else { return nil }
        return String(cString: directory)
    }

    /// `~` and `~/…` with the home folder ($HOME, else the password database), as a shell would.
    public static func expandingTilde(_ path: String) -> String {
        guard path == "~" || path.hasPrefix("~/") else { return path }
        let home = getenv("HOME").map { String(cString: $0) }.flatMap { $0.hasPrefix("/") ? $0 : nil } ?? homeDirectory ?? "/"
        return home + path.dropFirst()
    }

    /// The folder this process runs in, resolved (realpath); "." when it cannot be resolved.
    public static var workingFolder: String {
        guard let resolved = realpath(".", nil) else { return "." }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// `path` made absolute with its folder resolved (realpath), the file name kept as given;
    /// the path itself when the folder does not exist.
    public static func absolutePath(_ path: String) -> String {
        let (folder, name) = TrustedFolder.parent(of: path)
        guard let resolved = realpath(folder, nil) else { return path }
        defer { free(resolved) }
        let base = String(cString: resolved)
        return base == "/" ? "/" + name : base + "/" + name
    }

    /// Whether a file the user owns is theirs to change: always for an ordinary account; for
    /// root, only inside root's home, since root also owns every system file.
    public static func isPersonal(_ path: String) -> Bool {
        guard geteuid() == 0 else { return true }
        guard let home = homeDirectory, home != "/" else { return false }
        return path.hasPrefix(home.hasSuffix("/") ? home : home + "/")
    }
}

extension String {
    /// The string without leading and trailing white space.
    public var trimmedWhitespace: String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[start...end])
    }

    /// nil for the empty string.
    public var nonEmpty: String? { isEmpty ? nil : self }
}
