import Glibc

/// Files a user names as input (`ask -a FILE`): read whole, but only when they are regular
/// files of a bounded size. Opened without blocking (a FIFO cannot stall the open) and checked
/// with fstat on the descriptor that is then read, so nothing can be swapped in between.
public enum InputFile {
    public enum Failure: Error, Equatable, Sendable {
        case notFound(String)
        /// A directory, device, FIFO or socket.
        case notRegular(String, FileStatus.Kind)
        case tooLarge(String, size: Int64, limit: Int)
        case failed(SystemError)
    }

    public static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        let opened: FileDescriptor?
        do { opened = try FileDescriptor.openIfPresent(path, flags: O_RDONLY | O_NONBLOCK | O_NOCTTY) } catch {
            // A socket cannot be opened at all (ENXIO): say what it is rather than the errno.
            if let kind = FileStatus.of(path)?.kind, kind != .regular { throw .notRegular(path, kind) }
            throw .failed(error)
        }
        guard let file = opened else { throw .notFound(path) }
        let status: FileStatus
        do { status = try file.status() } catch { throw .failed(error) }
        guard status.kind == .regular else { throw .notRegular(path, status.kind) }
        guard status.size <= Int64(limit) else { throw .tooLarge(path, size: status.size, limit: limit) }
        do {
            return try file.readAll(limit: limit)
        } catch {
            switch error {
            case .tooLarge: throw .tooLarge(path, size: Int64(limit) + 1, limit: limit)
            case .failed(let system): throw .failed(system)
            }
        }
    }
}
