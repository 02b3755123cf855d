import FoundationEssentials
import SystemIO
import VaultAccess
import VaultCore

/// One hands-off rotation of a vault key at a time (`--create`, `--undo`, `rm --revoke`),
/// across processes and whether the vault is reached through a session or not: an flock on a
/// file in this user's state folder, named by the vault and the key. The kernel lets go of it
/// when its holder dies, so a `kill -9` never leaves the key stuck. The file also says what
/// its holder is in the middle of, so that the next holder can finish a run that was killed.
final class RotationJournal {
    /// What a run will have done once its vault write is made (Google key ids, never a key).
    /// What kind of run wrote the record; stored as the words gemvault has always written.
    enum Action: String, Codable, Sendable, CustomStringConvertible {
        case rotation
        case undo = "--undo"

        /// The word the messages use ("the last rotation of …", "an interrupted --undo of …").
        var description: String { rawValue }
    }

    struct Intent: Codable, Equatable {
        var action: Action
        /// The key this run makes at Google (`projects/P/locations/global/keys/ID`): a leftover
        /// to delete when the write never happened.
        var made: String?
        /// The Google key the vault's current value has once the write happened.
        var current: String
        /// The Google key to delete once the write happened; nil with `--keep-old`.
        var retire: String?
        /// A linked key's secret (`projects/P/secrets/S`), when the run goes through it.
        var secret: String?
        /// The version this run added to the secret, once Secret Manager answered.
        var added: UInt64?
        /// True from just before the version is added: a run killed then may have added one.
        var adding: Bool?
    }

    /// No rotation runs longer: the new key's check waits at most an hour, Google's operations
    /// two minutes each. A key made for this vault that is younger may be another machine's
    /// rotation in progress (a synced vault), so it is never taken for a leftover.
    static let longestRun: Int64 = 2 * 3600

    private let lock: FileLock
    private let name: String
    /// The run a killed holder left unfinished, read when the lock was taken.
    let interrupted: Intent?

    private let progress: any RotationProgress

    private init(lock: FileLock, name: String, interrupted: Intent?, progress: any RotationProgress) {
        self.progress = progress
        self.lock = lock
        self.name = name
        self.interrupted = interrupted
    }

    /// Waits (saying so) while another rotation of the same key runs.
    static func take(_ vault: VaultAccess, stateHome: String, vaultTag: String, name: String, progress: any RotationProgress) throws -> RotationJournal {
        let folder: TrustedFolder
        do { folder = try TrustedFolder.create(stateHome + "/gemvault/rotations") } catch { throw VaultError(error) }
        let lock: FileLock
        do {
            lock = try vault.acquireGuardingLock(Sodium.fingerprint(vaultTag + "\u{0}" + name) + ".lock", in: folder, timeout: Double(longestRun),
                                                 onWait: { progress.note("another rotation of '\(name)' is running (\($0)); waiting for it to end") })
        } catch {
            throw VaultError(error)
        }
        var intent: Intent?
        let record = (try? lock.record()) ?? []
        if !record.isEmpty {
            intent = try? JSONDecoder().decode(Intent.self, from: Data(record))
            if intent == nil { progress.warning("the record of an interrupted rotation of '\(name)' is damaged; it is ignored") }
        }
        return RotationJournal(lock: lock, name: name, interrupted: intent, progress: progress)
    }

    /// Written (durably) before the step that makes it true can begin.
    func begin(_ intent: Intent) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        try lock.keep(Array(try encoder.encode(intent)))
    }

    /// The run is complete: nothing for the next holder to finish.
    func end() {
        do { try lock.keep([]) } catch {
            progress.warning("could not clear the rotation record of '\(name)': \(error); the next rotation will check it again")
        }
    }
}
