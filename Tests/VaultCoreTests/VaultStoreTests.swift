import Foundation
import Glibc
import Testing
@testable import VaultCore

@Suite struct VaultStoreTests {
    private func temporaryDirectory() -> String {
        var template = Array((NSTemporaryDirectory() + "/gemvault-store-XXXXXX").utf8CString)
        return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
    }

    @Test func atomicWriteCreatesPrivateFilesAndKeepsBackup() throws {
        let directory = temporaryDirectory() + "/nested/gemvault"
        let store = VaultStore(path: directory + "/vault")
        try store.withExclusiveLock { try store.writeAtomically([1, 2, 3]) }
        try store.withExclusiveLock { try store.writeAtomically([4, 5]) }
        #expect(try store.read() == [4, 5])
        #expect(FileSecurity.mode(of: store.path) == 0o600)
        #expect(FileSecurity.mode(of: store.backupPath) == 0o600)
        #expect(FileSecurity.mode(of: directory) == 0o700)
        #expect(try VaultStore(path: store.backupPath).read() == [1, 2, 3])
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0.contains(".tmp") }.isEmpty)
    }

    @Test func loosePermissionsAndSymlinksAreRefused() throws {
        let directory = temporaryDirectory()
        let store = VaultStore(path: directory + "/vault")
        try store.writeAtomically([9])
        chmod(store.path, 0o644)
        #expect {
            try store.read()
        } throws: { error in
            guard case VaultError.insecureFile(_, _, let fix) = error else { return false }
            return fix == "chmod 600 \(store.path)"
        }
        chmod(store.path, 0o600)
        symlink(store.path, directory + "/link")
        #expect {
            try VaultStore(path: directory + "/link").read()
        } throws: { error in
            guard case VaultError.insecureFile(_, let problem, _) = error else { return false }
            return problem.contains("symbolic link")
        }
    }

    @Test func missingVaultIsNotFound() throws {
        let store = VaultStore(path: temporaryDirectory() + "/absent")
        #expect(try store.readIfPresent() == nil)
        #expect(throws: VaultError.notFound(path: store.path)) { try store.read() }
    }

    @Test func shellQuotingOfPathsInFixes() {
        #expect(FileSecurity.shellQuoted("/home/a/vault") == "/home/a/vault")
        #expect(FileSecurity.shellQuoted("/home/a b/it's") == "'/home/a b/it'\\''s'")
    }

    @Test func coreDumpsCanBeDisabled() {
        #expect(ProcessHardening.disableCoreDumps())
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)
        #expect(limit.rlim_cur == 0 && limit.rlim_max == 0)
        #expect(!ProcessHardening.isDumpable)
    }
}
