import FoundationEssentials
import SystemIO
import VaultCore

/// The key pairs that open conversations: the current one, which new records are sealed to,
/// then the ones retired by passphrase changes, newest first.
public struct HistoryKeys: Sendable {
    public let current: SealedBox.KeyPair
    public let all: [SealedBox.KeyPair]

    /// The vault's conversation keys, current first (`VaultContents.conversationKeys`).
    public init(seeds: [SecretBytes]) throws(VaultError) {
        var pairs: [SealedBox.KeyPair] = []
        for seed in seeds { pairs.append(try SealedBox.keyPair(seed: seed)) }
        guard !pairs.isEmpty else { throw .cryptoFailure("no conversation key") }
        self.init(pairs)
    }

    public init(_ pairs: [SealedBox.KeyPair]) {
        precondition(!pairs.isEmpty, "a conversation has at least the current key")
        current = pairs[0]
        all = pairs
    }
}

/// Conversations kept encrypted under `$XDG_STATE_HOME/gemvault/history/<vault>/`.
///
/// Each record is an anonymous sealed box to the X25519 public key derived from the vault's
/// conversation key, so saving needs no unlock, and reading needs the vault (Docs/history-format.md).
/// The public key is kept beside the conversations in `recipient`, written whenever the vault
/// is opened; the folder is checked like the vault's, so no other user can swap it. Records are
/// padded, numbered and chained to the one before, so a dropped, reordered or repeated record
/// shows.
public struct HistoryStore: Sendable {
    public let folder: String
    static let recipientName = "recipient"
    static let fileMagic = Array("GVCH".utf8)
    static let recipientMagic = Array("GVHR".utf8)
    /// The first byte of a record's plaintext in the numbered, chained, padded form; a record
    /// of version 1 is bare JSON and starts with `{`.
    static let recordVersion: UInt8 = 2
    /// version, sequence, previous record's hash, JSON length.
    static let recordHeaderLength = 1 + 8 + 32 + 4
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
        /// A file whose records stop making sense part of the way: where, and what was found.
        case broken(String, String)
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

    /// Where conversations are sealed, and the vault's own `history` setting, kept beside them
    /// so that a command without the vault open knows both.
    public struct Recipient: Equatable, Sendable {
        /// The public half of the current conversation key.
        public let publicKey: [UInt8]
        /// The vault's `history` setting (`on`, `off`), or nil when the vault does not set it.
        public let vaultHistory: String?
    }

    /// The vault's `history` setting when it is off (Settings' `HistoryMode.off`, which this
    /// module cannot see): the recipient file keeps it so it holds while the vault is locked.
    static let historyOff = "off"
    static let historyChoices: [String?] = [historyOff, nil, "on"]

    /// What a vault opened or saved holds for its history (VaultAccess's observer): the current
    /// conversation key's public half and the vault's `history` setting, so conversations are
    /// sealed, or not saved, without an unlock. Best effort: a command goes on without it.
    public func noteVault(_ contents: VaultContents) {
        try? saveRecipient(conversationKey: contents.conversationKey, vaultHistory: contents.settings["history"])
    }

    /// Records the current conversation key's public half and the vault's `history` setting;
    /// written only when something changed.
    public func saveRecipient(conversationKey: SecretBytes, vaultHistory: String?) throws(Failure) {
        let pair: SealedBox.KeyPair
        do { pair = try SealedBox.keyPair(seed: conversationKey) } catch { throw .crypto("\(error)") }
        let choice = Self.historyChoices.firstIndex(of: vaultHistory) ?? 1
        let wanted = Recipient(publicKey: pair.publicKey, vaultHistory: Self.historyChoices[choice])
        if (try? recipient()) == wanted { return }
        guard let folder = try openFolder(create: true) else { return }
        let bytes = Self.recipientMagic + pair.publicKey + [UInt8(choice)]
        do { try folder.replace(Self.recipientName, with: bytes, tempPrefix: ".recipient.tmp.") }
        catch { throw .system(error) }
    }

    /// The recipient, or nil when the vault was never opened here. A file of 36 bytes, from
    /// before the `history` setting was kept there, says nothing of it.
    public func recipient() throws(Failure) -> Recipient? {
        guard let folder = try openFolder(create: false), let file = try openFile(Self.recipientName, in: folder, flags: OpenFlags.readOnly) else {
            return nil
        }
        guard let bytes = try? file.readAll(limit: 64), bytes.count == 36 || (bytes.count == 37 && Int(bytes[36]) < Self.historyChoices.count),
              Array(bytes.prefix(4)) == Self.recipientMagic else {
            throw .damaged(folder.path(of: Self.recipientName))
        }
        return Recipient(publicKey: Array(bytes[4..<36]), vaultHistory: bytes.count == 36 ? nil : Self.historyChoices[Int(bytes[36])])
    }

    // MARK: Writing

    /// A new conversation file; its first record is `meta`.
    public func create(_ meta: ConversationMeta) throws(Failure) -> HistoryWriter {
        guard let recipient = try recipient()?.publicKey else { throw .noRecipient }
        guard let folder = try openFolder(create: true) else { throw .noRecipient }
        let id = (0..<8).map { _ in String(format2: UInt8.random(in: 0...255)) }.joined()
        guard let file = try openFile(id + Self.suffix, in: folder, flags: OpenFlags.appendCreateNew) else { throw .notFound(id) }
        let header = Self.fileMagic + recipient
        let writer = HistoryWriter(store: self, id: id, file: file, recipient: recipient, sequence: 0, previous: [])
        try writer.append(raw: header)
        try writer.append(.meta(meta))
        return writer
    }

    /// An existing conversation, to append to. A record cut short by a crash is cut off
    /// first, so what is appended after it stays readable. New records are sealed to the
    /// current recipient, whatever key the conversation began under, and continue its chain.
    /// `after` is the transcript just loaded: while the file still ends where it did, the
    /// chain goes on from there without reading the file again.
    public func reopen(_ id: String, after loaded: Transcript? = nil) throws(Failure) -> HistoryWriter {
        guard let recipient = try recipient()?.publicKey else { throw .noRecipient }
        guard let folder = try openFolder(create: false),
              let file = try openFile(id + Self.suffix, in: folder, flags: OpenFlags.readWriteAppend) else { throw .notFound(id) }
        if let end = loaded?.end, loaded?.id == id, loaded?.damage == nil, let size = try? file.status().size, size == Int64(end.length) {
            return HistoryWriter(store: self, id: id, file: file, recipient: recipient, sequence: end.records, previous: end.lastHash)
        }
        let bytes: [UInt8]
        do { bytes = try file.readAll(limit: 1 << 30) } catch { throw .damaged(folder.path(of: id + Self.suffix)) }
        var count = 0
        var last = 0..<0
        Self.forEachRecord(bytes) { record in
            count += 1
            last = record
        }
        guard count > 0 else { throw .damaged(folder.path(of: id + Self.suffix)) }
        if last.upperBound < bytes.count {
            do { try file.truncate(to: last.upperBound) } catch { throw .system(error) }
        }
        return HistoryWriter(store: self, id: id, file: file, recipient: recipient, sequence: UInt64(count), previous: Sodium.blake2b256(bytes[last]))
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

    /// Every record of a conversation, opened with the vault's conversation keys; a record cut
    /// short by a crash at the end is left out. A conversation whose records do not all open
    /// in order throws `.broken`; `loadIntact` gives what came before the damage.
    public func load(_ id: String, with keys: HistoryKeys) throws(Failure) -> Transcript {
        let transcript = try loadIntact(id, with: keys)
        if let damage = transcript.damage { throw .broken(transcript.path, damage) }
        return transcript
    }

    /// The conversation up to its first damaged, dropped, reordered or repeated record, with
    /// `damage` saying what was found there.
    public func loadIntact(_ id: String, with keys: HistoryKeys) throws(Failure) -> Transcript {
        guard let folder = try openFolder(create: false),
              let file = try openFile(id + Self.suffix, in: folder, flags: OpenFlags.readOnly) else { throw .notFound(id) }
        let path = folder.path(of: id + Self.suffix)
        let bytes: [UInt8]
        do { bytes = try file.readAll(limit: 1 << 30) } catch { throw .damaged(path) }
        return try Self.decode(bytes, id: id, path: path, with: keys)
    }

    /// A conversation file's bytes read back: its header, then every complete record opened
    /// with one of the keys, in order. A header that is not gemvault's is damage; records are
    /// read until the first that does not open, is not what a writer produces, or breaks the
    /// numbering or the chain (then `damage` says so).
    static func decode(_ bytes: [UInt8], id: String, path: String, with keys: HistoryKeys) throws(Failure) -> Transcript {
        var ranges: [Range<Int>] = []
        forEachRecord(bytes) { ranges.append($0) }
        guard let headerRange = ranges.first, bytes[headerRange].count == 36, Array(bytes[headerRange].prefix(4)) == fileMagic else {
            throw .damaged(path)
        }
        let sealedTo = Array(bytes[headerRange].dropFirst(4))
        guard let headerKey = keys.all.firstIndex(where: { $0.publicKey == sealedTo }) else {
            throw .crypto("\(id) was sealed for another conversation key")
        }
        var transcript = Transcript(id: id, path: path, meta: nil, turns: [])
        var chained = false
        var key = headerKey
        for run in OpenedRecords.runs(1..<ranges.count, sizes: { ranges[$0].count }) {
            let opened = OpenedRecords(run, of: ranges, in: bytes, with: keys, tryingFirst: key)
            key = opened.lastKey ?? key
            for position in run {
                guard var parsed = opened.parsed[position - run.lowerBound] else {
                    transcript.damage = "record \(position) does not open"
                    return transcript
                }
                // Parsed as if nothing numbered came before: the old kind after a numbered one is damage.
                if chained && opened.unnumbered[position - run.lowerBound] { parsed = .failure(.unchainedAfterChained) }
                switch parsed {
                case .failure(let problem):
                    transcript.damage = problem.description(position)
                    return transcript
                case .success(let (record, isChained)):
                    chained = chained || isChained
                    switch record {
                    case .meta(let meta):
                        transcript.meta = meta
                        transcript.currentModel = meta.model
                    case .turn(let turn):
                        transcript.turns.append(turn)
                        // A change stays made when its turn is taken back: the chat went on with it.
                        if let name = turn.modelName { transcript.currentModel = name }
                        if let system = turn.system { transcript.currentSystem = system }
                    case .undo: _ = transcript.turns.popLast()
                    }
                }
            }
        }
        transcript.end = Transcript.End(length: ranges.last!.upperBound, records: UInt64(ranges.count), lastHash: Sodium.blake2b256(bytes[ranges.last!]))
        return transcript
    }

    enum RecordProblem: Error {
        case malformed, unchainedAfterChained, outOfOrder(UInt64), brokenChain

        func description(_ position: Int) -> String {
            switch self {
            case .malformed: "record \(position) is not what gemvault writes"
            case .unchainedAfterChained: "record \(position) is of the old, unnumbered kind among numbered ones"
            case .outOfOrder(let sequence): "record \(position) is numbered \(sequence): records were dropped, reordered or repeated"
            case .brokenChain: "record \(position) does not follow the record before it: records were dropped, reordered or repeated"
            }
        }
    }

    /// A record's plaintext: bare JSON (version 1), or version, sequence, the previous
    /// record's hash, the JSON's length, the JSON and zero padding up to its bucket.
    static func parseRecord(_ plain: UnsafeRawBufferPointer, position: Int, previous: ArraySlice<UInt8>,
                            chained: Bool, decoder: JSONDecoder = JSONDecoder()) -> Result<(HistoryRecord, Bool), RecordProblem> {
        guard let first = plain.first else { return .failure(.malformed) }
        if first == UInt8(ascii: "{") {
            guard !chained, let record = try? decoder.decode(HistoryRecord.self, from: Data(plain)) else {
                return .failure(chained ? .unchainedAfterChained : .malformed)
            }
            return .success((record, false))
        }
        guard first == recordVersion, plain.count >= recordHeaderLength, plain.count == paddedLength(plain.count) else { return .failure(.malformed) }
        let sequence = (0..<8).reduce(UInt64(0)) { $0 | UInt64(plain[1 + $1]) << (8 * UInt64($1)) }
        guard sequence == UInt64(position) else { return .failure(.outOfOrder(sequence)) }
        guard plain[9..<41].elementsEqual(Sodium.blake2b256(previous)) else { return .failure(.brokenChain) }
        let length = (0..<4).reduce(0) { $0 | Int(plain[41 + $1]) << (8 * $1) }
        guard length <= plain.count - recordHeaderLength,
              plain[(recordHeaderLength + length)...].allSatisfy({ $0 == 0 }),
              let record = try? decoder.decode(HistoryRecord.self, from: Data(plain[recordHeaderLength..<recordHeaderLength + length])) else {
            return .failure(.malformed)
        }
        return .success((record, true))
    }

    /// Plaintexts are padded to 256 bytes, then to the next power of two up to 64 KiB, then to
    /// a multiple of 64 KiB: a record shows its size only to that grain.
    static func paddedLength(_ length: Int) -> Int {
        let block = 64 << 10
        guard length > block else {
            var bucket = 256
            while bucket < length { bucket *= 2 }
            return bucket
        }
        return (length + block - 1) / block * block
    }

    /// A record's plaintext in the numbered, chained, padded form.
    static func recordPlaintext(_ json: [UInt8], sequence: UInt64, previous: [UInt8]) -> [UInt8] {
        var plain: [UInt8] = [recordVersion]
        for shift in 0..<8 { plain.append(UInt8(truncatingIfNeeded: sequence >> (8 * UInt64(shift)))) }
        plain += previous
        let length = UInt32(json.count)
        for shift in 0..<4 { plain.append(UInt8(truncatingIfNeeded: length >> (8 * UInt32(shift)))) }
        plain += json
        plain += [UInt8](repeating: 0, count: paddedLength(plain.count) - plain.count)
        return plain
    }

    /// The length-prefixed records of a file; an incomplete last one is dropped.
    static func split(_ bytes: [UInt8]) -> [[UInt8]] {
        var records: [[UInt8]] = []
        forEachRecord(bytes) { records.append(Array(bytes[$0])) }
        return records
    }

    static func forEachRecord(_ bytes: [UInt8], _ body: (Range<Int>) -> Void) {
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

    /// The conversations last written before `time` (Unix seconds).
    public func ids(writtenBefore time: Int64) throws(Failure) -> [String] {
        guard let folder = try openFolder(create: false) else { return [] }
        return try ids().filter { (modified($0, in: folder) ?? time) < time }
    }

    /// Removes these conversations; returns how many were there to remove.
    public func remove(_ ids: [String]) throws(Failure) -> Int {
        guard let folder = try openFolder(create: false) else { return 0 }
        let removed = ids.filter { folder.remove($0 + Self.suffix) }.count
        if removed > 0 { forgetIndex(in: folder) }
        folder.sync()
        return removed
    }
}

extension String {
    init(format2 byte: UInt8) { self = (byte < 16 ? "0" : "") + String(byte, radix: 16) }
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
        case .broken(let path, let detail): "\(path) is damaged: \(detail); only what came before it is shown"
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
