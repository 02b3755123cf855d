import CSystemShims
import Glibc

/// Unix stream sockets with peer credentials, for the session agent.
public enum UnixSocket {
    /// Who is at the other end of a connected socket.
    public struct Peer: Sendable, Equatable {
        public let pid: Int32
        public let uid: UInt32
    }

    /// The longest name a Unix socket address holds (`sun_path` less its terminating NUL).
    public static let longestAddress = 107

    /// Binds a socket named `name` in `folder` (0600, listening). `path` is the same socket's
    /// full name, for messages and for systems without /proc.
    public static func listen(_ name: String, in folder: FileDescriptor, path: String) throws(SystemError) -> FileDescriptor {
        let address = try address(of: name, in: folder, path: path)
        let fd = gv_unix_listen(address)
        guard fd >= 0 else { throw SystemError("listen on", path: path) }
        return FileDescriptor(owning: fd, path: path)
    }

    /// Connects to the socket named `name` in `folder`. A listener whose queue is full is tried
    /// again until `deadline` (monotonic seconds), then given up with EAGAIN: a peer that never
    /// accepts cannot hold the caller. The descriptor is left blocking.
    public static func connect(_ name: String, in folder: FileDescriptor, path: String, deadline: Double) throws(SystemError) -> FileDescriptor {
        let connected = try connect(path: try address(of: name, in: folder, path: path), deadline: deadline, named: path)
        connected.setBlocking()
        return connected
    }

    /// Connects to a socket someone else made, by its full path (an ssh-agent's `SSH_AUTH_SOCK`),
    /// without blocking: a listener that never accepts (its queue full) is tried again until
    /// `deadline` (monotonic seconds), then refused with ETIMEDOUT. The descriptor is non-blocking.
    public static func connect(path: String, deadline: Double) throws(SystemError) -> FileDescriptor {
        guard path.utf8.count <= longestAddress else { throw SystemError.nameTooLong("reach", path: path) }
        return try connect(path: path, deadline: deadline, named: path, timedOut: ETIMEDOUT)
    }

    /// The non-blocking connect, retried while the listener's queue is full (EAGAIN; Linux never
    /// answers EINPROGRESS for a Unix socket), until `deadline`, then `timedOut`.
    private static func connect(path address: String, deadline: Double, named path: String, timedOut: Int32 = EAGAIN) throws(SystemError) -> FileDescriptor {
        while true {
            let fd = gv_unix_connect_nonblocking(address)
            if fd >= 0 { return FileDescriptor(owning: fd, path: path) }
            guard errno == EAGAIN else { throw SystemError("connect to", path: path) }
            guard !Deadline(at: deadline).hasPassed else { throw SystemError("connect to", path: path, code: timedOut) }
            Clock.sleep(0.01)
        }
    }

    /// The address bind and connect use for `name` in `folder`: `/proc/self/fd/N/name`, which
    /// is short at any folder depth and names exactly the folder that was opened and checked.
    /// Without /proc, the full path if it fits; otherwise ENAMETOOLONG.
    public static func address(of name: String, in folder: FileDescriptor, path: String) throws(SystemError) -> String {
        let viaDescriptor = "/proc/self/fd/\(folder.raw)/\(name)"
        if viaDescriptor.utf8.count <= longestAddress, let held = try? folder.status(),
           let seen = FileStatus.of("/proc/self/fd/\(folder.raw)"), seen.device == held.device, seen.inode == held.inode {
            return viaDescriptor
        }
        guard path.utf8.count <= longestAddress else { throw SystemError.nameTooLong("reach", path: path) }
        return path
    }

    /// The next connection, or nil when none is waiting (EAGAIN) or the call was interrupted.
    public static func accept(_ listening: FileDescriptor) -> FileDescriptor? {
        let fd = gv_accept_cloexec(listening.raw)
        return fd >= 0 ? FileDescriptor(owning: fd, path: listening.path) : nil
    }

    public static func peer(of connection: FileDescriptor) throws(SystemError) -> Peer {
        var pid: pid_t = 0
        var uid: uid_t = 0
        guard gv_peer_credentials(connection.raw, &pid, &uid) == 0 else { throw SystemError("read the peer of", path: connection.path) }
        return Peer(pid: pid, uid: uid)
    }
}

extension FileDescriptor {
    /// Makes reads and writes on this descriptor return instead of blocking.
    public func setNonBlocking() {
        let flags = fcntl(raw, F_GETFL)
        if flags >= 0 { _ = fcntl(raw, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Reads what is available without blocking: nil when nothing is (EAGAIN), 0 at the end.
    public func readAvailable(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int? {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let n = retryingOnInterrupt { Glibc.read(raw, base, buffer.count) }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return nil }
        guard n >= 0 else { throw SystemError("read", path: path) }
        return n
    }

    /// Writes what the descriptor takes now; nil when it takes nothing (EAGAIN).
    public func writeSome(_ bytes: UnsafeRawBufferPointer) throws(SystemError) -> Int? {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return 0 }
        let n = retryingOnInterrupt { Glibc.write(raw, base, bytes.count) }
        if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return nil }
        guard n >= 0 else { throw SystemError("write", path: path) }
        return n
    }

    /// Waits up to `timeout` seconds for the descriptor to take more bytes.
    public func waitWritable(timeout: Double) -> Bool {
        var entry = pollfd(fd: raw, events: Int16(POLLOUT), revents: 0)
        return poll(&entry, 1, Int32(max(0, timeout) * 1000)) > 0 && entry.revents & Int16(POLLOUT) != 0
    }

    /// Waits up to `timeout` seconds for the descriptor to become readable.
    public func waitReadable(timeout: Double) -> Bool {
        !Poller.readable([self], timeout: timeout).isEmpty
    }
}
