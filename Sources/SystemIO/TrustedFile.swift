import CSystemShims
import Glibc

/// The open(2) flags callers outside this module need.
public enum OpenFlags {
    public static let readOnly = O_RDONLY
    public static let readWriteCreate = O_RDWR | O_CREAT
    public static let appendCreate = O_WRONLY | O_APPEND | O_CREAT
    public static let readWriteAppend = O_RDWR | O_APPEND
    /// A new file only: fails when the name exists.
    public static let appendCreateNew = O_WRONLY | O_APPEND | O_CREAT | O_EXCL
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

    /// A secret file given by path (`--key-file`, `--passphrase-file`), with the vault's checks:
    /// the folder walked from `/` (no folder others can write, no link of theirs on the way),
    /// then the file checked on its descriptor. A path to one of this process's own
    /// descriptors (`<(pass show x)`) is taken as it is.
    public static func openSecret(_ path: String) throws(TrustedOpenError) -> FileDescriptor? {
        if let inherited = try inheritedDescriptor(path) { return inherited }
        let (folderPath, name) = TrustedFolder.parent(of: path)
        guard let folder = try TrustedFolder.open(folderPath) else { return nil }
        return try open(name, in: folder, requirement: .secret, flags: OpenFlags.readOnly)
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

    /// A program gemvault runs that the user did not name by path (an age plugin on PATH), opened
    /// (O_PATH) and checked on that descriptor, for `ProcessSpawner.spawn(program:)` to run it,
    /// not whatever holds its name later. Its folder is reached by the checked walk (every folder
    /// the user's or root's, one others can write only if sticky); the program must be a regular
    /// file of the user's or root's that group and others cannot write (`.program`). A symbolic
    /// link is followed only when the user or root owns it, and its target is checked the same
    /// way. Nil when nothing is at `path`.
    public static func openProgram(_ path: String) throws(TrustedOpenError) -> FileDescriptor? {
        var path = path
        for _ in 0..<40 {
            let (folderPath, name) = TrustedFolder.parent(of: path)
            guard let folder = try TrustedFolder.openForSaving(folderPath) else { return nil }
            let fd = retryingOnInterrupt { openat(folder.descriptor.raw, name, GV_O_PATH | O_NOFOLLOW | O_CLOEXEC) }
            guard fd >= 0 else {
                let code = errno
                if code == ENOENT { return nil }
                throw .failed(SystemError("open", path: folder.path(of: name), code: code))
            }
            let program = FileDescriptor(owning: fd, path: folder.path(of: name))
            let status: FileStatus
            do { status = try program.status() } catch { throw .failed(error) }
            guard status.kind == .symbolicLink else {
                if let problem = FileProblem.check(status, .program) { throw .refused(FileCheckFailure(path: program.path, problem: problem)) }
                return program
            }
            guard status.owner == CurrentUser.id || status.owner == 0 else {
                throw .refused(FileCheckFailure(path: program.path, problem: .plantedLink(owner: status.owner)))
            }
            let target = try TrustedFolder.linkTarget(program)
            path = target.hasPrefix("/") ? target : folder.path(of: target)
        }
        throw .failed(SystemError("open", path: path, code: ELOOP))
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

    /// Saves `bytes` as a new private file (0600) at a path the user named (/save): written
    /// to a temp file beside it (O_EXCL | O_NOFOLLOW) and renamed over, so nobody holding the
    /// old file open reads the new text. The folder is reached by the checked walk, so a
    /// folder link another account planted is refused, and so is a folder others can write
    /// to unless it is sticky. A symlink, something not a regular file, or another user's
    /// file at the name is refused.
    public static func savePrivate(_ path: String, _ bytes: [UInt8]) throws(TrustedOpenError) {
        try save(path, bytes, mode: 0o600, replacing: true)
    }

    /// `savePrivate` with the file's mode (`key share -o` writes 0644: the file is encrypted to
    /// its readers). Without `replacing`, an existing name is left alone and the save fails with
    /// EEXIST: the new file is linked in (link(2) never replaces), not renamed over.
    public static func save(_ path: String, _ bytes: [UInt8], mode: mode_t, replacing: Bool) throws(TrustedOpenError) {
        let (folderPath, name) = TrustedFolder.parent(of: path)
        guard let folder = try TrustedFolder.openForSaving(folderPath) else { throw .failed(SystemError("open", path: folderPath, code: ENOENT)) }
        var info = stat()
        if fstatat(folder.descriptor.raw, name, &info, AT_SYMLINK_NOFOLLOW) == 0 {
            let existing = FileStatus(info)
            if existing.kind == .symbolicLink { throw .refused(FileCheckFailure(path: path, problem: .symbolicLink)) }
            if existing.kind != .regular { throw .refused(FileCheckFailure(path: path, problem: .notRegular(existing.kind))) }
            if existing.owner != CurrentUser.id {
                throw .refused(FileCheckFailure(path: path, problem: .foreignOwner(owner: existing.owner, mode: existing.octalMode)))
            }
            if !replacing { throw .failed(SystemError("create", path: path, code: EEXIST)) }
        }
        let setMode = { (temp: String) throws(SystemError) in
            guard fchmodat(folder.descriptor.raw, temp, mode, 0) == 0 else { throw SystemError("chmod", path: folder.path(of: temp)) }
        }
        do {
            if replacing {
                try folder.replace(name, with: bytes, tempPrefix: "." + name + ".tmp.", beforeRename: setMode)
            } else {
                try folder.createNew(name, with: bytes, tempPrefix: "." + name + ".tmp.", beforeLink: setMode)
            }
        } catch {
            throw .failed(error)
        }
    }
}

/// A folder opened once and checked on its descriptor; names inside it are reached with the
/// *at() calls, so a folder swapped after the check cannot redirect them.
public final class TrustedFolder {
    public let path: String
    public let descriptor: FileDescriptor

    fileprivate init(path: String, descriptor: FileDescriptor) {
        self.path = path
        self.descriptor = descriptor
    }

    public func path(of name: String) -> String { path == "/" ? "/" + name : path + "/" + name }

    /// Opens and checks an existing folder; nil when it does not exist.
    ///
    /// The path is walked from `/` one name at a time (`openat`, `O_PATH | O_NOFOLLOW`), so no
    /// folder above can be swapped in between. Every folder on the way must be the user's or
    /// root's, and not writable by others unless sticky (like /tmp); the last one must not be
    /// writable by group or others at all. A symbolic link on the way is followed only when
    /// the user or root owns it: one planted by someone else is refused.
    public static func open(_ path: String) throws(TrustedOpenError) -> TrustedFolder? {
        try walk(path, create: false, purpose: .trusted).map { TrustedFolder(path: path, descriptor: $0.folder) }
    }

    /// Creates the folder and any missing parents (new ones 0700) during the same checked
    /// walk, then returns it.
    public static func create(_ path: String) throws(TrustedOpenError) -> TrustedFolder {
        guard let walked = try walk(path, create: true, purpose: .trusted) else { throw .failed(SystemError("open", path: path, code: ENOENT)) }
        return TrustedFolder(path: path, descriptor: walked.folder)
    }

    /// The folder a file the user names is written to (`/save`): walked as `open` walks, but
    /// the last folder may be shared when it is sticky (like /tmp), where nobody else can
    /// rename or replace what the user puts there.
    public static func openForSaving(_ path: String) throws(TrustedOpenError) -> TrustedFolder? {
        try walk(path, create: false, purpose: .saving).map { TrustedFolder(path: path, descriptor: $0.folder) }
    }

    /// Where a file the user names to be read (an attachment) really is: its folder and its
    /// name there, which is not a symbolic link; nil when nothing is there. The folders may be
    /// anyone's (the file is only read), but a symbolic link on the way, the last name
    /// included, is followed only when nobody else could have put it there: it is the user's
    /// or root's, in a folder that passes the vault's check. `name` is nil when the path
    /// ends at a folder.
    public static func locate(_ path: String) throws(TrustedOpenError) -> (folder: TrustedFolder, name: String?)? {
        guard let walked = try walk(path, create: false, purpose: .reading) else { return nil }
        return (TrustedFolder(path: walked.shown, descriptor: walked.folder), walked.leaf)
    }

    /// Whether others than the user and root could add, rename or remove names in this folder.
    public var isSharedWithOthers: Bool {
        guard let status = try? descriptor.status() else { return true }
        return !(status.owner == CurrentUser.id || status.owner == 0) || status.permissions & 0o022 != 0
    }

    /// What a walk is for, which decides what its folders must be.
    private enum Purpose {
        /// The vault's own files: every folder checked, the last one private.
        case trusted
        /// A file the user saves: as `trusted`, but the last folder may be shared if sticky.
        case saving
        /// A file the user reads: only folders that hold a followed link are checked, and
        /// the last name may be a file.
        case reading
    }

    private struct Walked {
        let folder: FileDescriptor
        let shown: String
        /// The last name, when the walk ended at something not a folder (`reading` only).
        let leaf: String?
    }

    /// A path's names, split on the byte '/' as the kernel does (walking Characters cost
    /// 17,000 instructions a path, and every vault-opening command walks eight).
    private static func components(_ path: String) -> [String] {
        path.utf8.split(separator: UInt8(ascii: "/")).map { String(decoding: $0, as: UTF8.self) }
    }

    private static func walk(_ path: String, create: Bool, purpose: Purpose) throws(TrustedOpenError) -> Walked? {
        var pending = components(try absolute(path))
        var current = try openRoot()
        var shown = ""
        var links = 0
        while !pending.isEmpty {
            let name = pending.removeFirst()
            if name == "." { continue }
            // The folder we are in was checked: an ancestor, writable by others only if sticky.
            if purpose != .reading { try checkAncestor(current, shown: shown.isEmpty ? "/" : shown) }
            var fd = retryingOnInterrupt { openat(current.raw, name, GV_O_PATH | O_NOFOLLOW | O_CLOEXEC) }
            if fd < 0 && errno == ENOENT && create {
                if mkdirat(current.raw, name, 0o700) != 0 && errno != EEXIST {
                    throw .failed(SystemError("mkdir", path: shown + "/" + name))
                }
                fd = retryingOnInterrupt { openat(current.raw, name, GV_O_PATH | O_NOFOLLOW | O_CLOEXEC) }
            }
            guard fd >= 0 else {
                let code = errno
                if code == ENOENT { return nil }
                throw .failed(SystemError("open", path: shown + "/" + name, code: code))
            }
            let next = FileDescriptor(owning: fd, path: name == ".." ? TrustedFolder.parent(of: shown).folder : shown + "/" + name)
            let status: FileStatus
            do { status = try next.status() } catch { throw .failed(error) }
            if status.kind == .symbolicLink {
                // Followed only when nobody else could have put it there or swapped it since.
                if purpose == .reading { try checkAncestor(current, shown: shown.isEmpty ? "/" : shown) }
                guard status.owner == CurrentUser.id || status.owner == 0 else {
                    throw .refused(FileCheckFailure(path: next.path, problem: .plantedLink(owner: status.owner)))
                }
                links += 1
                guard links <= 40 else { throw .failed(SystemError("open", path: path, code: ELOOP)) }
                let text = try linkTarget(next)
                pending = components(text) + pending
                if text.hasPrefix("/") {
                    current = try openRoot()
                    shown = ""
                }
                continue
            }
            guard status.kind == .directory else {
                if purpose == .reading && pending.isEmpty { return Walked(folder: current, shown: shown.isEmpty ? "/" : shown, leaf: name) }
                throw .refused(FileCheckFailure(path: next.path, problem: .folderNotDirectory))
            }
            current = next
            shown = next.path == "/" ? "" : next.path
        }
        switch purpose {
        case .trusted: try checkAncestor(current, shown: path, last: true)
        case .saving: try checkAncestor(current, shown: path, sharedIfSticky: true)
        case .reading: break
        }
        return Walked(folder: current, shown: shown.isEmpty ? "/" : shown, leaf: nil)
    }

    /// `path` from the root: a relative one is taken from the current folder.
    private static func absolute(_ path: String) throws(TrustedOpenError) -> String {
        guard !path.hasPrefix("/") else { return path }
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { throw .failed(SystemError("getcwd", path: path)) }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) + "/" + path
    }

    private static func openRoot() throws(TrustedOpenError) -> FileDescriptor {
        let fd = retryingOnInterrupt { Glibc.open("/", GV_O_PATH | O_DIRECTORY | O_CLOEXEC) }
        guard fd >= 0 else { throw .failed(SystemError("open", path: "/")) }
        return FileDescriptor(owning: fd, path: "/")
    }

    /// Where a symbolic link points, read through its own descriptor: not whatever holds its
    /// name now.
    fileprivate static func linkTarget(_ link: FileDescriptor) throws(TrustedOpenError) -> String {
        var target = [CChar](repeating: 0, count: 4096)
        let length = readlinkat(link.raw, "", &target, target.count - 1)
        guard length > 0 else { throw .failed(SystemError("readlink", path: link.path)) }
        return String(decoding: target[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A folder on the way to a trusted one: the user's or root's, and if others may write to
    /// it, sticky, so they cannot rename or remove what is in it.
    /// With `sharedIfSticky`, also the folder a file is saved to: there group write needs the
    /// sticky bit too.
    private static func checkAncestor(_ folder: FileDescriptor, shown: String, last: Bool = false, sharedIfSticky: Bool = false) throws(TrustedOpenError) {
        let status: FileStatus
        do { status = try folder.status() } catch { throw .failed(error) }
        if last {
            if let problem = FileProblem.checkFolder(status) { throw .refused(FileCheckFailure(path: shown, problem: problem)) }
            return
        }
        guard status.owner == CurrentUser.id || status.owner == 0 else {
            throw .refused(FileCheckFailure(path: shown, problem: .folderForeignOwner(owner: status.owner)))
        }
        if status.permissions & (sharedIfSticky ? 0o022 : 0o002) != 0 && !status.isSticky {
            throw .refused(FileCheckFailure(path: shown, problem: .folderWritableByOthers(mode: status.octalMode)))
        }
    }

    /// The folder that holds `path`. Found in its bytes: every vault access asks, and a path's
    /// separator is a byte (a `/` before a combining mark is one too, to the kernel).
    public static func parent(of path: String) -> (folder: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return (".", path) }
        let folder = slash == path.startIndex ? "/" : String(path[..<slash])
        return (folder, String(path[path.utf8.index(after: slash)...]))
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

    /// Writes `bytes` as a new file `name`: a temp file, fsync, then a hard link to `name`,
    /// which fails with EEXIST rather than replace anything; the temp name is removed either way.
    public func createNew(_ name: String, with bytes: [UInt8], tempPrefix: String,
                          beforeLink: (String) throws(SystemError) -> Void = { _ in }) throws(SystemError) {
        let random = UInt64.random(in: 0...UInt64.max)
        let temp = "\(tempPrefix)\(getpid()).\(String(random, radix: 36))"
        let fd = retryingOnInterrupt { openat(descriptor.raw, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw SystemError("create a temporary file in", path: path) }
        defer { remove(temp) }
        let file = FileDescriptor(owning: fd, path: path(of: temp))
        try file.writeAll(bytes)
        try file.sync()
        try beforeLink(temp)
        try link(temp, to: name)
        sync()
    }

    public func replace(_ name: String, with bytes: [UInt8], tempPrefix: String,
                        beforeRename: (String) throws(SystemError) -> Void = { _ in }) throws(SystemError) {
        try bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) in try replace(name, with: raw, tempPrefix: tempPrefix, beforeRename: beforeRename) }
        }.get()
    }

    /// Writes `bytes` to `name` atomically: a fresh temp file (O_EXCL, 0600), fsync, rename
    /// over the old name, fsync of the folder. On failure the old file is untouched and the
    /// temp file is gone. `beforeRename` runs after the data is durable, before the swap,
    /// with the temp file's name.
    public func replace(_ name: String, with bytes: UnsafeRawBufferPointer, tempPrefix: String,
                        beforeRename: (String) throws(SystemError) -> Void = { _ in }) throws(SystemError) {
        let random = UInt64.random(in: 0...UInt64.max)
        let temp = "\(tempPrefix)\(getpid()).\(String(random, radix: 36))"
        let fd = retryingOnInterrupt { openat(descriptor.raw, temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600) }
        guard fd >= 0 else { throw SystemError("create a temporary file in", path: path) }
        do {
            let file = FileDescriptor(owning: fd, path: path(of: temp))
            try file.writeAll(bytes)
            try file.sync()
            try beforeRename(temp)
            try rename(temp, to: name)
        } catch {
            remove(temp)
            throw error
        }
        sync()
    }
}
