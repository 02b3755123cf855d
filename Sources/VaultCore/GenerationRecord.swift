import SystemIO

/// The highest generation seen for each vault id, kept under `$XDG_STATE_HOME/gemvault/generations/`,
/// so that an old copy restored over a newer vault is noticed.
///
/// Each vault id has one small file holding a fixed-width decimal number; each vault path one
/// holding the number and the id of the vault last seen there. Updates happen under an flock
/// on the file and only ever raise it, unless a rollback is accepted on purpose.
public struct GenerationRecord: Sendable {
    public let directory: String

    public init(stateDirectory: String) { self.directory = stateDirectory + "/gemvault/generations" }

    /// What a record holds: the highest generation, and for a path, the vault id seen there.
    public struct Entry: Equatable, Sendable {
        public let generation: UInt64
        public let vaultID: String?
    }

    /// The highest generation recorded for `id`, or nil when none is.
    public func highestSeen(vaultID: String) throws(VaultError) -> UInt64? { try entry(vaultID)?.generation }

    /// The record named `name` (a vault id, or a path's fingerprint), or nil when there is none.
    public func entry(_ name: String) throws(VaultError) -> Entry? {
        guard let folder = try openFolder(create: false),
              let file = try open(name, in: folder, create: false) else { return nil }
        return try read(file)
    }

    /// Raises the record to `generation`; with `allowLower`, sets it to exactly that. A path's
    /// record also notes `owner`, the id of the vault now there.
    public func record(vaultID name: String, generation: UInt64, owner: String? = nil, allowLower: Bool = false) throws(VaultError) {
        guard let folder = try openFolder(create: true), let file = try open(name, in: folder, create: true) else { return }
        do { try file.lockExclusively() } catch { throw .system(error) }
        if let current = try read(file), current.generation >= generation && !allowLower && (owner == nil || current.vaultID == owner) { return }
        // Fixed width, so a torn write cannot leave a shorter, smaller number.
        let digits = String(generation)
        let line = String(repeating: "0", count: max(0, 20 - digits.count)) + digits + (owner.map { " " + $0 } ?? "") + "\n"
        do { try file.overwrite(Array(line.utf8)) }
        catch { throw .system(error) }
    }

    private func openFolder(create: Bool) throws(VaultError) -> TrustedFolder? {
        do { return create ? try TrustedFolder.create(directory) : try TrustedFolder.open(directory) } catch { throw VaultError(error) }
    }

    private func open(_ vaultID: String, in folder: TrustedFolder, create: Bool) throws(VaultError) -> FileDescriptor? {
        guard vaultID.allSatisfy(\.isHexDigit) else { return nil }
        do {
            return try TrustedFile.open(vaultID, in: folder, requirement: .secret, flags: create ? OpenFlags.readWriteCreate : OpenFlags.readOnly)
        } catch {
            throw VaultError(error)
        }
    }

    private func read(_ file: FileDescriptor) throws(VaultError) -> Entry? {
        let text: String
        do { text = String(decoding: try file.readFromStart(limit: 128), as: UTF8.self) } catch { throw .system(error) }
        let fields = text.trimmedWhitespace.split(separator: " ")
        guard let first = fields.first, let generation = UInt64(first), fields.count <= 2 else { return nil }
        let owner = fields.count == 2 ? String(fields[1]) : nil
        guard owner?.allSatisfy(\.isHexDigit) ?? true else { return nil }
        return Entry(generation: generation, vaultID: owner)
    }
}

/// The one rollback rule, shared by the commands and the session agent: a vault file may not
/// be older than the highest generation seen for its vault id, nor than the one seen at its
/// path; and a vault with another id at a path is reported, not silently adopted. Nothing
/// lowers a record but `--accept-rollback` (or a new vault made on purpose by `init`).
public struct RollbackGuard: Sendable {
    public let record: GenerationRecord
    /// The vault's absolute path.
    public let vaultPath: String
    public let acceptsRollback: Bool

    public init(record: GenerationRecord, vaultPath: String, acceptsRollback: Bool) {
        self.record = record
        self.vaultPath = vaultPath
        self.acceptsRollback = acceptsRollback
    }

    /// The record files `check` reads for `file`: a reader that skips a file it saw unchanged
    /// (the agent) looks at them too, since a record raised since is a change.
    public func recordPaths(for file: VaultFile) -> [String] {
        ([file.vaultIDHex].compactMap { $0 } + [pathName]).map { record.directory + "/" + $0 }
    }

    /// The path's record name: format 1 files have no id, and a path keeps its own record.
    var pathName: String { Sodium.fingerprint(vaultPath) }

    /// Refuses a rolled-back file or another vault; passes anything with `--accept-rollback`.
    public func check(_ file: VaultFile) throws(VaultError) {
        guard !acceptsRollback else { return }
        if let id = file.vaultIDHex, let seen = try record.highestSeen(vaultID: id), file.generation < seen {
            throw .rolledBack(path: vaultPath, generation: file.generation, seen: seen)
        }
        guard let atPath = try record.entry(pathName) else { return }
        if let id = file.vaultIDHex, let owner = atPath.vaultID, owner != id {
            throw .anotherVault(path: vaultPath, found: id, seen: owner)
        }
        if file.generation < atPath.generation, file.vaultIDHex == nil || atPath.vaultID == nil || atPath.vaultID == file.vaultIDHex {
            throw .rolledBack(path: vaultPath, generation: file.generation, seen: atPath.generation)
        }
    }

    /// The generation a save must go above: the highest seen for this vault.
    public func highestSeen(_ file: VaultFile) throws(VaultError) -> UInt64? {
        let byID = try file.vaultIDHex.flatMap { id throws(VaultError) in try record.highestSeen(vaultID: id) }
        let atPath = try record.entry(pathName).flatMap { $0.vaultID == nil || $0.vaultID == file.vaultIDHex ? $0.generation : nil }
        return [byID, atPath].compactMap { $0 }.max()
    }

    /// Records an authenticated file's generation. `newVault` is for a vault made on purpose
    /// at this path (`init`), which replaces the path's record.
    public func remember(_ file: VaultFile, newVault: Bool = false) throws(VaultError) {
        let lowering = acceptsRollback || newVault
        if let id = file.vaultIDHex { try record.record(vaultID: id, generation: file.generation, allowLower: acceptsRollback) }
        try record.record(vaultID: pathName, generation: file.generation, owner: file.vaultIDHex, allowLower: lowering)
    }
}
