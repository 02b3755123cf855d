import FoundationEssentials
import SystemIO
import VaultCore

/// What the first record of a conversation says.
public struct ConversationMeta: Codable, Sendable, Equatable {
    public var title: String
    public var model: String
    public var system: String?
    public var created: Int64
    /// `chat` or `ask`, as written; another word (from a newer gemvault) is kept as it is.
    public var kind: String

    public init(title: String, model: String, system: String?, created: Int64, kind: String) {
        self.title = title
        self.model = model
        self.system = system
        self.created = created
        self.kind = kind
    }

    /// The command that started it, when it is one this gemvault knows.
    public var conversationKind: ConversationKind? { ConversationKind(rawValue: kind) }
}

/// The command that started a conversation: its `kind` in the file.
public enum ConversationKind: String, Sendable {
    case chat, ask
}

/// One exchange as saved. The fields after `time` are left out of the JSON when empty, and
/// older files have none of them: readers of either kind of record decode both.
public struct SavedTurn: Codable, Sendable, Equatable {
    public var user: String
    /// The reply's text.
    public var model: String
    public var interrupted: Bool
    public var time: Int64
    /// The model that answered.
    public var modelName: String?
    /// The system instruction, when it changed before this turn (`/system`); "" when it was removed.
    public var system: String?
    /// The files sent with the message.
    public var attachments: [SavedAttachment]?
    /// The reply's parts with their thought signatures, when the model signed it.
    public var parts: [ReplyPart]?
    /// A grounded reply's searches, sources and supports (byte offsets into `model`).
    public var grounding: Grounding?
    /// The pages URL context was asked to read, and how that went.
    public var urlContext: [URLRetrieval]?

    public init(user: String, model: String, interrupted: Bool, time: Int64, modelName: String? = nil, system: String? = nil,
                attachments: [SavedAttachment]? = nil, parts: [ReplyPart]? = nil, grounding: Grounding? = nil, urlContext: [URLRetrieval]? = nil) {
        self.user = user
        self.model = model
        self.interrupted = interrupted
        self.time = time
        self.modelName = modelName
        self.system = system
        self.attachments = attachments
        self.parts = parts
        self.grounding = grounding
        self.urlContext = urlContext
    }
}

enum HistoryRecord: Codable {
    case meta(ConversationMeta)
    case turn(SavedTurn)
    /// `/undo` in the chat: the last turn is taken back.
    case undo
}

/// A conversation read back.
public struct Transcript: Sendable {
    public let id: String
    /// Its file, for messages.
    public let path: String
    public var meta: ConversationMeta?
    public var turns: [SavedTurn]
    /// What stopped the reading before the end of the file, or nil when every record was read.
    public var damage: String?
    /// The model of the latest turn (a `/model` change shows there), else the one it began with.
    public var currentModel: String?
    /// The latest system instruction a turn recorded ("" when one was removed); nil when no
    /// turn changed the one in `meta`.
    public var currentSystem: String?
    /// Where the file ended when it was read whole, for a writer that goes on with it.
    var end: End?

    struct End: Sendable {
        /// The bytes of complete records, the records counted (header included), the last one's hash.
        let length: Int
        let records: UInt64
        let lastHash: [UInt8]
    }

    public init(id: String, path: String, meta: ConversationMeta?, turns: [SavedTurn], damage: String? = nil) {
        self.id = id
        self.path = path
        self.meta = meta
        self.turns = turns
        self.damage = damage
        currentModel = meta?.model
    }

    /// The system instruction to go on with: the latest change, else the one it began with.
    public var systemInEffect: String? {
        guard let currentSystem else { return meta?.system }
        return currentSystem.isEmpty ? nil : currentSystem
    }
}
