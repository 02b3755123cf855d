/// What gemvault requires of a file or folder it trusts, checked on an open descriptor.
public enum FileRequirement: Sendable {
    /// Holds a secret: a regular file of the user's, with no access for group or others.
    case secret
    /// Steers what gemvault runs or where it sends the key (config.json): a regular file of the
    /// user's that group and others cannot write. It may stay readable.
    case configuration
    /// A program gemvault runs that the user did not name by path (an age plugin found on PATH):
    /// a regular file of the user's or root's that group and others cannot write.
    case program
}

/// Why a file or folder was refused.
public enum FileProblem: Equatable, Sendable {
    case symbolicLink
    /// A link owned by neither the user nor root: another account may have planted it.
    case plantedLink(owner: UInt32)
    /// A second name of a file of the user's, in a folder others can write to.
    case extraHardLink(links: UInt64)
    case notRegular(FileStatus.Kind)
    case foreignOwner(owner: UInt32, mode: String)
    /// A program owned by neither the user nor root: another account could change what runs.
    case programForeignOwner(owner: UInt32)
    case openToOthers(mode: String)
    case writableByOthers(mode: String)
    case folderNotDirectory
    case folderForeignOwner(owner: UInt32)
    case folderWritableByOthers(mode: String)
    /// For the agent's socket folder, which must be 0700.
    case folderOpenToOthers(mode: String)

    /// Completes "refusing PATH: it …".
    public var description: String {
        switch self {
        case .symbolicLink: "is a symbolic link"
        case .plantedLink(let owner): "is a symbolic link owned by uid \(owner), not by you (uid \(CurrentUser.id)) or root, so another account may have planted it"
        case .extraHardLink(let links): "is one of \(links) names of a file of yours, in a folder others can write to, so another account may have linked it there"
        case .notRegular(let kind): "is \(kind.description), not a regular file"
        case .foreignOwner(let owner, _): "is owned by uid \(owner), not by you (uid \(CurrentUser.id))"
        case .programForeignOwner(let owner): "is a program owned by uid \(owner), not by you (uid \(CurrentUser.id)) or root, so another account could change what runs"
        case .openToOthers(let mode): "is readable or writable by group or others (mode \(mode))"
        case .writableByOthers(let mode): "is writable by group or others (mode \(mode))"
        case .folderNotDirectory: "is not a directory"
        case .folderForeignOwner(let owner): "is a folder owned by uid \(owner), not by you (uid \(CurrentUser.id)) or root"
        case .folderWritableByOthers(let mode): "is a folder that group or others can write to (mode \(mode)), so they could swap files in it"
        case .folderOpenToOthers(let mode): "is a folder open to group or others (mode \(mode)); it must be 0700"
        }
    }

    /// What the user can do about it. Never a chmod or chown on something the user does not own.
    public func fix(for path: String) -> String {
        let quoted = ShellQuote.quote(path)
        switch self {
        case .symbolicLink:
            return "point gemvault at a regular file of your own, not at a link"
        case .plantedLink, .extraHardLink:
            return "name the file by its real path in a folder of your own; gemvault never follows what another account could have put there"
        case .notRegular:
            return "point gemvault at a regular file of your own"
        case .foreignOwner:
            return "use a file of your own: gemvault never trusts a file that another user owns"
        case .programForeignOwner:
            return "install the program where only you or root can change it (such as ~/.local/bin, or /usr/local/bin as root)"
        case .openToOthers where ProcessIdentity.isPersonal(path):
            return "chmod 600 \(quoted)"
        case .writableByOthers where ProcessIdentity.isPersonal(path):
            return "chmod go-w \(quoted)"
        case .openToOthers, .writableByOthers:
            // Root owns every system file; changing /etc/passwd would break the machine.
            return "use a private file of your own (mode 0600) instead; this one is not yours to change"
        case .folderNotDirectory, .folderForeignOwner:
            return "keep the file in a folder of your own, such as one made with: mkdir -m 700 DIR"
        case .folderWritableByOthers:
            return "chmod go-w \(quoted), or move the file into a folder of your own (mkdir -m 700 DIR)"
        case .folderOpenToOthers:
            return "chmod 700 \(quoted)"
        }
    }

    /// Problems of a file against a requirement; the first one wins.
    public static func check(_ status: FileStatus, _ requirement: FileRequirement) -> FileProblem? {
        if status.kind == .symbolicLink { return .symbolicLink }
        guard status.kind == .regular else { return .notRegular(status.kind) }
        if requirement == .program, status.owner != CurrentUser.id, status.owner != 0 { return .programForeignOwner(owner: status.owner) }
        guard status.owner == CurrentUser.id || requirement == .program else { return .foreignOwner(owner: status.owner, mode: status.octalMode) }
        switch requirement {
        case .secret where status.permissions & 0o077 != 0: return .openToOthers(mode: status.octalMode)
        case .configuration where status.permissions & 0o022 != 0, .program where status.permissions & 0o022 != 0:
            return .writableByOthers(mode: status.octalMode)
        default: return nil
        }
    }

    /// Problems of a folder that holds trusted files: another user must not be able to
    /// create, rename or delete names in it. Root's own folders are trusted.
    public static func checkFolder(_ status: FileStatus) -> FileProblem? {
        guard status.kind == .directory else { return .folderNotDirectory }
        guard status.owner == CurrentUser.id || status.owner == 0 else { return .folderForeignOwner(owner: status.owner) }
        if status.permissions & 0o022 != 0 { return .folderWritableByOthers(mode: status.octalMode) }
        return nil
    }
}

/// A refused file or folder.
public struct FileCheckFailure: Error, Equatable, Sendable {
    public let path: String
    public let problem: FileProblem

    public init(path: String, problem: FileProblem) {
        self.path = path
        self.problem = problem
    }

    public var message: String { "refusing to use \(path): it \(problem.description)" }
    public var fix: String { problem.fix(for: path) }
}

/// Quotes a path or a word for a shell command that the user may paste.
public enum ShellQuote {
    /// `path` (or any text) as one word a POSIX shell reads as it is: plain when it holds only
    /// safe characters (never `~` or `*`, which a shell expands, nor a leading `=`, which zsh
    /// expands to a command's path), else single-quoted.
    public static func quote(_ path: String) -> String {
        let safe = !path.isEmpty && !path.hasPrefix("=") && path.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || "0123456789/._-+:=@,%".unicodeScalars.contains($0))
        }
        return safe ? path : "'" + path.split(separator: "'", omittingEmptySubsequences: false).joined(separator: "'\\''") + "'"
    }
}
