public import AgeFormat
public import VaultCore

/// Identities `AGE-PLUGIN-NAME-1…` handled by the plugin `age-plugin-NAME` (identity-v1): all of
/// them sent in one run, with every stanza of the file, and the plugin answers with the file key.
public struct AgePluginIdentity: AgeIdentity {
    /// NAME, lowercase.
    public let plugin: String
    /// The identity lines, in secret memory (a plugin identity may hold key material).
    let identities: [SecretBytes]
    /// The recipients the identities are for, when their file says (`# Recipient: age1NAME1…`).
    public let recipientTexts: [String]
    let context: AgePluginContext

    /// The first identity's recipient; empty when its file does not say.
    public var recipientText: String { recipientTexts.first ?? "" }

    /// Parses `AGE-PLUGIN-NAME-1…`; nil for anything else. `recipient` is the recipient its file names, if any.
    /// Without a `context`, this process's (read only for a plugin identity).
    public init?(parsing line: SecretBytes, recipient: String? = nil, context: AgePluginContext? = nil) {
        guard let plugin = AgePluginName.ofIdentity(line) else { return nil }
        self.plugin = plugin
        identities = [line]
        recipientTexts = [recipient.flatMap { AgePluginName.ofRecipient($0) == plugin ? $0.lowercased() : nil } ?? ""]
        self.context = context ?? .process
    }

    fileprivate init(plugin: String, identities: [SecretBytes], recipientTexts: [String], context: AgePluginContext) {
        self.plugin = plugin
        self.identities = identities
        self.recipientTexts = recipientTexts
        self.context = context
    }

    /// The plugin's default identity (age's `-j NAME`): the plugin finds its key with no identity
    /// file, as a slot sealed to a YubiKey is opened with the YubiKey present.
    public static func defaultIdentity(plugin name: String, context: AgePluginContext? = nil) throws(AgeError) -> AgePluginIdentity {
        guard AgePluginName.isValid(name), let identity = AgePluginIdentity(parsing: AgePluginName.defaultIdentity(name), context: context) else {
            throw AgeError(.plugin, "'\(name)' is not a plugin name (letters, digits, '-', '_', '.', '+')")
        }
        return identity
    }

    public var program: String { AgePluginName.program(plugin) }

    /// identity-v1: phase 1 sends the identities and every stanza as file 0; phase 2 answers the
    /// plugin until it is done. Nil when the plugin unwraps nothing and reports no error.
    public func unwrap(_ stanzas: [AgeStanza]) throws(AgeError) -> SecretBytes? {
        let process = try PluginProcess(plugin: plugin, stateMachine: "identity-v1", environment: context.environment, limits: context.limits)
        defer { process.close() }
        for identity in identities { try process.sendIdentity(identity) }
        for stanza in stanzas {
            try process.send("recipient-stanza", ["0", stanza.type] + stanza.arguments, body: stanza.body)
        }
        try process.send("done")
        var fileKey: SecretBytes?
        let errors = try PluginConversation.run(process, user: context.user, foreign: PluginConversation.recipientOnly) { (command) throws(AgeError) in
            guard command.arguments == ["0"], command.body.count == 16 else {
                throw process.failure("sent a file-key that is not one 16-byte key for the file it was given")
            }
            guard fileKey == nil else { throw process.failure("sent two file keys for one file") }
            fileKey = command.body.withUnsafeBytes { SecretBytes(copying: $0) }
            try process.send("ok")
        }
        if let fileKey { return fileKey }
        guard errors.isEmpty else { throw process.failure("could not unwrap the file key: " + errors.joined(separator: "; ")) }
        return nil
    }
}

/// Opening an age file whose identities may be plugins', for whoever holds no identity file but
/// the hardware: the vault's age unlock slot among them.
public enum AgePluginUnwrap {
    /// The plaintext of `file` (an age file, binary or armored), opened by the first of
    /// `identities` that matches, then by the default identity (age's `-j NAME`) of the plugin of
    /// each `age1NAME1…` among `recipients`: a file sealed to a YubiKey recipient opens with the
    /// YubiKey present and no identity file. Native recipients in `recipients` add nothing.
    public static func decrypt(_ file: [UInt8], identities: [any AgeIdentity], recipients: [String] = [],
                               context: AgePluginContext? = nil) throws(AgeError) -> SecretBytes {
        var all = identities
        var plugins: [String] = []
        for recipient in recipients {
            guard let plugin = AgePluginName.ofRecipient(recipient), !plugins.contains(plugin) else { continue }
            plugins.append(plugin)
            all.append(try AgePluginIdentity.defaultIdentity(plugin: plugin, context: context))
        }
        guard !all.isEmpty else { throw AgeError(.noMatch, "no identity was given, and no recipient is a plugin's") }
        return try AgeFile.decrypt(file, with: forDecryption(all))
    }

    /// `identities` as a file is best tried with them: the native ones first (a file for one
    /// opens without starting a plugin, which may ask for a touch or a PIN), then one identity per
    /// plugin holding all of its lines, so each plugin runs once and chooses among them itself.
    public static func forDecryption(_ identities: [any AgeIdentity]) -> [any AgeIdentity] {
        var plugins: [AgePluginIdentity] = []
        for case let identity as AgePluginIdentity in identities {
            if let index = plugins.firstIndex(where: { $0.plugin == identity.plugin }) {
                let known = plugins[index]
                plugins[index] = AgePluginIdentity(plugin: known.plugin, identities: known.identities + identity.identities,
                                                   recipientTexts: known.recipientTexts + identity.recipientTexts, context: known.context)
            } else {
                plugins.append(identity)
            }
        }
        return identities.filter { !($0 is AgePluginIdentity) } + plugins
    }

    /// The recipients `identities` are for, as far as they say: a plugin identity may stand for several.
    public static func recipients(of identities: [any AgeIdentity]) -> [String] {
        identities.flatMap { ($0 as? AgePluginIdentity)?.recipientTexts ?? [$0.recipientText] }.filter { !$0.isEmpty }
    }
}
