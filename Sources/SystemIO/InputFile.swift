import Glibc

/// Files a user names as input (`ask -a FILE`): read whole, but only when they are regular
/// files of a bounded size. The path is walked as the vault's is (`TrustedFolder.locate`), so a
/// symbolic link another account planted, on the way or as the file itself, is refused rather
/// than followed to one of the user's own secrets. The file is opened without following a link
/// and without blocking (a FIFO cannot stall the open), and checked with fstat on the
/// descriptor that is then read, so nothing can be swapped in between.
public enum InputFile {
    public enum Failure: Error, Equatable, Sendable {
        case notFound(String)
        /// A directory, device, FIFO or socket.
        case notRegular(String, FileStatus.Kind)
        case tooLarge(String, size: Int64, limit: Int)
        /// A link or a second name someone else could have put there.
        case refused(FileCheckFailure)
        case failed(SystemError)
    }

    /// The bytes, and what fstat said about the file they came from.
    public struct Contents: Sendable {
        public let bytes: [UInt8]
        public let status: FileStatus
    }

    public static func read(_ path: String, limit: Int) throws(Failure) -> [UInt8] {
        try readWithStatus(path, limit: limit).bytes
    }

    public static func readWithStatus(_ path: String, limit: Int) throws(Failure) -> Contents {
        let file = try open(path)
        let status: FileStatus
        do { status = try file.status() } catch { throw .failed(error) }
        guard status.kind == .regular else { throw .notRegular(path, status.kind) }
        guard status.size <= Int64(limit) else { throw .tooLarge(path, size: status.size, limit: limit) }
        do {
            return Contents(bytes: try file.readAll(limit: limit), status: status)
        } catch {
            switch error {
            case .tooLarge: throw .tooLarge(path, size: Int64(limit) + 1, limit: limit)
            case .failed(let system): throw .failed(system)
            }
        }
    }

    /// One of this process's own descriptors (`<(cmd)`, `/dev/stdin`) is the user's own: opened
    /// as named. Anything else through the checked walk.
    private static func open(_ path: String) throws(Failure) -> FileDescriptor {
        let flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC
        if path == "/dev/stdin" || path.hasPrefix("/dev/fd/") || path.hasPrefix("/proc/self/fd/") {
            let fd = retryingOnInterrupt { Glibc.open(path, flags) }
            guard fd >= 0 else {
                let code = errno
                if code == ENOENT { throw .notFound(path) }
                throw .failed(SystemError("open", path: path, code: code))
            }
            return FileDescriptor(owning: fd, path: path)
        }
        let located: (folder: TrustedFolder, name: String?)?
        do { located = try TrustedFolder.locate(path) } catch {
            switch error {
            case .refused(let failure): throw .refused(failure)
            case .failed(let system): throw .failed(system)
            }
        }
        guard let located else { throw .notFound(path) }
        let folder = located.folder
        guard let name = located.name else { throw .notRegular(path, .directory) }
        let fd = retryingOnInterrupt { openat(folder.descriptor.raw, name, flags | O_NOFOLLOW) }
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw .notFound(path) }
            // Swapped for a link since the walk.
            if code == ELOOP { throw .refused(FileCheckFailure(path: path, problem: .symbolicLink)) }
            // A socket cannot be opened at all (ENXIO): say what it is rather than the errno.
            var info = stat()
            if fstatat(folder.descriptor.raw, name, &info, AT_SYMLINK_NOFOLLOW) == 0, FileStatus(info).kind != .regular {
                throw .notRegular(path, FileStatus(info).kind)
            }
            throw .failed(SystemError("open", path: path, code: code))
        }
        let file = FileDescriptor(owning: fd, path: path)
        // A second name of one of the user's files, where others can add names: it may have
        // been linked there by them (when protected_hardlinks is off) to have it sent.
        if let status = try? file.status(), status.kind == .regular, status.owner == CurrentUser.id,
           status.linkCount > 1, folder.isSharedWithOthers {
            throw .refused(FileCheckFailure(path: path, problem: .extraHardLink(links: status.linkCount)))
        }
        return file
    }
}

extension InputFile.Failure {
    /// What went wrong, for a message that names the file itself.
    public var reason: String {
        switch self {
        case .notFound: "no such file"
        case .notRegular(_, let kind): "it is \(kind.description), not a regular file"
        case .tooLarge(_, let size, let limit): "it has \(size) bytes, more than the \(limit) bytes it may have"
        case .refused(let failure): "\(failure.path) \(failure.problem.description)"
        case .failed(let system): system.reason
        }
    }
}
