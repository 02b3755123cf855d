import Foundation
import GemvaultTesting
import Glibc
import SystemIO
import Testing
@testable import VaultCore

@Suite struct VaultStoreTests {
    /// Removed when the test ends.
    let scratch = TemporaryFolder("store")
    private func temporaryDirectory() -> String { scratch.newFolder() }

    private func write(_ store: VaultStore, _ bytes: [UInt8], backup: VaultStore.Backup = .previous) throws {
        try store.withExclusiveLock { session in try store.write(bytes, in: session, backup: backup) }
    }

    @Test func atomicWriteCreatesPrivateFilesAndKeepsBackup() throws {
        let directory = temporaryDirectory() + "/nested/gemvault"
        let store = VaultStore(path: directory + "/vault")
        try write(store, [1, 2, 3])
        try write(store, [4, 5])
        #expect(try store.read() == [4, 5])
        #expect(FileStatus.of(store.path)?.permissions == 0o600)
        #expect(FileStatus.of(store.backupPath)?.permissions == 0o600)
        #expect(FileStatus.of(directory)?.permissions == 0o700)
        #expect(try store.readBackup() == [1, 2, 3])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp") }.isEmpty)
    }

    @Test func aRekeyMakesTheBackupTheNewVault() throws {
        let store = VaultStore(path: temporaryDirectory() + "/vault")
        try write(store, [1])
        try write(store, [2])
        try write(store, [3], backup: .new)
        #expect(try store.readBackup() == [3])
        try write(store, [4], backup: .unchanged)
        #expect(try store.readBackup() == [3])
    }

    @Test func tempFilesOfKilledWritersAreRemovedByTheNextWriter() throws {
        let directory = temporaryDirectory()
        let store = VaultStore(path: directory + "/vault")
        _ = FileManager.default.createFile(atPath: directory + "/.vault.tmp.123.abc", contents: Data([1]))
        _ = FileManager.default.createFile(atPath: directory + "/.other.tmp.1.x", contents: Data([1]))
        try write(store, [1])
        #expect(!FileManager.default.fileExists(atPath: directory + "/.vault.tmp.123.abc"))
        #expect(FileManager.default.fileExists(atPath: directory + "/.other.tmp.1.x"))
    }

    @Test func loosePermissionsSymlinksAndOpenFoldersAreRefused() throws {
        let directory = temporaryDirectory()
        let store = VaultStore(path: directory + "/vault")
        try write(store, [9])
        chmod(store.path, 0o644)
        #expect(throws: VaultError.refused(FileCheckFailure(path: store.path, problem: .openToOthers(mode: "0644")))) { try store.read() }
        chmod(store.path, 0o600)
        symlink(store.path, directory + "/link")
        #expect(throws: VaultError.refused(FileCheckFailure(path: directory + "/link", problem: .symbolicLink))) {
            try VaultStore(path: directory + "/link").read()
        }
        chmod(directory, 0o777)
        #expect(throws: VaultError.refused(FileCheckFailure(path: directory, problem: .folderWritableByOthers(mode: "0777")))) {
            try store.read()
        }
    }

    @Test func missingVaultIsNotFound() throws {
        let store = VaultStore(path: temporaryDirectory() + "/absent")
        #expect(try store.readIfPresent() == nil)
        #expect(throws: VaultError.notFound(path: store.path)) { try store.read() }
    }

    @Test func aHeldLockIsWaitedForWithABound() throws {
        let store = VaultStore(path: temporaryDirectory() + "/vault", lockTimeout: 0.3)
        try store.withExclusiveLock { _ in
            var told: [String] = []
            #expect {
                try store.withExclusiveLock(onWait: { told.append($0) }) { _ in }
            } throws: { error in
                guard case VaultError.lockTimedOut(let path, _, let holder) = error else { return false }
                return path == store.lockPath && holder?.hasPrefix("pid \(getpid())") == true
            }
            #expect(told.count == 1 && told[0].contains("held by pid \(getpid())"))
        }
    }

    @Test func generationRecordOnlyRises() throws {
        let record = GenerationRecord(stateDirectory: temporaryDirectory())
        #expect(try record.highestSeen(vaultID: "ab12") == nil)
        try record.record(vaultID: "ab12", generation: 7)
        try record.record(vaultID: "ab12", generation: 5)
        #expect(try record.highestSeen(vaultID: "ab12") == 7)
        try record.record(vaultID: "ab12", generation: 5, allowLower: true)
        #expect(try record.highestSeen(vaultID: "ab12") == 5)
    }

    @Test func coreDumpsCanBeDisabled() {
        #expect(ProcessHardening.disableCoreDumps())
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        #expect(limit.rlim_cur == 0 && limit.rlim_max == 0)
        #expect(!ProcessHardening.isDumpable)
    }
}
