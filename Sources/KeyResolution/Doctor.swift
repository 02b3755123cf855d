import GoogleKeys
import Settings
import SystemIO
import VaultCore

/// One risk found on this machine, with its fix.
public struct Finding: Sendable, Equatable, Encodable {
    public let check: String
    public let message: String
    public let fix: String

    public init(check: String, message: String, fix: String) {
        self.check = check
        self.message = message
        self.fix = fix
    }
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
    /// The vault's keys and their kinds, when a session or a passphrase opened it; nil otherwise.
    public var vaultKeys: [(name: String, kind: GoogleKeyKind, link: SecretLink?)]?
    /// The swap areas (/proc/swaps), and whether the default Argon2id preset's memory can be locked.
    public var swapAreas: [SwapArea]
    public var derivationMemory: DerivationMemory.Lockability

    public init(paths: Paths, vaultPath: String, environment: [String: String], settings: Settings?,
                procMounts: String = PlainFile.readText("/proc/mounts") ?? "", coreDumpsDisabled: Bool,
                parentLimits: String = PlainFile.readText("/proc/\(ProcessIdentity.parent)/limits") ?? "",
                vaultKeys: [(name: String, kind: GoogleKeyKind, link: SecretLink?)]? = nil,
                swapAreas: [SwapArea] = SwapArea.list(procSwaps: PlainFile.readText("/proc/swaps") ?? ""),
                derivationMemory: DerivationMemory.Lockability = DerivationMemory.lockability(bytes: KDFParameters.Preset.moderate.parameters.memLimit)) {
        self.paths = paths
        self.vaultPath = vaultPath
        self.environment = environment
        self.settings = settings
        self.procMounts = procMounts
        self.coreDumpsDisabled = coreDumpsDisabled
        self.parentLimits = parentLimits
        self.vaultKeys = vaultKeys
        self.swapAreas = swapAreas
        self.derivationMemory = derivationMemory
    }

    /// The names of every check, in the order they run.
    public static let checks = ["files", "hidepid", "core-dumps", "swap", "environment", "shell-startup", "dotenv", "vault-keys", "endpoint", "tls", "store"]

    public func run() -> [Finding] {
        var findings: [Finding] = []
        findings += fileFindings()
        findings += hidepidFindings()
        findings += coreDumpFindings()
        findings += swapFindings()
        findings += environmentFindings()
        findings += startupFileFindings()
        findings += dotenvFindings()
        findings += vaultKeyFindings()
        findings += endpointFindings()
        findings += tlsFindings()
        findings += storeFindings()
        return findings
    }

    // MARK: Files and folders

    /// The same rules the commands enforce when they open these files (FileProblem), here
    /// applied without opening anything, plus every world-writable folder above the vault.
    func fileFindings() -> [Finding] {
        var findings: [Finding] = []
        let secretFiles = [vaultPath, vaultPath + ".bak", vaultPath + ".lock", paths.keyFile]
        for path in secretFiles { findings += fileFinding(path, .secret) }
        // The config file can name a key_command: whoever can write it can run code as you.
        findings += fileFinding(paths.configFile, .configuration)
        for directory in [TrustedFolder.parent(of: vaultPath).folder, paths.configDirectory] {
            guard let status = FileStatus.of(directory), let problem = FileProblem.checkFolder(status) else { continue }
            findings.append(Finding(check: "files", message: "\(directory) \(problem.description)", fix: problem.fix(for: directory)))
        }
        findings += ancestorFindings(of: TrustedFolder.parent(of: vaultPath).folder)
        return findings
    }

    private func fileFinding(_ path: String, _ requirement: FileRequirement) -> [Finding] {
        guard let status = FileStatus.of(link: path), let problem = FileProblem.check(status, requirement) else { return [] }
        return [Finding(check: "files", message: "\(path) \(problem.description)", fix: problem.fix(for: path))]
    }

    /// Folders above `folder` that another user owns (they can move it), or that anyone can
    /// write to: another user can plant names there before you create them, or, without the
    /// sticky bit, rename yours.
    func ancestorFindings(of folder: String) -> [Finding] {
        var findings: [Finding] = []
        var current = folder
        while current != "/" && !current.isEmpty {
            current = TrustedFolder.parent(of: current).folder
            guard let status = FileStatus.of(current), status.kind == .directory else { continue }
            if status.owner != CurrentUser.id && status.owner != 0 {
                findings.append(Finding(check: "files", message: "\(current), above the vault, belongs to uid \(status.owner), who can move or replace what is in it",
                                        fix: "keep the vault under folders that only you or root own"))
            }
            guard status.isWorldWritable else { continue }
            let sticky = status.isSticky ? " (sticky, so others cannot rename what you own there, but can take names you have not created yet)" : ", without the sticky bit, so others can rename or replace what is in it"
            findings.append(Finding(check: "files", message: "\(current), above the vault, is writable by everyone\(sticky)",
                                    fix: "keep the vault under a folder only you can write to, such as $XDG_DATA_HOME (--vault or GEMVAULT_VAULT)"))
        }
        return findings
    }

    // MARK: Process visibility

    /// Judged from the mount at /proc itself (the last one listed wins, as mounts stack):
    /// another proc mount elsewhere with hidepid protects nothing.
    func hidepidFindings() -> [Finding] {
        let procMount = procMounts.split(separator: "\n").last { line in
            let fields = line.split(separator: " ")
            return fields.count >= 4 && fields[1] == "/proc" && fields[2] == "proc"
        }
        let options = procMount?.split(separator: " ")[3].split(separator: ",") ?? []
        let hidden = options.contains { ["hidepid=1", "hidepid=2", "hidepid=invisible", "hidepid=noaccess"].contains($0) }
        guard !hidden else { return [] }
        return [Finding(check: "hidepid", message: "other users can read every process's command line in /proc (no hidepid on the /proc mount)",
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

    /// The key variables by name, and any variable whose value holds a Google key by shape.
    func environmentFindings() -> [Finding] {
        environment.keys.sorted().compactMap { name in
            guard let value = environment[name], !value.isEmpty else { return nil }
            let shapes = GoogleKeyShape.keys(in: Array(value.utf8)).map(\.kind)
            guard Self.keyVariables.contains(name) || !shapes.isEmpty else { return nil }
            let kind = shapes.first ?? GoogleKeyShape.kind(of: Array(value.utf8))
            return Finding(check: "environment", message: "\(name) is set in this environment to \(Self.describe(kind)); every program you start inherits it",
                           fix: "unset \(name) and store the key with 'gemvault key set'" + Self.retiredNote(kind))
        }
    }

    /// "an auth key", "a standard API key", "a literal value".
    static func describe(_ kind: GoogleKeyKind) -> String {
        switch kind {
        case .auth: "an auth key"
        case .standard: "a standard API key"
        case .other: "a literal value"
        }
    }

    static func retiredNote(_ kind: GoogleKeyKind) -> String {
        kind.isRetired ? "; Google rejects standard keys since September 2026: create an auth key at https://aistudio.google.com/apikey" : ""
    }

    static let keyVariables = ["GEMINI_API_KEY", "GOOGLE_API_KEY"]

    /// The files that set up a login or a shell: sh, bash (and ~/.bashrc.d), zsh; fish; csh and
    /// tcsh; pam_env's ~/.pam_environment; systemd's environment.d.
    func startupFiles() -> [String] {
        var files = [".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin",
                     ".cshrc", ".tcshrc", ".login", ".pam_environment"].map { paths.home + "/" + $0 }
        func addFolder(_ folder: String, suffix: String) {
            let names = (FolderListing.entries(folder) ?? []).filter { !$0.isDirectory && $0.name.hasSuffix(suffix) }.map(\.name).sorted()
            files += names.map { folder + "/" + $0 }
        }
        addFolder(paths.home + "/.bashrc.d", suffix: "")
        let fish = paths.configHome + "/fish"
        files.append(fish + "/config.fish")
        addFolder(fish + "/conf.d", suffix: ".fish")
        addFolder(paths.configHome + "/environment.d", suffix: ".conf")
        return files
    }

    /// What a line of a start-up or .env file gives away: a literal value assigned to a key
    /// variable ("sets GEMINI_API_KEY to an auth key"), or a Google key by its shape anywhere in
    /// the line, whatever it is called ("holds a standard API key").
    static func plainTextKey(_ line: Substring) -> (what: String, kind: GoogleKeyKind)? {
        let kind = GoogleKeyShape.keys(in: Array(line.utf8)).first?.kind
        if let variable = literalKeyAssignment(line.drop { $0 == " " || $0 == "\t" }) {
            return ("sets \(variable) to \(describe(kind ?? .other))", kind ?? .other)
        }
        guard let kind else { return nil }
        return ("holds \(describe(kind))", kind)
    }

    /// The variable a line sets to a literal key, if it does: `export V=value`, `V="value"`,
    /// `set -gx V value` (fish), `setenv V value` (csh). An empty value, or one made by a
    /// command or another variable (`"$(gemvault key get)"`), is not a key in plain text.
    static func literalKeyAssignment(_ line: Substring) -> String? {
        let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard let first = words.first, !first.hasPrefix("#") else { return nil }
        let variable: Substring
        var value: Substring
        if first == "set" || first == "setenv" {
            let rest = words.dropFirst().drop { $0.hasPrefix("-") }
            guard let name = rest.first else { return nil }
            variable = name
            value = rest.dropFirst().first ?? ""
        } else {
            var rest = words[...]
            if ["export", "declare", "typeset", "local", "readonly"].contains(first) { rest = rest.dropFirst().drop { $0.hasPrefix("-") } }
            guard let assignment = rest.first, let equals = assignment.firstIndex(of: "=") else { return nil }
            variable = assignment[..<equals]
            value = assignment[assignment.index(after: equals)...]
        }
        guard keyVariables.contains(String(variable)) else { return nil }
        value = value.drop { $0 == "\"" || $0 == "'" }
        guard let head = value.first, !"$`#;\"'".contains(head) else { return nil }
        return String(variable)
    }

    func startupFileFindings() -> [Finding] {
        var findings: [Finding] = []
        for path in startupFiles() {
            guard let text = PlainFile.readText(path, realFilesOnly: true) else { continue }
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                guard let (what, kind) = Self.plainTextKey(line) else { continue }
                findings.append(Finding(check: "shell-startup", message: "\(path):\(number + 1) \(what) in plain text",
                                        fix: "delete the line, revoke that key, and keep the new one in the vault ('gemvault key set')" + Self.retiredNote(kind)))
            }
        }
        return findings
    }

    /// Looks for .env and .envrc (direnv) files under $HOME (three levels deep, at most 2,000
    /// folders) holding a key.
    func dotenvFindings() -> [Finding] {
        var findings: [Finding] = []
        var queue: [(String, Int)] = [(paths.home, 0)]
        var visited = 0
        while !queue.isEmpty, visited < 2000 {
            let (directory, depth) = queue.removeFirst()
            visited += 1
            for entry in FolderListing.entries(directory) ?? [] {
                let name = entry.name
                let path = directory == "/" ? "/" + name : directory + "/" + name
                if entry.isDirectory {
                    if depth < 3, name != "node_modules", name != ".git" { queue.append((path, depth + 1)) }
                } else if name == ".env" || name.hasPrefix(".env.") || name == ".envrc" {
                    // PlainFile skips FIFOs and anything else that is not a regular file.
                    guard let text = PlainFile.readText(path, limit: 65536, followLinks: false, realFilesOnly: true) else { continue }
                    for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                        guard let (what, kind) = Self.plainTextKey(line) else { continue }
                        findings.append(Finding(check: "dotenv", message: "\(path):\(number + 1) \(what) in plain text",
                                                fix: "remove the key from \(path), revoke it, and keep the new one in the vault" + Self.retiredNote(kind)))
                    }
                }
            }
        }
        return findings
    }

    /// Standard keys stored in the vault: they no longer work with Gemini.
    func vaultKeyFindings() -> [Finding] {
        (vaultKeys ?? []).filter { $0.kind.isRetired }.map { key in
            Finding(check: "vault-keys", message: "the vault's key '\(key.name)' is a standard API key, which Google rejects for the Gemini API since September 2026",
                    fix: "create an auth key at https://aistudio.google.com/apikey and run 'gemvault key rotate \(key.name)'")
        } + staleLinkFindings()
    }

    /// Keys linked to Secret Manager whose copy is older than `secret_max_stale`: the next use
    /// fails unless Secret Manager answers.
    func staleLinkFindings() -> [Finding] {
        let limit = settings?[.secretMaxStale] ?? Setting.secretMaxStale.defaultValue
        return (vaultKeys ?? []).compactMap { key in
            guard let link = key.link, Double(Clock.now() - link.fetched) > limit else { return nil }
            return Finding(check: "vault-keys", message: "the vault's key '\(key.name)' comes from Secret Manager (\(link.reference)), and its copy was last fetched more than secret_max_stale ago: it is used only once Secret Manager answers again",
                           fix: "check the network and the Google credentials, then run 'gemvault key get \(key.name) > /dev/null' to fetch it")
        }
    }

    static let proxyVariables = ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"]

    func endpointFindings() -> [Finding] {
        // The Gemini endpoint carries the key (below); the others carry access tokens.
        let findings = (settings?.all ?? []).filter { $0.name != Setting<String>.endpoint.name && SettingsSchema.spec(named: $0.name)?.isEndpoint == true }
            .compactMap { setting -> Finding? in
                guard let value = setting.value, let url = EndpointURL(value), !url.isSecure else { return nil }
                return Finding(check: "endpoint", message: "\(setting.name) is \(value) (from \(setting.origin.label)), plain http off loopback: an access token would travel unencrypted, so the commands that use it refuse it",
                               fix: "gemvault config unset \(setting.name), or set an https URL")
            }
        return findings + customEndpointFindings() + geminiEndpointFindings()
    }

    /// Endpoints that receive the machine's Google access token at a host neither Google's nor
    /// loopback: listed, with whether the commands take them (only from the vault or a flag).
    func customEndpointFindings() -> [Finding] {
        [Setting<String>.apikeysEndpoint, .secretmanagerEndpoint].compactMap { setting -> Finding? in
            guard let settings, let url = EndpointURL(settings[setting]), url.isSecure, url.isCustom else { return nil }
            let origin = settings.resolved(setting).origin
            let taken = origin.kind == "vault" ? "the commands that use it send the machine's Google access token there"
                                               : "the commands that use it refuse it from there (only the vault or the command's flag may name a host that is not Google's)"
            return Finding(check: "endpoint", message: "\(setting.name) is \(settings[setting]) (from \(origin.label)), not Google's: \(taken)",
                           fix: "gemvault config unset \(setting.name)\(origin.kind == "vault" ? "" : ", or remove it from \(origin.label)"), unless you run that service")
        }
    }

    func geminiEndpointFindings() -> [Finding] {
        guard let settings, let url = EndpointURL(settings[.endpoint]), url.scheme != "https" else { return [] }
        let origin = settings.resolved(.endpoint).origin.label
        var findings: [Finding] = []
        if url.isLoopback {
            findings.append(Finding(check: "endpoint", message: "the endpoint \(settings[.endpoint]) (from \(origin)) is plain http; any local user who can bind that port sees your key",
                                    fix: "use the default https endpoint unless you are testing"))
        } else {
            findings.append(Finding(check: "endpoint", message: "the endpoint \(settings[.endpoint]) (from \(origin)) sends your key unencrypted over the network",
                                    fix: "set an https endpoint: gemvault config unset endpoint"))
        }
        for variable in Self.proxyVariables where !(environment[variable] ?? "").isEmpty {
            let use = url.isLoopback ? "gemvault never sends a loopback endpoint through a proxy, but other tools given this endpoint would hand the key to the proxy in clear"
                                     : "the key would pass through the proxy in clear"
            findings.append(Finding(check: "endpoint", message: "\(variable) is set while the endpoint is plain http: \(use)",
                                    fix: "unset \(variable), or use an https endpoint"))
        }
        return findings
    }

    /// `store` on: requests tell Google to keep them (its logs and datasets, Docs/security.md).
    func storeFindings() -> [Finding] {
        guard let settings, settings[.store] else { return [] }
        let origin = settings.resolved(.store).origin
        return [Finding(check: "store", message: "store is on (from \(origin.label)): every chat and ask request tells Google to keep it, prompt, reply and earlier turns, in its logs",
                        fix: "gemvault config unset store" + (origin.kind == "vault" ? "" : ", or remove it from \(origin.label)"))]
    }

    /// SSLKEYLOGFILE makes TLS libraries write session secrets to a file.
    func tlsFindings() -> [Finding] {
        guard let file = environment["SSLKEYLOGFILE"], !file.isEmpty else { return [] }
        return [Finding(check: "tls", message: "SSLKEYLOGFILE is set (\(file)): programs that honour it write TLS session secrets there, so anyone who reads it can decrypt captured traffic, key included; gemvault ignores it",
                        fix: "unset SSLKEYLOGFILE unless you are debugging TLS right now")]
    }
}
