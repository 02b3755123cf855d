import CSystemShims
import Glibc

/// Unix stream sockets with peer credentials, for the session agent.
public enum UnixSocket {
    /// Who is at the other end of a connected socket.
    public struct Peer: Sendable, Equatable {
        public let pid: Int32
        public let uid: UInt32
    }

    public static func listen(_ path: String) throws(SystemError) -> FileDescriptor {
        let fd = gv_unix_listen(path)
        guard fd >= 0 else { throw SystemError("listen on", path: path) }
        return FileDescriptor(owning: fd, path: path)
    }

    public static func connect(_ path: String) throws(SystemError) -> FileDescriptor {
        let fd = gv_unix_connect(path)
        guard fd >= 0 else { throw SystemError("connect to", path: path) }
        return FileDescriptor(owning: fd, path: path)
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
