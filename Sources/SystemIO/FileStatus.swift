import Glibc

/// What fstat or lstat said about a file.
public struct FileStatus: Equatable, Sendable {
    public enum Kind: Sendable, Equatable {
        case regular, directory, symbolicLink, fifo, socket, device, other

        public var description: String {
            switch self {
            case .regular: "a regular file"
            case .directory: "a directory"
            case .symbolicLink: "a symbolic link"
            case .fifo: "a FIFO (named pipe)"
            case .socket: "a socket"
            case .device: "a device"
            case .other: "not a regular file"
            }
        }
    }

    public let kind: Kind
    public let owner: uid_t
    /// Permission bits, including setuid, setgid and sticky.
    public let permissions: UInt32
    public let size: Int64
    public let device: UInt64
    public let inode: UInt64
    /// How many names (hard links) the file has.
    public let linkCount: UInt64
    public let modified: Int64
    /// With its nanoseconds, to order files written within one second.
    public let modifiedExactly: Double

    init(_ info: stat) {
        switch info.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symbolicLink
        case S_IFIFO: kind = .fifo
        case S_IFSOCK: kind = .socket
        case S_IFCHR, S_IFBLK: kind = .device
        default: kind = .other
        }
        owner = info.st_uid
        permissions = UInt32(info.st_mode & 0o7777)
        size = Int64(info.st_size)
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        linkCount = UInt64(info.st_nlink)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedExactly = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
    }

    /// lstat: the link itself, not what it points to. Nil when nothing is there.
    public static func of(link path: String) -> FileStatus? {
        var info = stat()
        return lstat(path, &info) == 0 ? FileStatus(info) : nil
    }

    /// stat: following symbolic links. Nil when nothing is there.
    public static func of(_ path: String) -> FileStatus? {
        var info = stat()
        return stat(path, &info) == 0 ? FileStatus(info) : nil
    }

    /// glibc's encoding of dev_t.
    public var deviceMajor: UInt64 { ((device >> 8) & 0xfff) | ((device >> 32) & ~UInt64(0xfff)) }
    public var deviceMinor: UInt64 { (device & 0xff) | ((device >> 12) & ~UInt64(0xff)) }

    public var octalMode: String { "0" + String(permissions & 0o777, radix: 8) }
    public var isWorldWritable: Bool { permissions & 0o002 != 0 }
    public var isSticky: Bool { permissions & 0o1000 != 0 }
}

public enum CurrentUser {
    public static var id: uid_t { geteuid() }

    /// systemd-logind's runtime folder of the user (`/run/user/<uid>`, a tmpfs), when it is there,
    /// the user's own and closed to others: where the agent's socket and `exec --secret-file`'s
    /// files go when `XDG_RUNTIME_DIR` is unset (an MCP client may pass only HOME and PATH).
    public static func loginRuntimeFolder(_ path: String = "/run/user/\(geteuid())") -> String? {
        guard let status = FileStatus.of(link: path), status.kind == .directory, status.owner == geteuid(),
              status.permissions & 0o077 == 0 else { return nil }
        return path
    }

    /// The account's login name, or its number when the password database has none.
    public static var name: String {
        guard let entry = getpwuid(geteuid()), let name = entry.pointee.pw_name else { return String(geteuid()) }
        return String(cString: name)
    }

    /// This machine's host name (the first label shares carry as a sender's default label).
    public static var host: String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "localhost" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
