public import AgeFormat
import AgePlugins
public import VaultCore

/// An identity file's text (age's `-i FILE`): age identity lines (X25519, hybrid, a plugin's,
/// with the plugin's `# Recipient:` comment), or an OpenSSH ed25519 private key. The one parser
/// of them, for `-i` and the vault's age slot alike.
public enum IdentityFile {
    /// Why a file's identities cannot be had, naming the file.
    public enum Problem: Error, Equatable, ReportableError {
        case notIdentities(path: String)
        case empty(path: String)
        case sshKeyDamaged(path: String, detail: String)
        case sshKeyUnusable(path: String, detail: String)
        case sshWrongPassphrase(path: String)

        public var report: FailureReport {
            switch self {
            case .notIdentities(let path):
                FailureReport(.usage, "\(path) is neither an age identity file (AGE-SECRET-KEY-1…, AGE-SECRET-KEY-PQ-1… or AGE-PLUGIN-NAME-1… lines) nor an OpenSSH ed25519 private key",
                              hint: Self.generalHint)
            case .empty(let path): FailureReport(.usage, "\(path) holds no identity", hint: Self.generalHint)
            // The key file is what is damaged, not the share.
            case .sshKeyDamaged(let path, let detail): FailureReport(.damaged, "the ssh key \(path) is damaged (\(detail)); nothing was stored")
            case .sshKeyUnusable(let path, let detail): FailureReport(.failure, "the ssh key \(path) cannot be used: \(detail); nothing was stored")
            case .sshWrongPassphrase(let path): FailureReport(.wrongSecret, "wrong passphrase for the ssh key \(path); nothing was stored")
            }
        }

        static let generalHint = "run 'gemvault --help' for the list of commands"
    }

    /// The identities in `text`, read from `path`. A passphrase-protected ssh key gets three tries,
    /// as ssh gives: `sshPassphrase(attempt)` asks for each (attempt 1 to 3), or throws to give up.
    public static func identities(in text: SecretBytes, path: String, sshPassphrase: (Int) throws -> SecretBytes) throws -> [any AgeIdentity] {
        if SSHEd25519Identity.isOpenSSHPrivateKey(text) {
            do {
                return [try openSSHIdentity(text, path: path, sshPassphrase: sshPassphrase)]
            } catch let error as AgeError where error.kind == .header {
                throw Problem.sshKeyDamaged(path: path, detail: error.detail)
            } catch let error as AgeError where error.kind == .unsupported {
                throw Problem.sshKeyUnusable(path: path, detail: error.detail)
            }
        }
        var identities: [any AgeIdentity] = []
        var lineStart = 0
        var namedRecipient: String?
        try text.withUnsafeBytes { raw in
            for index in 0...raw.count where index == raw.count || raw[index] == 10 {
                // Trimmed in place, and only an identity line copied: each secret copy is a guarded
                // mapping (ten system calls), and comments and blank lines hold nothing secret.
                let whole = UnsafeRawBufferPointer(rebasing: raw[lineStart..<index])
                let trimmed = UnsafeRawBufferPointer(rebasing: whole[SecretBytes.trimmedRange(whole)])
                lineStart = index + 1
                let isComment = trimmed.first == UInt8(ascii: "#")
                if isComment { namedRecipient = pluginRecipientComment(trimmed) ?? namedRecipient }
                if trimmed.isEmpty || isComment { continue }
                let line = SecretBytes(copying: trimmed)
                if let plugin = AgePluginIdentity(parsing: line, recipient: namedRecipient) {
                    identities.append(plugin)
                    continue
                }
                guard let identity = IdentityLine.parse(line) else { throw Problem.notIdentities(path: path) }
                identities.append(identity)
            }
        }
        guard !identities.isEmpty else { throw Problem.empty(path: path) }
        return AgePluginUnwrap.forDecryption(identities)
    }

    /// The plugin recipient a comment names (`#    Recipient: age1yubikey1…`, as the plugins write
    /// above an identity): the recipient a share to it lists, so the import knows it was for you.
    private static func pluginRecipientComment(_ line: UnsafeRawBufferPointer) -> String? {
        String(decoding: line, as: UTF8.self).split(separator: " ").lazy.map(String.init).first { AgePluginName.ofRecipient($0) != nil }
    }

    private static func openSSHIdentity(_ text: SecretBytes, path: String, sshPassphrase: (Int) throws -> SecretBytes) throws -> SSHEd25519Identity {
        guard try SSHEd25519Identity.needsPassphrase(text) else { return try SSHEd25519Identity(openSSHPrivateKey: text) }
        for attempt in 1...3 {
            let passphrase = try sshPassphrase(attempt)
            let opened = Result { () throws(AgeError) in try SSHEd25519Identity(openSSHPrivateKey: text, passphrase: passphrase) }
            if case .failure(let error) = opened, error.kind == .wrongPassphrase { continue }
            return try opened.get()
        }
        throw Problem.sshWrongPassphrase(path: path)
    }
}

/// The default identity (age's `-j NAME`) of the plugin of each plugin recipient among `recipients`
/// (the age slots'): a slot sealed to a YubiKey opens with the YubiKey present, no identity file.
public enum AgePluginDefaults {
    public static func identities(for recipients: [String]) -> [any AgeIdentity] {
        var plugins: [String] = []
        for recipient in recipients {
            if let plugin = AgePluginName.ofRecipient(recipient), !plugins.contains(plugin) { plugins.append(plugin) }
        }
        return plugins.compactMap { try? AgePluginIdentity.defaultIdentity(plugin: $0) }
    }
}
