import GoogleAuth
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// A place an API key can come from, in the order they are consulted.
public enum KeySource: Sendable, Equatable {
    case keyFileFlag(path: String)
    /// A service's systemd credential (`$CREDENTIALS_DIRECTORY/credential_name`).
    case systemdCredential(path: String)
    case environment(variable: String)
    case vault(path: String, name: String)
    case keyFile(path: String)
    case keyCommand(command: String)
    /// `key_secret`: a secret's version, fetched for this command only.
    case secretManager(secret: String, version: UInt64)
    /// No key: a Google identity's access token (`auth` = `google`, Docs/keyless.md).
    case googleIdentity(principal: String, chain: String)

    public var label: String {
        switch self {
        case .keyFileFlag(let path): "--key-file \(path)"
        case .systemdCredential(let path): "systemd credential \(path)"
        case .environment(let variable): "environment variable \(variable)"
        case .vault(let path, let name): "vault \(path), key '\(name)'"
        case .keyFile(let path): "key file \(path)"
        case .keyCommand(let command): "key_command (\(command.split(separator: " ").first ?? ""))"
        case .secretManager(let secret, let version): "Secret Manager \(secret), version \(version) (fetched now, held in memory only)"
        case .googleIdentity(_, let chain): "google: \(chain)"
        }
    }

    public var kind: String {
        switch self {
        case .keyFileFlag: "key-file-flag"
        case .systemdCredential: "systemd-credential"
        case .environment: "environment"
        case .vault: "vault"
        case .keyFile: "key-file"
        case .keyCommand: "key-command"
        case .secretManager: "secret-manager"
        case .googleIdentity: "google"
        }
    }

    /// The name a key has in the spending ledger: its vault name, else where it came from.
    public var ledgerName: String {
        switch self {
        case .vault(_, let name): name
        case .environment(let variable): "$" + variable
        case .keyFile(let path), .keyFileFlag(let path): "file:" + path
        case .systemdCredential(let path): "systemd:" + (path.split(separator: "/").last.map(String.init) ?? path)
        case .keyCommand: "key_command"
        case .secretManager(let secret, _): secret
        case .googleIdentity(let principal, _): "google:" + principal
        }
    }

    /// How to replace a key that came from here.
    public var replaceHint: String {
        switch self {
        case .keyFileFlag(let path), .keyFile(let path): "write the new key into \(path) (mode 0600)"
        case .systemdCredential: "encrypt the new key for the service ('gemvault key export NAME --systemd-creds') and restart it"
        case .environment(let variable): "unset \(variable) or export the new key in it"
        case .vault(_, let name): "run 'gemvault key rotate \(name)' to store the new key"
        case .keyCommand: "update the secret your key_command reads"
        case .secretManager(let secret, _): "add a version with the new key to \(secret) (gcloud secrets versions add)"
        case .googleIdentity: "there is no key to replace: fix the Google credential (Docs/keyless.md)"
        }
    }
}

/// Why no key could be had from the sources.
public enum KeySourceError: Error, Equatable, Sendable {
    /// No key anywhere; `reasons` says what each source lacked, `vaultKeys` names the keys the
    /// vault holds under other names (none was named, so none was chosen).
    case noKey(reasons: [String], vaultKeys: [String] = [])
    /// The vault has a key but no passphrase can be read without a terminal.
    case vaultNeedsPassphrase(path: String)
    case keyCommandFailed(command: String, detail: String, stderr: String)
    case keyFile(VaultError)
    /// A linked key's copy is older than `secret_max_stale` and Secret Manager cannot be reached.
    case secretUnreachable(name: String, secret: String, since: Int64, detail: String)
}

/// The key a source gave is not one header-safe line (`source` is the source's label): its
/// later lines would go out as HTTP headers.
public struct MalformedKeyError: Error, Sendable {
    public let source: String
    public let hint: String
}

/// The key for a request, and where it came from.
public struct ResolvedKey {
    public let secret: SecretBytes
    public let source: KeySource
    /// Unix seconds the key was last set, when known.
    public let updated: Int64?
    /// For a vault key linked to Secret Manager: the link, and whether its copy was used.
    public var linked: (link: SecretLink, fromCache: Bool)?

    init(secret: SecretBytes, source: KeySource, updated: Int64?) {
        self.secret = secret
        self.source = source
        self.updated = updated
    }
}

/// A source that also holds a key but loses to the winner.
public struct ShadowedSource: Sendable, Equatable {
    public let source: KeySource
    public let note: String
}

/// Walks the key sources in order: --key-file, a systemd credential, GOOGLE_API_KEY,
/// GEMINI_API_KEY, the vault, the key file, key_command, key_secret (Secret Manager). The
/// first that has a key wins; `--key NAME` names a vault key, so it skips the credential and
/// the environment.
public struct KeyResolver {
    public var keyFileFlag: String?
    public var environment: [String: String]
    public var paths: Paths
    public var vaultPath: String
    /// `--key NAME` when given: then a missing vault key is an error, not a fall-through.
    public var explicitKeyName: String?
    /// Every settings layer except the vault's, which is added once the vault is open.
    public var layers: SettingLayers
    /// The vault: asked through the unlocked session, or opened with the passphrase when its
    /// turn comes (and only when a passphrase can be had).
    public var vault: VaultAccess
    public var warn: (String) -> Void
    /// Says what happened that the user should know, not a problem (a followed share taken).
    public var note: (String) -> Void
    /// Whether the session's answer also brings the conversation keys (a command that saves
    /// conversations and meters its key); others get only the settings and the key.
    public var conversationKeysFromSession = false

    public init(keyFileFlag: String?, environment: [String: String], paths: Paths, explicitKeyName: String?, layers: SettingLayers,
                vault: VaultAccess, warn: @escaping (String) -> Void, note: @escaping (String) -> Void = { _ in }) {
        self.note = note
        self.keyFileFlag = keyFileFlag
        self.environment = environment
        self.paths = paths
        self.vaultPath = vault.path
        self.explicitKeyName = explicitKeyName
        self.layers = layers
        self.vault = vault
        self.warn = warn
    }

    /// The effective settings, with the vault's layer when `vaultSettings` is given.
    public func settings(vaultSettings: [String: String]? = nil) throws -> Settings {
        var all = layers
        if let vaultSettings { all.vaultSettings = vaultSettings; all.vaultPath = vaultPath }
        return try Settings.resolve(all)
    }

    func keyName(_ settings: Settings) -> String { explicitKeyName ?? settings[.key] }

    /// The key's name as far as it is known before the vault's layer: fixed by `--key`, a flag
    /// or the environment, else the vault's own `key` setting wins when it has one.
    func candidateKeyName(_ withoutVault: Settings) -> (name: String, nameFromSettings: Bool) {
        if let explicitKeyName { return (explicitKeyName, false) }
        switch withoutVault.resolved(.key).origin {
        case .environment, .flag: return (withoutVault[.key], false)
        default: return (withoutVault[.key], true)
        }
    }

    /// The variable the environment step uses, warning once when both are set and differ.
    func environmentKey(warnIfBoth: Bool) -> (variable: String, value: String)? {
        let google = environment["GOOGLE_API_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        let gemini = environment["GEMINI_API_KEY"].flatMap { $0.isEmpty ? nil : $0 }
        if let google {
            if warnIfBoth, let gemini, gemini != google {
                warn("both GOOGLE_API_KEY and GEMINI_API_KEY are set; using GOOGLE_API_KEY")
            }
            return ("GOOGLE_API_KEY", google)
        }
        if let gemini { return ("GEMINI_API_KEY", gemini) }
        return nil
    }

    /// The key and the effective settings (with the vault's layer when the vault was opened).
    /// The key is registered for redaction, so no message can show it.
    public func resolve() throws -> (key: ResolvedKey, settings: Settings) {
        let resolved = try findKey()
        Redaction.register(resolved.key.secret)
        // Every source is trimmed of surrounding white space; what is left must be one header-safe line.
        guard resolved.key.secret.isHeaderSafe else {
            throw MalformedKeyError(source: resolved.key.source.label, hint: resolved.key.source.replaceHint)
        }
        return resolved
    }

    /// A key that follows a share file (`key import --follow`) takes a newer share from it when
    /// the file changed: the new value, said once on stderr; a file that fails a check is
    /// warned about and the stored key is used.
    private func followedShare(of stored: StoredKey) -> SecretBytes? {
        guard let followed = stored.followed, followed.hasChanged else { return nil }
        do {
            switch try vault.syncFollowed(stored.name) {
            case .imported(let key, let serial, let sender):
                note("took serial \(serial) of '\(stored.name)' from \(sender), from the followed \(followed.path)")
                return key
            case .refused(let reason):
                warn("the followed share file of '\(stored.name)' changed but was not taken: \(reason)")
            case .unchanged, .missing:
                break
            }
        } catch {
            warn("could not look at the followed share file of '\(stored.name)' (\(error)); the stored key is used")
        }
        return nil
    }

    /// A key the vault holds, as a request uses it: its Secret Manager link or followed share
    /// taken into account.
    private func vaultKey(_ stored: StoredKey, _ settings: Settings) throws -> ResolvedKey {
        let source = KeySource.vault(path: vaultPath, name: stored.name)
        if let linked = try linkedValue(of: stored, settings) {
            // A new version fetched now is a value set now; the same one keeps its age.
            let updated = linked.secret.isEqual(to: stored.secret) ? stored.updated : linked.link.fetched
            var key = ResolvedKey(secret: linked.secret, source: source, updated: updated)
            key.linked = (linked.link, linked.fromCache)
            return key
        }
        return ResolvedKey(secret: followedShare(of: stored) ?? stored.secret, source: source, updated: stored.updated)
    }

    private func findKey() throws -> (key: ResolvedKey, settings: Settings) {
        var reasons: [String] = []
        var vaultKeys: [String] = []
        var settings = try self.settings()
        let (sessionSettings, sessionKey) = try askSession(settings)
        if let sessionSettings { settings = try self.settings(vaultSettings: sessionSettings) }
        if settings[.auth] == "google" { throw GoogleIdentityWanted(settings: settings) }
        if let path = keyFileFlag {
            return (try readKeyFile(path, source: .keyFileFlag(path: path), required: true)!, settings)
        }
        // Read again: the session's settings may name another credential.
        if explicitKeyName == nil, let path = try SystemdCredential.path(environment: environment, name: settings[.credentialName]) {
            if let key = try SystemdCredential.read(path, warn: warn) {
                return (key, settings)
            }
            reasons.append("there is no systemd credential \(path)")
        }
        if explicitKeyName == nil, let (variable, value) = environmentKey(warnIfBoth: true) {
            let secret = SecretBytes(utf8: value).trimmingWhitespace()
            return (ResolvedKey(secret: secret, source: .environment(variable: variable), updated: nil), settings)
        }
        reasons.append(explicitKeyName == nil ? "GOOGLE_API_KEY and GEMINI_API_KEY are not set" : "--key names a vault key, so the environment is not used")
        if vault.exists {
            if sessionSettings == nil, !vault.canOpen { throw KeySourceError.vaultNeedsPassphrase(path: vaultPath) }
            settings = try self.settings(vaultSettings: try sessionSettings ?? vault.settings())
            if settings[.auth] == "google" { throw GoogleIdentityWanted(settings: settings) }
            let name = keyName(settings)
            // Only the one key travels from a session, which records its use.
            let stored: StoredKey?
            if let sessionKey, sessionKey.name == name { stored = sessionKey.key } else { stored = try vault.key(name, markUsed: true) }
            if let stored { return (try vaultKey(stored, settings), settings) }
            if explicitKeyName != nil { throw VaultError.keyNotFound(name: name) }
            // No key was named anywhere: a vault holding exactly one key uses it.
            if settings.resolved(.key).origin == .builtIn {
                let (only, held) = try vault.soleKey(markUsed: true)
                if let only { return (try vaultKey(only, settings), settings) }
                vaultKeys = held
            } else {
                vaultKeys = try vault.keySummaries().map(\.name)
            }
            reasons.append("the vault \(vaultPath) has no key '\(name)'" + (vaultKeys.isEmpty ? "" : " (it holds " + vaultKeys.map { "'\($0)'" }.joined(separator: ", ") + ")"))
        } else {
            reasons.append("there is no vault at \(vaultPath)")
        }
        if let key = try readKeyFile(paths.keyFile, source: .keyFile(path: paths.keyFile), required: false) {
            return (key, settings)
        }
        reasons.append("there is no key file at \(paths.keyFile)")
        if let key = try keyFromCommand(settings) { return (key, settings) }
        reasons.append("key_command is not set")
        if let key = try SecretManagerKey.fetch(settings, environment: environment, home: paths.home, warn: warn) { return (key, settings) }
        reasons.append("key_secret is not set")
        throw KeySourceError.noKey(reasons: reasons, vaultKeys: vaultKeys)
    }

    /// What an unlocked session answers: the vault's settings, and the key when it may be the
    /// vault's (nil for both without a session).
    private func askSession(_ settings: Settings) throws -> (settings: [String: String]?, key: (name: String, key: StoredKey?)?) {
        // An unlocked session gives the vault's settings to every command, whatever the key's
        // source; when the key may be the vault's, the same request brings it (one round trip).
        let credential = explicitKeyName == nil ? try SystemdCredential.path(environment: environment, name: settings[.credentialName]) : nil
        let hasCredential = credential.map { FileStatus.of(link: $0) != nil } ?? false
        // `auth` = `google` from a flag or the environment, which the vault's own settings cannot
        // override: no key is used, so none is brought from the session.
        let keyless: Bool
        switch settings.resolved(.auth).origin {
        case .flag, .environment: keyless = settings[.auth] == "google"
        default: keyless = false
        }
        let wantsVaultKey = !keyless && keyFileFlag == nil && (explicitKeyName != nil || (environmentKey(warnIfBoth: false) == nil && !hasCredential))
        let sessionKey: (name: String, key: StoredKey?)?
        let sessionSettings: [String: String]?
        if wantsVaultKey {
            let (name, nameFromSettings) = candidateKeyName(settings)
            let answer = try vault.sessionSettingsAndKey(name: name, nameFromSettings: nameFromSettings, conversationKeys: conversationKeysFromSession)
            sessionSettings = answer?.settings
            sessionKey = answer.map { ($0.name, $0.key) }
        } else {
            sessionSettings = try vault.sessionSettings()
            sessionKey = nil
        }
        return (sessionSettings, sessionKey)
    }

    /// The key `key_command` prints, or nil when it is not set.
    private func keyFromCommand(_ settings: Settings) throws -> ResolvedKey? {
        guard let command = settings[.keyCommand], !command.isEmpty else { return nil }
        let secret: SecretBytes
        do {
            secret = try KeyCommand.secret(command, timeout: settings[.keyCommandTimeout], environment: environment)
        } catch {
            throw KeySourceError.keyCommandFailed(command: error.program, detail: error.detail, stderr: error.stderr)
        }
        return ResolvedKey(secret: secret, source: .keyCommand(command: command), updated: nil)
    }

    /// Sources below or beside `winner` that also hold a key (checked without any prompt).
    public func shadowed(by winner: KeySource, settings: Settings) -> [ShadowedSource] {
        var found: [ShadowedSource] = []
        let order = ["key-file-flag", "systemd-credential", "environment", "vault", "key-file", "key-command", "secret-manager"]
        let winnerRank = order.firstIndex(of: winner.kind) ?? 0
        func consider(_ source: KeySource, _ note: String) {
            if source != winner, (order.firstIndex(of: source.kind) ?? 0) >= winnerRank { found.append(ShadowedSource(source: source, note: note)) }
        }
        if explicitKeyName == nil, let path = try? SystemdCredential.path(environment: environment, name: settings[.credentialName]),
           FileStatus.of(link: path) != nil {
            consider(.systemdCredential(path: path), "a systemd credential exists at \(path)")
        }
        let google = environment["GOOGLE_API_KEY"].map { !$0.isEmpty } ?? false
        let gemini = environment["GEMINI_API_KEY"].map { !$0.isEmpty } ?? false
        for (variable, isSet) in [("GOOGLE_API_KEY", google), ("GEMINI_API_KEY", gemini)] where isSet {
            if let name = explicitKeyName, winner.kind == "vault" {
                found.append(ShadowedSource(source: .environment(variable: variable), note: "\(variable) is set (--key \(name) chooses a vault key over it)"))
            } else {
                consider(.environment(variable: variable), "\(variable) is set")
            }
        }
        if vault.exists { consider(.vault(path: vaultPath, name: keyName(settings)), "a vault exists at \(vaultPath)") }
        if FileStatus.of(link: paths.keyFile) != nil { consider(.keyFile(path: paths.keyFile), "a key file exists at \(paths.keyFile)") }
        if let command = settings[.keyCommand], !command.isEmpty { consider(.keyCommand(command: command), "key_command is set") }
        if winner.kind != "secret-manager", let secret = settings[.keySecret], !secret.isEmpty {
            consider(.secretManager(secret: SecretReference(parsing: secret)?.resource ?? secret, version: 0), "key_secret is set (\(secret))")
        }
        return found
    }

    private func readKeyFile(_ path: String, source: KeySource, required: Bool) throws -> ResolvedKey? {
        do {
            guard let (secret, status) = try KeyFile.read(path) else {
                if required { throw ConfigError.unreadable(path: path, reason: "no such file") }
                return nil
            }
            return ResolvedKey(secret: secret, source: source, updated: status.modified)
        } catch let error as VaultError {
            throw KeySourceError.keyFile(error)
        }
    }
}

enum KeyFile {
    /// What a key file or credential may hold: a key is far shorter.
    static let sizeLimit = 8192

    /// A key file's contents, trimmed, and what fstat said of it; nil when there is no file.
    static func read(_ path: String) throws -> (SecretBytes, FileStatus)? {
        let opened: FileDescriptor?
        do { opened = try TrustedFile.openSecret(path) } catch { throw VaultError(error) }
        guard let file = opened else { return nil }
        let key = try Self.key(in: file, path: path) { VaultError.system($0) }
        return (key, try file.status())
    }

    /// The key in an opened file, trimmed: refused when empty, and never cut short (a key behind
    /// 8 KiB of blanks would be read as its first bytes). `readFailure` says how a failed read is told.
    static func key(in file: FileDescriptor, path: String, readFailure: (SystemError) -> any Error) throws -> SecretBytes {
        let buffer = SecretBytes(count: sizeLimit + 1)
        let length: Int
        do { length = try buffer.withUnsafeMutableBytes { raw throws(SystemError) in try file.readFully(into: raw) } }
        catch { throw readFailure(error) }
        guard length <= sizeLimit else {
            throw ConfigError.unreadable(path: path, reason: "the file is larger than \(sizeLimit) bytes; a key is one short line")
        }
        buffer.truncate(to: length)
        let key = buffer.trimmingWhitespace()
        guard key.count > 0 else { throw ConfigError.unreadable(path: path, reason: "the file is empty") }
        return key
    }
}
