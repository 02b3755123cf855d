import Glibc

/// An open file descriptor, closed when the last reference goes away unless it is borrowed.
///
/// Every read and write retries on EINTR, and writes always write everything.
public final class FileDescriptor: Sendable {
    public let raw: Int32
    /// The path it was opened from, for messages.
    public let path: String
    private let owned: Bool

    public init(owning raw: Int32, path: String) {
        self.raw = raw
        self.path = path
        self.owned = true
    }

    /// A descriptor this object must not close, such as standard input.
    public init(borrowing raw: Int32, path: String) {
        self.raw = raw
        self.path = path
        self.owned = false
    }

    deinit { if owned { close(raw) } }

    public static let standardInput = FileDescriptor(borrowing: STDIN_FILENO, path: "standard input")
    public static let standardOutput = FileDescriptor(borrowing: STDOUT_FILENO, path: "standard output")
    public static let standardError = FileDescriptor(borrowing: STDERR_FILENO, path: "standard error")

    /// Opens `path` with O_CLOEXEC added; nil when it does not exist.
    public static func openIfPresent(_ path: String, flags: Int32, mode: mode_t = 0o600) throws(SystemError) -> FileDescriptor? {
        let fd = retryingOnInterrupt { open(path, flags | O_CLOEXEC, mode) }
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw SystemError("open", path: path)
        }
        return FileDescriptor(owning: fd, path: path)
    }

    /// Reads up to `buffer.count` bytes; 0 means the end.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return 0 }
        let n = retryingOnInterrupt { Glibc.read(raw, base, buffer.count) }
        guard n >= 0 else { throw SystemError("read", path: path) }
        return n
    }

    /// Reads until the end or until `buffer` is full; returns the number of bytes read.
    public func readFully(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> Int {
        var total = 0
        while total < buffer.count {
            let n = try read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[total...]))
            if n == 0 { break }
            total += n
        }
        return total
    }

    /// Everything to the end, refusing more than `limit` bytes.
    public func readAll(limit: Int) throws(ReadFailure) -> [UInt8] {
        var result: [UInt8] = []
        // Read into room left uninitialized, no larger than the limit needs: a zeroed 64 KiB
        // chunk cost 65,000 instructions and sixteen fresh pages a read, three reads a vault opening.
        let chunkSize = limit < 65536 ? limit + 1 : 65536
        while true {
            var failure: SystemError?
            let chunk = [UInt8](unsafeUninitializedCapacity: chunkSize) { buffer, count in
                do throws(SystemError) { count = try read(into: UnsafeMutableRawBufferPointer(buffer)) } catch { failure = error; count = 0 }
            }
            if let failure { throw .failed(failure) }
            if chunk.isEmpty { return result }
            result += chunk
            if result.count > limit { throw .tooLarge(limit: limit) }
        }
    }

    public enum ReadFailure: Error, Equatable {
        case failed(SystemError)
        case tooLarge(limit: Int)
    }

    /// Writes every byte, or throws.
    public func writeAll(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        guard var next = bytes.baseAddress else { return }
        var left = bytes.count
        while left > 0 {
            let n = retryingOnInterrupt { write(raw, next, left) }
            guard n > 0 else { throw SystemError("write", path: path) }
            next += n
            left -= n
        }
    }

    public func writeAll(_ bytes: [UInt8]) throws(SystemError) {
        try bytes.withUnsafeBytes { buffer in Result { () throws(SystemError) in try writeAll(buffer) } }.get()
    }

    public func writeAll(_ text: String) throws(SystemError) {
        try writeAll(Array(text.utf8))
    }

    public func sync() throws(SystemError) {
        guard retryingOnInterrupt({ fsync(raw) }) == 0 else { throw SystemError("fsync", path: path) }
    }

    public func status() throws(SystemError) -> FileStatus {
        var info = stat()
        guard fstat(raw, &info) == 0 else { throw SystemError("fstat", path: path) }
        return FileStatus(info)
    }

    /// Waits for an exclusive flock; it is released when the descriptor closes.
    public func lockExclusively() throws(SystemError) {
        guard retryingOnInterrupt({ flock(raw, LOCK_EX) }) == 0 else { throw SystemError("lock", path: path) }
    }

    /// Replaces the whole content in place (for small records) and makes it durable.
    public func overwrite(_ bytes: [UInt8]) throws(SystemError) {
        let written = bytes.withUnsafeBytes { pwrite(raw, $0.baseAddress, $0.count, 0) }
        guard written == bytes.count, ftruncate(raw, off_t(bytes.count)) == 0 else { throw SystemError("write", path: path) }
        try sync()
    }

    /// Cuts the file to `length` bytes and makes that durable.
    public func truncate(to length: Int) throws(SystemError) {
        guard ftruncate(raw, off_t(length)) == 0 else { throw SystemError("truncate", path: path) }
        try sync()
    }

    /// Reads a regular file from the start, up to `limit` bytes (as many as it has when it
    /// is asked), without moving the offset.
    public func readFromStart(limit: Int) throws(SystemError) -> [UInt8] {
        // Sized by the file, not the limit: a 4 MiB limit on a key's 300-byte meter zeroed
        // 4 MiB, about a fifth of `ask`'s peak memory.
        var buffer = [UInt8](repeating: 0, count: min(limit, max(0, Int(try status().size))))
        let n = buffer.withUnsafeMutableBytes { bytes in retryingOnInterrupt { pread(raw, bytes.baseAddress, bytes.count, 0) } }
        guard n >= 0 else { throw SystemError("read", path: path) }
        return Array(buffer[0..<n])
    }

    /// The last `limit` bytes (all of a shorter file), without moving the offset.
    public func readTail(limit: Int) throws(SystemError) -> [UInt8] {
        let size = Int(try status().size)
        let start = max(0, size - limit)
        var buffer = [UInt8](repeating: 0, count: size - start)
        let n = buffer.withUnsafeMutableBytes { bytes in retryingOnInterrupt { pread(raw, bytes.baseAddress, bytes.count, off_t(start)) } }
        guard n >= 0 else { throw SystemError("read", path: path) }
        return Array(buffer[0..<n])
    }

    /// Clears O_NONBLOCK, set while opening so that a FIFO could not block the open itself.
    func setBlocking() {
        let flags = fcntl(raw, F_GETFL)
        if flags >= 0 { _ = fcntl(raw, F_SETFL, flags & ~O_NONBLOCK) }
    }
}

/// Waiting for several descriptors at once.
public enum Poller {
    /// What a descriptor is watched for.
    public enum Interest: Sendable {
        case read, write
    }

    /// The descriptors that can be read (or have reached their end) within `timeout` seconds.
    public static func readable(_ descriptors: [FileDescriptor], timeout: Double) -> [FileDescriptor] {
        let ready = ready(descriptors.map { ($0, .read) }, timeout: timeout)
        return ready.map { descriptors[$0] }
    }

    /// The indices of the descriptors that are ready for what they are watched for within
    /// `timeout` seconds; a hang-up or error counts as ready, so the next call reports it.
    public static func ready(_ watched: [(FileDescriptor, Interest)], timeout: Double) -> [Int] {
        var fds = watched.map { pollfd(fd: $0.0.raw, events: Int16($0.1 == .read ? POLLIN : POLLOUT), revents: 0) }
        let milliseconds = Int32(min(max(0, timeout) * 1000, Double(Int32.max)).rounded(.up))
        let ready = poll(&fds, nfds_t(fds.count), milliseconds)
        guard ready > 0 else { return [] }
        return fds.indices.filter { fds[$0].revents != 0 }
    }
}
