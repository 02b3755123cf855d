import Glibc
import VaultCore

/// One risk found on this machine, with its fix.
public struct Finding: Sendable, Equatable, Encodable {
    public let check: String
    public let message: String
    public let fix: String
}

/// Checks a machine for the risks of a shared machine. Every input is injectable for tests.
public struct Doctor {
    public var paths: Paths
    public var vaultPath: String
    public var environment: [String: String]
    public var settings: Settings?
    public var procMounts: String
    public var coreDumpsDisabled: Bool
    /// /proc/<parent>/limits: the shell's core-dump limit applies to every other program it starts.
    public var parentLimits: String

    public init(paths: Paths, vaultPath: String, environment: [String: String], settings: Settings?,
                procMounts: String = PlainIO.readText("/proc/mounts") ?? "", coreDumpsDisabled: Bool,
                parentLimits: String = PlainIO.readText("/proc/\(getppid())/limits") ?? "") {
        self.paths = paths
        self.vaultPath = vaultPath
        self.environment = environment
        self.settings = settings
        self.procMounts = procMounts
        self.coreDumpsDisabled = coreDumpsDisabled
        self.parentLimits = parentLimits
    }

    /// The names of every check, in the order they run.
    public static let checks = ["files", "hidepid", "core-dumps", "environment", "shell-startup", "dotenv", "endpoint"]

    public func run() -> [Finding] {
        var findings: [Finding] = []
        findings += fileFindings()
        findings += hidepidFindings()
        findings += coreDumpFindings()
        findings += environmentFindings()
        findings += startupFileFindings()
        findings += dotenvFindings()
        findings += endpointFindings()
        return findings
    }

    // MARK: Files and folders

    func fileFindings() -> [Finding] {
        var findings: [Finding] = []
        let vaultDirectory = VaultStore(path: vaultPath).directory
        let secretFiles = [vaultPath, vaultPath + ".bak", paths.keyFile]
        for path in secretFiles { findings += privateFileFindings(path, allowGroupRead: false) }
        // The config file can name a key_command: whoever can write it can run code as you.
        findings += privateFileFindings(paths.configFile, allowGroupRead: true)
        for directory in [vaultDirectory, paths.configDirectory] {
            var info = stat()
            guard lstat(directory, &info) == 0 else { continue }
            if info.st_uid != geteuid() {
                findings.append(Finding(check: "files", message: "\(directory) is owned by uid \(info.st_uid), not by you",
                                        fix: "sudo chown \(geteuid()) \(FileSecurity.shellQuoted(directory))"))
            }
            if info.st_mode & 0o077 != 0 {
                findings.append(Finding(check: "files", message: "\(directory) is open to group or others (mode \(FileSecurity.octal(UInt32(info.st_mode & 0o777))))",
                                        fix: "chmod 700 \(FileSecurity.shellQuoted(directory))"))
            }
        }
        return findings
    }

    private func privateFileFindings(_ path: String, allowGroupRead: Bool) -> [Finding] {
        var info = stat()
        guard lstat(path, &info) == 0 else { return [] }
        if (info.st_mode & S_IFMT) == S_IFLNK {
            return [Finding(check: "files", message: "\(path) is a symbolic link", fix: "replace the link with the file itself")]
        }
        var findings: [Finding] = []
        if info.st_uid != geteuid() {
            findings.append(Finding(check: "files", message: "\(path) is owned by uid \(info.st_uid), not by you",
                                    fix: "sudo chown \(geteuid()) \(FileSecurity.shellQuoted(path))"))
        }
        let forbidden: UInt32 = allowGroupRead ? 0o022 : 0o077
        if UInt32(info.st_mode) & forbidden != 0 {
            findings.append(Finding(check: "files", message: "\(path) is open to group or others (mode \(FileSecurity.octal(UInt32(info.st_mode & 0o777))))",
                                    fix: "chmod 600 \(FileSecurity.shellQuoted(path))"))
        }
        return findings
    }

    // MARK: Process visibility

    func hidepidFindings() -> [Finding] {
        let procLines = procMounts.split(separator: "\n").filter { $0.split(separator: " ").dropFirst(2).first == "proc" }
        let hidden = procLines.contains { line in
            let options = line.split(separator: " ").dropFirst(3).first ?? ""
            return options.split(separator: ",").contains { $0 == "hidepid=2" || $0 == "hidepid=invisible" || $0 == "hidepid=1" || $0 == "hidepid=noaccess" }
        }
        guard !hidden else { return [] }
        return [Finding(check: "hidepid", message: "other users can read every process's command line in /proc (no hidepid)",
                        fix: "mount -o remount,hidepid=invisible /proc (and add hidepid=invisible to /proc in /etc/fstab); never pass secrets as arguments")]
    }

    // MARK: Core dumps

    func coreDumpFindings() -> [Finding] {
        var findings: [Finding] = []
        if !coreDumpsDisabled {
            findings.append(Finding(check: "core-dumps", message: "gemvault could not disable core dumps for itself",
                                    fix: "run gemvault where setrlimit(RLIMIT_CORE) and prctl(PR_SET_DUMPABLE) are allowed"))
        }
        // "Max core file size   <soft>   <hard>   bytes": a soft limit above 0 lets programs dump.
        if let line = parentLimits.split(separator: "\n").first(where: { $0.hasPrefix("Max core file size") }) {
            let soft = line.dropFirst("Max core file size".count).split(separator: " ").first.map(String.init) ?? "0"
            if soft != "0" {
                findings.append(Finding(check: "core-dumps",
                                        message: "the shell that started gemvault allows core dumps (ulimit -c is \(soft)); another program holding a key, such as a script with GEMINI_API_KEY, could write it to disk",
                                        fix: "add 'ulimit -c 0' to your shell's startup file"))
            }
        }
        return findings
    }

    // MARK: Keys outside the vault

    func environmentFindings() -> [Finding] {
        ["GEMINI_API_KEY", "GOOGLE_API_KEY"].compactMap { name in
            guard let value = environment[name], !value.isEmpty else { return nil }
            return Finding(check: "environment", message: "\(name) is set in this environment; every program you start inherits it",
                           fix: "unset \(name) and store the key with 'gemvault key set'")
        }
    }

    static let keyAssignment = ["GEMINI_API_KEY=", "GOOGLE_API_KEY="]

    func startupFileFindings() -> [Finding] {
        var findings: [Finding] = []
        for name in [".bashrc", ".bash_profile", ".profile", ".zshrc", ".zprofile", ".zshenv"] {
            let path = paths.home + "/" + name
            guard let text = PlainIO.readText(path) else { continue }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let trimmed = line.drop { $0 == " " || $0 == "\t" }
                guard !trimmed.hasPrefix("#") else { continue }
                for variable in Self.keyAssignment where trimmed.contains(variable) {
                    findings.append(Finding(check: "shell-startup", message: "\(path):\(number + 1) sets \(variable.dropLast()) in plain text",
                                            fix: "delete the line, revoke that key, and keep the new one in the vault ('gemvault key set')"))
                }
            }
        }
        return findings
    }

    /// Looks for .env files under $HOME (three levels deep, at most 2,000 folders) naming a key.
    func dotenvFindings() -> [Finding] {
        var findings: [Finding] = []
        var queue: [(String, Int)] = [(paths.home, 0)]
        var visited = 0
        while !queue.isEmpty, visited < 2000 {
            let (directory, depth) = queue.removeFirst()
            visited += 1
            guard let handle = opendir(directory) else { continue }
            defer { closedir(handle) }
            while let entry = readdir(handle) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
                if name == "." || name == ".." { continue }
                let path = directory == "/" ? "/" + name : directory + "/" + name
                if entry.pointee.d_type == UInt8(DT_DIR) {
                    if depth < 3, !name.hasPrefix("."), name != "node_modules" { queue.append((path, depth + 1)) }
                } else if name == ".env" || name.hasPrefix(".env.") {
                    guard let text = PlainIO.readText(path, limit: 65536) else { continue }
                    if Self.keyAssignment.contains(where: { text.contains($0) }) {
                        findings.append(Finding(check: "dotenv", message: "\(path) holds a Gemini API key in plain text",
                                                fix: "remove the key from \(path), revoke it, and keep the new one in the vault"))
                    }
                }
            }
        }
        return findings
    }

    func endpointFindings() -> [Finding] {
        guard let settings, let url = EndpointURL(settings.endpoint), url.scheme != "https" else { return [] }
        let origin = settings["endpoint"].origin.label
        if url.isLoopback {
            return [Finding(check: "endpoint", message: "the endpoint \(settings.endpoint) (from \(origin)) is plain http; any local user who can bind that port sees your key",
                            fix: "use the default https endpoint unless you are testing")]
        }
        return [Finding(check: "endpoint", message: "the endpoint \(settings.endpoint) (from \(origin)) sends your key unencrypted over the network",
                        fix: "set an https endpoint: gemvault config unset endpoint")]
    }
}
