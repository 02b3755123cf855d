import FoundationEssentials
import SystemIO
import VaultCore

/// Conversations kept encrypted under `$XDG_STATE_HOME/gemvault/history/<vault>/`.
///
/// Each record is an anonymous sealed box to the X25519 public key derived from the vault's
/// conversation key, so saving needs no unlock, and reading needs the vault (Docs/history-format.md).
/// The public key is kept beside the conversations in `recipient`, written whenever the vault
/// is opened; the folder is checked like the vault's, so no other user can swap it.
public struct HistoryStore: Sendable {
    public let folder: String
    static let recipientName = "recipient"
    static let fileMagic = Array("GVCH".utf8)
    static let recipientMagic = Array("GVHR".utf8)
    static let suffix = ".chat"
    /// A record larger than this is damage, not a turn.
    static let maxRecord = 64 << 20

    public init(stateDirectory: String, vaultPath: String) {
        folder = stateDirectory + "/gemvault/history/" + Self.folderName(vaultPath)
    }

    /// Each vault's conversations have a folder of their own, named after its path.
    static func folderName(_ vaultPath: String) -> String { Sodium.fingerprint(ProcessIdentity.absolutePath(vaultPath)) }

    public enum Failure: Error, Equatable {
        case refused(FileCheckFailure)
        case system(SystemError)
        case noRecipient
        case notFound(String)
        case ambiguous(String, [String])
        case damaged(String)
        case crypto(String)
    }

    func openFolder(create: Bool) throws(Failure) -> TrustedFolder? {
        do { return create ? try TrustedFolder.create(folder) : try TrustedFolder.open(folder) } catch { throw Failure(error) }
    }

    func openFile(_ name: String, in folder: TrustedFolder, flags: Int32) throws(Failure) -> FileDescriptor? {
        do { return try TrustedFile.open(name, in: folder, requirement: .secret, flags: flags) } catch { throw Failure(error) }
    }

    /// A record as it lies in a file: its length (u32 little-endian), then its bytes.
    static func framed(_ record: [UInt8]) -> [UInt8] {
        let count = UInt32(record.count)
        return [UInt8(count & 0xff), UInt8(count >> 8 & 0xff), UInt8(count >> 16 & 0xff), UInt8(count >> 24)] + record
    }

    // MARK: The recipient

    /// Records where conversations are sealed: the public half of the conversation key.
    public func saveRecipient(conversationKey: SecretBytes) throws(Failure) {
        let pair: SealedBox.KeyPair
        do { pair = try SealedBox.keyPair(seed: conversationKey) } catch { throw .crypto("\(error)") }
        if (try? recipient()) == pair.publicKey { return }
        guard let folder = try openFolder(create: true) else { return }
        do { try folder.replace(Self.recipientName, with: Self.recipientMagic + pair.publicKey, tempPrefix: ".recipient.tmp.") }
        catch { throw .system(error) }
    }

    /// The public key conversations are sealed to, or nil when the vault was never opened here.
    public func recipient() throws(Failure) -> [UInt8]? {
        guard let folder = try openFolder(create: false), let file = try openFile(Self.recipientName, in: folder, flags: OpenFlags.readOnly) else {
            return nil
        }
        guard let bytes = try? file.readAll(limit: 64), bytes.count == 36, Array(bytes.prefix(4)) == Self.recipientMagic else {
            throw .damaged(folder.path(of: Self.recipientName))
        }
        return Array(bytes.dropFirst(4))
    }

    // MARK: Writing

    /// A new conversation file; its first record is `meta`.
    public func create(_ meta: ConversationMeta) throws(Failure) -> HistoryWriter {
        guard let recipient = try recipient() else { throw .noRecipient }
        guard let folder = try openFolder(create: true) else { throw .noRecipient }
        let id = (0..<8).map { _ in String(format2: UInt8.random(in: 0...255)) }.joined()
        guard let file = try openFile(id + Self.suffix, in: folder, flags: OpenFlags.appendCreateNew) else { throw .notFound(id) }
        let writer = HistoryWriter(id: id, file: file, recipient: recipient)
        try writer.append(raw: Self.fileMagic + recipient)
        try writer.append(.meta(meta))
        return writer
    }

    /// An existing conversation, to append to. A record cut short by a crash is cut off
    /// first, so what is appended after it stays readable.
    public func reopen(_ id: String) throws(Failure) -> HistoryWriter {
        guard let recipient = try recipient() else { throw .noRecipient }
        guard let folder = try openFolder(create: false),
              let file = try openFile(id + Self.suffix, in: folder, flags: OpenFlags.readWriteAppend) else { throw .notFound(id) }
        let bytes: [UInt8]
        do { bytes = try file.readAll(limit: 1 << 30) } catch { throw .damaged(folder.path(of: id + Self.suffix)) }
        let complete = Self.completeLength(bytes)
        if complete < bytes.count {
            do { try file.truncate(to: complete) } catch { throw .system(error) }
        }
        return HistoryWriter(id: id, file: file, recipient: recipient)
    }

    // MARK: Reading

    /// Every conversation id, the one written to least recently first.
    public func ids() throws(Failure) -> [String] {
        guard let folder = try openFolder(create: false) else { return [] }
        return folder.names(withPrefix: "").filter { $0.hasSuffix(Self.suffix) && !$0.hasPrefix(".") }
            .map { (id: String($0.dropLast(Self.suffix.count)), time: FileStatus.of(link: folder.path(of: $0))?.modifiedExactly ?? 0) }
            .sorted { ($0.time, $0.id) < ($1.time, $1.id) }
            .map(\.id)
    }

    private func modified(_ id: String, in folder: TrustedFolder) -> Int64? {
        FileStatus.of(link: folder.path(of: id + Self.suffix))?.modified
    }

    /// The full id for a unique prefix, as git does for hashes.
    public func resolve(_ prefix: String) throws(Failure) -> String {
        let all = try ids()
        let matches = all.filter { $0.hasPrefix(prefix.lowercased()) }
        guard !prefix.isEmpty, !matches.isEmpty else { throw .notFound(prefix) }
        guard matches.count == 1 else { throw .ambiguous(prefix, matches) }
        return matches[0]
    }

    /// Every record of a conversation, opened with the key pair; a record cut short by a
    /// crash at the end is left out.
    public func load(_ id: String, with pair: SealedBox.KeyPair) throws(Failure) -> Transcript {
        guard let folder = try openFolder(create: false),
              let file = try openFile(id + Self.suffix, in: folder, flags: OpenFlags.readOnly) else { throw .notFound(id) }
        let path = folder.path(of: id + Self.suffix)
        let bytes: [UInt8]
        do { bytes = try file.readAll(limit: 1 << 30) } catch { throw .damaged(path) }
        return try Self.decode(bytes, id: id, path: path, with: pair)
    }

    /// A conversation file's bytes read back: its header, then every complete record opened
    /// with the pair. Anything a writer never produces is reported as damage at `path`.
    static func decode(_ bytes: [UInt8], id: String, path: String, with pair: SealedBox.KeyPair) throws(Failure) -> Transcript {
        var records = split(bytes)
        guard let first = records.first, first.count == 36, Array(first.prefix(4)) == fileMagic else {
            throw .damaged(path)
        }
        guard Array(first.dropFirst(4)) == pair.publicKey else {
            throw .crypto("\(id) was sealed for another conversation key")
        }
        records.removeFirst()
        var transcript = Transcript(id: id, meta: nil, turns: [])
        for sealed in records {
            guard let plain = SealedBox.open(sealed, with: pair) else { throw .damaged(path) }
            let record = plain.withUnsafeBytes { try? JSONDecoder().decode(HistoryRecord.self, from: Data($0)) }
            switch record {
            case .meta(let meta)?: transcript.meta = meta
            case .turn(let turn)?: transcript.turns.append(turn)
            case .undo?: _ = transcript.turns.popLast()
            case nil: throw .damaged(path)
            }
        }
        return transcript
    }

    /// The length-prefixed records of a file; an incomplete last one is dropped.
    static func split(_ bytes: [UInt8]) -> [[UInt8]] {
        var records: [[UInt8]] = []
        forEachRecord(bytes) { records.append(Array(bytes[$0])) }
        return records
    }

    /// How many bytes the complete records take, found from their lengths alone: reopening a
    /// conversation to append to it copies nothing, however long it is.
    static func completeLength(_ bytes: [UInt8]) -> Int {
        var end = 0
        forEachRecord(bytes) { end = $0.upperBound }
        return end
    }

    private static func forEachRecord(_ bytes: [UInt8], _ body: (Range<Int>) -> Void) {
        var offset = 0
        while bytes.count - offset >= 4 {
            let length = Int(UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24)
            guard length <= maxRecord, bytes.count - offset - 4 >= length else { break }
            body(offset + 4..<offset + 4 + length)
            offset += 4 + length
        }
    }

    /// Hands every conversation to the vault now at `vaultPath`: `init --force` keeps the
    /// vault it replaces under a new name, and the conversations sealed to it go with it.
    public func move(toVaultAt vaultPath: String) throws(Failure) {
        let (parentPath, name) = TrustedFolder.parent(of: folder)
        let opened: TrustedFolder?
        do throws(TrustedOpenError) { opened = try TrustedFolder.open(parentPath) } catch { throw Failure(error) }
        guard let parent = opened, parent.exists(name) else { return }
        do { try parent.rename(name, to: Self.folderName(vaultPath)) } catch { throw .system(error) }
        parent.sync()
    }

    // MARK: Removing

    public func remove(_ id: String) throws(Failure) {
        guard let folder = try openFolder(create: false), folder.remove(id + Self.suffix) else { throw .notFound(id) }
        forgetIndex(in: folder)
        folder.sync()
    }

    /// Conversations last written before `time` (Unix seconds); returns how many were removed.
    public func removeOlder(than time: Int64) throws(Failure) -> Int {
        guard let folder = try openFolder(create: false) else { return 0 }
        var removed = 0
        for id in try ids() where (modified(id, in: folder) ?? time) < time {
            if folder.remove(id + Self.suffix) { removed += 1 }
        }
        if removed > 0 { forgetIndex(in: folder) }
        folder.sync()
        return removed
    }
}

extension String {
    init(format2 byte: UInt8) { self = (byte < 16 ? "0" : "") + String(byte, radix: 16) }
}

/// What the first record of a conversation says.
public struct ConversationMeta: Codable, Sendable, Equatable {
    public var title: String
    public var model: String
    public var system: String?
    public var created: Int64
    public var kind: String

    public init(title: String, model: String, system: String?, created: Int64, kind: String) {
        self.title = title
        self.model = model
        self.system = system
        self.created = created
        self.kind = kind
    }
}

/// One exchange as saved.
public struct SavedTurn: Codable, Sendable, Equatable {
    public var user: String
    public var model: String
    public var interrupted: Bool
    public var time: Int64

    public init(user: String, model: String, interrupted: Bool, time: Int64) {
        self.user = user
        self.model = model
        self.interrupted = interrupted
        self.time = time
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
    public var meta: ConversationMeta?
    public var turns: [SavedTurn]
}

/// Appends records to one conversation file; each is durable before `append` returns.
public final class HistoryWriter {
    public let id: String
    private let file: FileDescriptor
    private let recipient: [UInt8]

    init(id: String, file: FileDescriptor, recipient: [UInt8]) {
        self.id = id
        self.file = file
        self.recipient = recipient
    }

    func append(_ record: HistoryRecord) throws(HistoryStore.Failure) {
        let plain: [UInt8]
        do { plain = Array(try JSONEncoder().encode(record)) } catch { throw .crypto("\(error)") }
        let sealed: [UInt8]
        do { sealed = try SealedBox.seal(plain, to: recipient) } catch { throw .crypto("\(error)") }
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
    }

    public func append(turn: SavedTurn) throws(HistoryStore.Failure) { try append(.turn(turn)) }
    public func appendUndo() throws(HistoryStore.Failure) { try append(.undo) }
}

/// Saves a conversation as it goes: the file is made at the first kept turn, each turn is
/// durable before the next prompt. A failure is reported once and saving stops.
public final class ConversationRecorder {
    private let store: HistoryStore
    private let kind: String
    private var writer: HistoryWriter?
    private var failed = false
    private let warn: (String) -> Void

    public init(store: HistoryStore, kind: String, resuming writer: HistoryWriter? = nil, warn: @escaping (String) -> Void) {
        self.store = store
        self.kind = kind
        self.writer = writer
        self.warn = warn
    }

    public func record(_ turn: Conversation.Turn, in conversation: Conversation, now: Int64) {
        attempt { () throws(HistoryStore.Failure) in
            if writer == nil {
                let title = String(turn.user.split(whereSeparator: \.isNewline).first ?? "").trimmedWhitespace
                writer = try store.create(ConversationMeta(title: String(title.prefix(80)), model: conversation.model,
                                                           system: conversation.systemPrompt, created: now, kind: kind))
            }
            try writer?.append(turn: SavedTurn(user: turn.user, model: turn.model, interrupted: turn.interrupted, time: now))
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

extension HistoryStore.Failure: CustomStringConvertible {
    public var description: String {
        switch self {
        case .refused(let failure): failure.message
        case .system(let error): "\(error.operation) \(error.path): \(error.reason)"
        case .noRecipient: "the vault was not opened here since history began; open it once (any command with its passphrase, or 'gemvault unlock')"
        case .notFound(let id): "no conversation '\(id)'"
        case .ambiguous(let prefix, let matches): "'\(prefix)' names \(matches.count) conversations (\(matches.prefix(5).joined(separator: ", "))); give more of the id"
        case .damaged(let path): "\(path) is damaged"
        case .crypto(let detail): detail
        }
    }
}

extension HistoryStore.Failure {
    init(_ error: TrustedOpenError) {
        switch error {
        case .refused(let failure): self = .refused(failure)
        case .failed(let failure): self = .system(failure)
        }
    }
}
