import FoundationEssentials
import SystemIO
import VaultCore

/// Appends records to one conversation file; each is durable before `append` returns.
public final class HistoryWriter {
    public let id: String
    private let store: HistoryStore
    private let file: FileDescriptor
    /// The key records are sealed to: the `recipient` file's, read again before each record,
    /// so a passwd, rekey or recovery-code run elsewhere during a chat retires the old key here too.
    private var recipient: [UInt8]
    /// The position of the next record in the file, and the hash of the last one stored:
    /// both come from the file's bytes, so a writer needs no key to continue the chain.
    private var sequence: UInt64
    private var previous: [UInt8]

    init(store: HistoryStore, id: String, file: FileDescriptor, recipient: [UInt8], sequence: UInt64, previous: [UInt8]) {
        self.store = store
        self.id = id
        self.file = file
        self.recipient = recipient
        self.sequence = sequence
        self.previous = previous
    }

    func append(_ record: HistoryRecord) throws(HistoryStore.Failure) {
        let json: [UInt8]
        do { json = Array(try JSONEncoder().encode(record)) } catch { throw .crypto("\(error)") }
        if let current = try store.recipient()?.publicKey { recipient = current }
        let sealed: [UInt8]
        do { sealed = try SealedBox.seal(HistoryStore.recordPlaintext(json, sequence: sequence, previous: previous), to: recipient) }
        catch { throw .crypto("\(error)") }
        try append(raw: sealed)
    }

    /// One length-prefixed record in a single write (O_APPEND), then fsync: a crash loses at
    /// most this record, which readers then skip.
    func append(raw: [UInt8]) throws(HistoryStore.Failure) {
        do {
            try file.writeAll(HistoryStore.framed(raw))
            try file.sync()
        } catch {
            throw .system(error)
        }
        sequence += 1
        previous = Sodium.blake2b256(raw[...])
    }

    public func append(turn: SavedTurn) throws(HistoryStore.Failure) { try append(.turn(turn)) }
    public func appendUndo() throws(HistoryStore.Failure) { try append(.undo) }
}

/// Saves a conversation as it goes: the file is made at the first kept turn, each turn is
/// durable before the next prompt. A failure is reported once and saving stops.
public final class ConversationRecorder {
    private let store: HistoryStore
    private let kind: ConversationKind
    private var writer: HistoryWriter?
    private var failed = false
    private let warn: (String) -> Void
    /// `--keep-attachments`: a file's content goes into the record, not only its name and digest.
    private let keepAttachments: Bool
    /// The system instruction the file last recorded, to note a change at the next turn.
    private var recordedSystem: String?

    /// `resuming` goes on with a file whose system instruction in effect is `system`.
    public init(store: HistoryStore, kind: ConversationKind, resuming writer: HistoryWriter? = nil, system: String? = nil, keepAttachments: Bool = false,
                warn: @escaping (String) -> Void) {
        self.store = store
        self.kind = kind
        self.writer = writer
        self.recordedSystem = system
        self.keepAttachments = keepAttachments
        self.warn = warn
    }

    public func record(_ turn: Conversation.Turn, in conversation: Conversation, now: Int64) {
        attempt { () throws(HistoryStore.Failure) in
            let system = conversation.systemPrompt.flatMap { $0.isEmpty ? nil : $0 }
            if writer == nil {
                let firstLine = String(turn.user.split(whereSeparator: \.isNewline).first ?? "").trimmedWhitespace
                let title = firstLine.isEmpty ? turn.attachments.map(\.name).joined(separator: ", ") : firstLine
                writer = try store.create(ConversationMeta(title: String(title.prefix(80)), model: conversation.model,
                                                           system: system, created: now, kind: kind.rawValue))
                recordedSystem = system
            }
            let change = system == recordedSystem ? nil : system ?? ""
            recordedSystem = system
            try writer?.append(turn: SavedTurn(user: turn.user, model: turn.model, interrupted: turn.interrupted, time: now,
                                               modelName: turn.modelName, system: change,
                                               attachments: turn.attachments.isEmpty ? nil : turn.attachments.map { SavedAttachment($0, keepContent: keepAttachments) },
                                               parts: turn.replyParts, grounding: turn.grounding,
                                               urlContext: turn.urlRetrievals.isEmpty ? nil : turn.urlRetrievals))
        }
    }

    public func recordUndo() { attempt { () throws(HistoryStore.Failure) in try writer?.appendUndo() } }

    /// `/clear`: the next turn starts a new conversation.
    public func startNew() { writer = nil }

    private func attempt(_ body: () throws(HistoryStore.Failure) -> Void) {
        guard !failed else { return }
        do { try body() } catch {
            failed = true
            warn("the conversation is no longer saved: \(error.description)")
        }
    }
}

extension HistoryStore {
    /// The history setting as a command resolved it: `off`, and whether it came from the vault
    /// or a layer above it (the environment, a flag) rather than from the built-in default or
    /// config.json.
    public struct HistorySetting: Sendable {
        public let off: Bool
        public let fromVaultOrAbove: Bool

        public init(off: Bool, fromVaultOrAbove: Bool) {
            self.off = off
            self.fromVaultOrAbove = fromVaultOrAbove
        }
    }

    /// A recorder for a new conversation, or nil with the reason it is not saved (no reason
    /// when that is the setting's choice). Without the vault open, its own `history` setting
    /// comes from the recipient file, so `history off` holds while the vault is locked.
    /// `resuming` goes on with a file whose system instruction in effect is `system`.
    public func recorder(_ setting: HistorySetting, vaultExists: Bool, kind: ConversationKind, resuming writer: HistoryWriter?, system: String?,
                         keepAttachments: Bool, warn: @escaping (String) -> Void) -> (ConversationRecorder?, String?) {
        guard vaultExists else { return (nil, setting.off ? nil : "there is no vault, so this conversation is not saved") }
        do throws(Failure) {
            let recipient = try recipient()
            let recorded = setting.fromVaultOrAbove ? nil : recipient?.vaultHistory
            if recorded.map({ $0 == Self.historyOff }) ?? setting.off { return (nil, nil) }
            guard recipient != nil else { throw .noRecipient }
        } catch {
            return (nil, "this conversation is not saved: \(error.description)")
        }
        return (ConversationRecorder(store: self, kind: kind, resuming: writer, system: system, keepAttachments: keepAttachments, warn: warn), nil)
    }
}
