public import AgeFormat
import Synchronization
import SystemIO
public import VaultCore

/// A recipient `age1NAME1…` handled by the plugin
/// `age-plugin-NAME` (recipient-v1): all of one plugin's recipients in a file are wrapped in one run of it.
public struct AgePluginRecipient: AgeBatchRecipient, Equatable {
    /// The recipient in lowercase, as age writes it.
    public let text: String
    /// NAME, lowercase.
    public let plugin: String
    let context: AgePluginContext
    private let seenLabels: LabelMemory

    /// Parses `age1NAME1…` for a plugin NAME; nil for a native `age1…` or anything else.
    /// Without a `context`, this process's (read only for a plugin recipient).
    public init?(parsing text: String, context: AgePluginContext? = nil) {
        guard let plugin = AgePluginName.ofRecipient(text) else { return nil }
        self.text = text.lowercased()
        self.plugin = plugin
        self.context = context ?? .process
        seenLabels = LabelMemory()
    }

    public static func == (left: AgePluginRecipient, right: AgePluginRecipient) -> Bool { left.text == right.text }

    public var batchKey: String { AgePluginName.program(plugin) }

    /// True once the plugin has labelled its stanzas `postquantum` (age-plugin.md's labels): what
    /// a plugin's key is, only the plugin says, and it says so when it wraps.
    public var isPostQuantum: Bool { seenLabels.labels.withLock { $0.contains("postquantum") } }

    public func wrap(_ fileKey: SecretBytes) throws(AgeError) -> AgeStanza {
        let wrapped = try wrap(fileKey, together: [self])
        guard wrapped.stanzas.count == 1 else { throw AgeError(.plugin, "the age plugin \(batchKey) returned \(wrapped.stanzas.count) stanzas for one recipient") }
        return wrapped.stanzas[0]
    }

    /// recipient-v1: phase 1 names the recipients and the one file key (and says gemvault takes
    /// labels); phase 2 answers the plugin until it is done.
    public func wrap(_ fileKey: SecretBytes, together recipients: [any AgeBatchRecipient]) throws(AgeError) -> (stanzas: [AgeStanza], labels: Set<String>) {
        let members = recipients.compactMap { $0 as? AgePluginRecipient }
        guard members.count == recipients.count, members.allSatisfy({ $0.plugin == plugin }) else {
            throw AgeError(.plugin, "recipients of different plugins cannot be wrapped together")
        }
        let process = try PluginProcess(plugin: plugin, stateMachine: "recipient-v1", environment: context.environment, limits: context.limits)
        defer { process.close() }
        for member in members { try process.send("add-recipient", [member.text]) }
        try fileKey.withUnsafeBytes { (raw) throws(AgeError) in try process.send("wrap-file-key", body: raw) }
        try process.send("extension-labels")
        try process.send("done")
        var stanzas: [AgeStanza] = []
        var labels: Set<String>?
        let errors = try PluginConversation.run(process, user: context.user, foreign: PluginConversation.identityOnly) { (command) throws(AgeError) in
            if command.type == "labels" {
                guard labels == nil, Set(command.arguments).count == command.arguments.count else { throw process.failure("sent labels twice, or a label twice") }
                labels = Set(command.arguments)
            } else {
                guard command.arguments.count >= 2, command.arguments[0] == "0" else {
                    throw process.failure("sent a recipient-stanza for a file key it was not given")
                }
                stanzas.append(AgeStanza(type: command.arguments[1], arguments: Array(command.arguments.dropFirst(2)), body: command.body))
            }
            try process.send("ok")
        }
        guard errors.isEmpty else { throw process.failure("could not wrap to the recipients: " + errors.joined(separator: "; ")) }
        guard stanzas.count >= members.count else {
            throw process.failure("returned \(stanzas.count) stanza\(stanzas.count == 1 ? "" : "s") for \(members.count) recipient\(members.count == 1 ? "" : "s")")
        }
        seenLabels.labels.withLock { $0 = labels ?? [] }
        return (stanzas, labels ?? [])
    }
}

/// What a plugin run needs from the process: the environment it runs in (PATH finds it), who
/// answers its requests, and its bounds.
public struct AgePluginContext: Sendable {
    public let environment: [String: String]
    public let user: any AgePluginUser
    public let limits: AgePluginLimits

    public init(environment: [String: String], user: any AgePluginUser = TerminalPluginUser(), limits: AgePluginLimits? = nil) {
        self.environment = HelperEnvironment.of(environment)
        self.user = user
        self.limits = limits ?? AgePluginLimits.from(environment)
    }

    /// This process's environment and terminal, read once (gemvault changes its environment only
    /// in `prepareProcess`, before any recipient is parsed).
    public static let process = AgePluginContext(environment: ProcessHardening.environment)
}

/// The labels a plugin gave its stanzas, learnt when it wraps.
final class LabelMemory: Sendable {
    let labels = Mutex<Set<String>>([])
}
