import SystemIO
import VaultCore

/// What `history list` shows of one conversation.
public struct ConversationSummary: Sendable, Equatable {
    public let id: String
    public let title: String
    public let model: String
    public let kind: String
    public let turns: Int
    /// Unix seconds: when it was created, and its last turn (the creation when it has none).
    public let first: Int64
    public let last: Int64

    init(id: String, title: String, model: String, kind: String, turns: Int, first: Int64, last: Int64) {
        self.id = id
        self.title = title
        self.model = model
        self.kind = kind
        self.turns = turns
        self.first = first
        self.last = last
    }

    init(_ transcript: Transcript) {
        let created = transcript.meta?.created ?? transcript.turns.first?.time ?? 0
        self.init(id: transcript.id, title: transcript.meta?.title ?? "", model: transcript.meta?.model ?? "?",
                  kind: transcript.meta?.kind ?? "chat", turns: transcript.turns.count, first: created,
                  last: transcript.turns.last?.time ?? created)
    }
}

/// The summaries of every conversation, kept in `index` beside them so that `history list`
/// opens only the files that changed since it last ran (Docs/history-format.md).
///
/// It is a cache, encrypted for the conversation key's holder alone: a file that is missing,
/// damaged or sealed under another key is rebuilt from the conversations. An entry is used
/// only while its file's size, modification time and inode are what they were.
struct HistoryIndex {
    static let fileName = "index"
    static let magic = Array("GVHI".utf8)
    static let purpose = "gemvault history index 1"
    /// Version 2 is version 1 padded as records are, so the file's size shows only a bucket,
    /// not the length of each new title; version 1 (unpadded) is still read.
    static let version: UInt8 = 2

    struct Entry {
        let size: Int64
        let modified: Double
        let inode: UInt64
        let summary: ConversationSummary

        func matches(_ status: FileStatus) -> Bool {
            size == status.size && modified == status.modifiedExactly && inode == status.inode
        }
    }

    var entries: [String: Entry] = [:]

    /// The index sealed with `pair`; an empty one when `bytes` is absent or does not open.
    static func decode(_ bytes: [UInt8]?, with pair: SealedBox.KeyPair) -> HistoryIndex {
        guard let bytes, bytes.count > magic.count, Array(bytes.prefix(magic.count)) == magic,
              let plain = pair.openPrivately(Array(bytes.dropFirst(magic.count)), purpose: purpose) else { return HistoryIndex() }
        return plain.withUnsafeBytes { raw in
            var reader = Reader(bytes: raw)
            var index = HistoryIndex()
            guard let version = reader.u8(), version == 1 || version == Self.version, let count = reader.u32() else { return HistoryIndex() }
            for _ in 0..<count {
                guard let id = reader.text(), let size = reader.u64(), let modified = reader.u64(), let inode = reader.u64(),
                      let turns = reader.u32(), let first = reader.u64(), let last = reader.u64(),
                      let title = reader.text(), let model = reader.text(), let kind = reader.text() else { return HistoryIndex() }
                let summary = ConversationSummary(id: id, title: title, model: model, kind: kind, turns: Int(turns),
                                                  first: Int64(bitPattern: first), last: Int64(bitPattern: last))
                index.entries[id] = Entry(size: Int64(bitPattern: size), modified: Double(bitPattern: modified), inode: inode, summary: summary)
            }
            let padded = version == 1 ? reader.atEnd : raw.count == HistoryStore.paddedLength(raw.count) && reader.restIsZero
            return padded ? index : HistoryIndex()
        }
    }

    /// `GVHI`, then the entries sealed with `pair`.
    func encoded(with pair: SealedBox.KeyPair) throws(VaultError) -> [UInt8] {
        var plain: [UInt8] = [Self.version]
        func put<T: FixedWidthInteger>(_ value: T) { withUnsafeBytes(of: value.littleEndian) { plain.append(contentsOf: $0) } }
        func put(_ text: String) {
            put(UInt32(text.utf8.count))
            plain.append(contentsOf: text.utf8)
        }
        put(UInt32(entries.count))
        for (id, entry) in entries.sorted(by: { $0.key < $1.key }) {
            put(id)
            put(UInt64(bitPattern: entry.size))
            put(entry.modified.bitPattern)
            put(entry.inode)
            put(UInt32(clamping: entry.summary.turns))
            put(UInt64(bitPattern: entry.summary.first))
            put(UInt64(bitPattern: entry.summary.last))
            put(entry.summary.title)
            put(entry.summary.model)
            put(entry.summary.kind)
        }
        plain += [UInt8](repeating: 0, count: HistoryStore.paddedLength(plain.count) - plain.count)
        defer { for index in plain.indices { plain[index] = 0 } }
        return Self.magic + (try pair.sealPrivately(plain, purpose: Self.purpose))
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        var atEnd: Bool { offset == bytes.count }
        var restIsZero: Bool { bytes[offset...].allSatisfy { $0 == 0 } }

        mutating func take(_ count: Int) -> UnsafeRawBufferPointer? {
            guard count >= 0, bytes.count - offset >= count else { return nil }
            defer { offset += count }
            return UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])
        }

        mutating func integer<T: FixedWidthInteger>(_: T.Type) -> T? {
            guard let raw = take(MemoryLayout<T>.size) else { return nil }
            var value: T = 0
            withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: raw) }
            return T(littleEndian: value)
        }

        mutating func u8() -> UInt8? { integer(UInt8.self) }
        mutating func u32() -> UInt32? { integer(UInt32.self) }
        mutating func u64() -> UInt64? { integer(UInt64.self) }

        mutating func text() -> String? {
            guard let length = u32(), let raw = take(Int(length)) else { return nil }
            return String(validating: raw, as: UTF8.self)
        }
    }
}

extension HistoryStore {
    /// Every conversation's summary, the one written to least recently first. Only files that
    /// changed since the index was written are opened; `unreadable` hears of each that cannot
    /// be, and the others are still listed.
    public func summaries(with keys: HistoryKeys, unreadable: (String, Failure) -> Void) throws(Failure) -> [ConversationSummary] {
        // The index is sealed under the current key: after a passphrase change it is rebuilt.
        let pair = keys.current
        guard let folder = try openFolder(create: false) else { return [] }
        let files = folder.names(withPrefix: "").filter { $0.hasSuffix(Self.suffix) && !$0.hasPrefix(".") }
            .compactMap { name -> (id: String, status: FileStatus)? in
                guard let status = FileStatus.of(link: folder.path(of: name)) else { return nil }
                return (String(name.dropLast(Self.suffix.count)), status)
            }
            .sorted { ($0.status.modifiedExactly, $0.id) < ($1.status.modifiedExactly, $1.id) }
        let old = HistoryIndex.decode(try? readIndex(in: folder), with: pair)
        var new = HistoryIndex()
        var summaries: [ConversationSummary] = []
        var changed = false
        for (id, status) in files {
            if let entry = old.entries[id], entry.matches(status) {
                new.entries[id] = entry
                summaries.append(entry.summary)
                continue
            }
            do {
                let summary = ConversationSummary(try load(id, with: keys))
                // The size and time read before the load: a turn appended meanwhile is seen next time.
                new.entries[id] = HistoryIndex.Entry(size: status.size, modified: status.modifiedExactly, inode: status.inode, summary: summary)
                summaries.append(summary)
                changed = true
            } catch {
                unreadable(id, error)
            }
        }
        // Unchanged entries all came from the old index, so equal counts mean the same entries.
        if changed || new.entries.count != old.entries.count {
            // A cache: when it cannot be written, the next list reads the files again.
            if let bytes = try? new.encoded(with: pair) {
                try? folder.replace(HistoryIndex.fileName, with: bytes, tempPrefix: ".index.tmp.")
            }
        }
        return summaries
    }

    private func readIndex(in folder: TrustedFolder) throws(Failure) -> [UInt8]? {
        guard let file = try openFile(HistoryIndex.fileName, in: folder, flags: OpenFlags.readOnly) else { return nil }
        do { return try file.readAll(limit: 64 << 20) } catch { throw .damaged(folder.path(of: HistoryIndex.fileName)) }
    }

    /// Removes the index, so a deleted conversation's title does not outlive it there.
    func forgetIndex(in folder: TrustedFolder) {
        _ = folder.remove(HistoryIndex.fileName)
    }
}
