import SystemIO

/// The highest generation seen for each vault id, kept under `$XDG_STATE_HOME/gemvault/generations/`,
/// so that an old copy restored over a newer vault is noticed.
///
/// Each vault id has one small file holding a fixed-width decimal number. Updates happen
/// under an flock on that file and only ever raise it, unless a rollback is accepted on purpose.
public struct GenerationRecord: Sendable {
    public let directory: String

    public init(stateDirectory: String) { self.directory = stateDirectory + "/gemvault/generations" }

    /// The highest generation recorded for `id`, or nil when none is.
    public func highestSeen(vaultID: String) throws(VaultError) -> UInt64? {
        guard let folder = try openFolder(create: false),
              let file = try open(vaultID, in: folder, create: false) else { return nil }
        return try read(file)
    }

    /// Raises the record to `generation`; with `allowLower`, sets it to exactly that.
    public func record(vaultID: String, generation: UInt64, allowLower: Bool = false) throws(VaultError) {
        guard let folder = try openFolder(create: true), let file = try open(vaultID, in: folder, create: true) else { return }
        do { try file.lockExclusively() } catch { throw .system(error) }
        if let current = try read(file), current >= generation && !allowLower { return }
        // Fixed width, so a torn write cannot leave a shorter, smaller number.
        let digits = String(generation)
        do { try file.overwrite(Array((String(repeating: "0", count: max(0, 20 - digits.count)) + digits + "\n").utf8)) }
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

    private func read(_ file: FileDescriptor) throws(VaultError) -> UInt64? {
        do {
            return UInt64(String(decoding: try file.readFromStart(limit: 64), as: UTF8.self).trimmedWhitespace)
        } catch {
            throw .system(error)
        }
    }
}
