import Foundation
import GemvaultTesting
import Testing
@testable import KeyResolution
import Settings
import VaultCore

/// doctor's `swap` check (issue 40 item 15): swap that is not encrypted is reported, with
/// whether Argon2id's working memory can be kept out of it.
@Suite struct SwapCheckTests {
    /// A sysfs tree: dm-1 is dm-crypt, dm-2 an LVM volume on dm-1, dm-3 LVM on sda3, sda2 a
    /// plain partition, zram0 memory; /dev names link to them as udev's do.
    static func machine() throws -> (dev: String, sys: String, folder: TemporaryFolder) {
        let folder = TemporaryFolder("swap")
        let dev = folder.appending("dev"), sys = folder.appending("sys")
        let files = FileManager.default
        for device in ["dm-1", "dm-2", "dm-3", "sda2", "sda3", "zram0"] {
            try files.createDirectory(atPath: "\(sys)/class/block/\(device)/slaves", withIntermediateDirectories: true)
        }
        try files.createDirectory(atPath: "\(dev)/mapper", withIntermediateDirectories: true)
        for device in ["dm-1", "dm-2", "dm-3", "sda2", "zram0"] { _ = files.createFile(atPath: "\(dev)/\(device)", contents: Data()) }
        for (device, uuid) in [("dm-1", "CRYPT-LUKS2-0f1e2d3c-swap"), ("dm-2", "LVM-abc"), ("dm-3", "LVM-def")] {
            try files.createDirectory(atPath: "\(sys)/class/block/\(device)/dm", withIntermediateDirectories: true)
            try Data((uuid + "\n").utf8).write(to: URL(fileURLWithPath: "\(sys)/class/block/\(device)/dm/uuid"))
        }
        try files.createSymbolicLink(atPath: "\(sys)/class/block/dm-2/slaves/dm-1", withDestinationPath: "../../dm-1")
        try files.createSymbolicLink(atPath: "\(sys)/class/block/dm-3/slaves/sda3", withDestinationPath: "../../sda3")
        try files.createSymbolicLink(atPath: "\(dev)/mapper/cryptswap", withDestinationPath: "../dm-1")
        return (dev, sys, folder)
    }

    @Test func eachSwapAreaIsJudgedByWhatItSitsOn() throws {
        let (dev, sys, folder) = try Self.machine()
        _ = folder
        let swaps = """
        Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority
        \(dev)/mapper/cryptswap                         partition\t1048572\t\t0\t\t-2
        \(dev)/dm-2                                      partition\t1048572\t\t0\t\t-3
        \(dev)/dm-3                                      partition\t1048572\t\t0\t\t-4
        \(dev)/sda2                                      partition\t1048572\t\t0\t\t-5
        \(dev)/zram0                                     partition\t1048572\t\t0\t\t100
        \(dev)/gone                                      partition\t1048572\t\t0\t\t-6

        """
        let areas = SwapArea.list(procSwaps: swaps, sysRoot: sys)
        #expect(areas.map(\.storage) == [.encrypted, .encrypted, .plain, .plain, .memory, .unknown])
        #expect(SwapArea.list(procSwaps: "Filename\tType\tSize\tUsed\tPriority\n", sysRoot: sys).isEmpty)
    }

    func doctor(_ areas: [SwapArea], _ memory: DerivationMemory.Lockability) -> Doctor {
        Doctor(paths: Paths(environment: ["HOME": "/nonexistent"]), vaultPath: "/nonexistent/v", environment: [:], settings: nil,
               coreDumpsDisabled: true, swapAreas: areas, derivationMemory: memory)
    }

    @Test func unencryptedSwapIsReportedWithWhetherArgon2sMemoryIsLocked() {
        let limited = DerivationMemory.Lockability.limited(limit: 8 << 20, needed: 272 << 20)
        let safe = [SwapArea(name: "/dev/mapper/cryptswap", storage: .encrypted), SwapArea(name: "/dev/zram0", storage: .memory)]
        #expect(doctor(safe, limited).swapFindings().isEmpty)
        #expect(doctor([], limited).swapFindings().isEmpty)
        let plain = [SwapArea(name: "/dev/sda2", storage: .plain), SwapArea(name: "/swapfile", storage: .unknown)]
        let unlocked = doctor(plain, limited).swapFindings()
        #expect(unlocked.map(\.check) == ["swap"])
        #expect(unlocked[0].message.contains("swap is not encrypted: /dev/sda2, /swapfile (not known to be encrypted)"))
        #expect(unlocked[0].message.contains("Argon2id's working memory cannot be locked (RLIMIT_MEMLOCK is 8192 KiB, a derivation needs 278528 KiB)"))
        #expect(unlocked[0].fix.contains("raise RLIMIT_MEMLOCK"))
        let locked = doctor(plain, .lockable).swapFindings()
        #expect(locked[0].message.contains("Argon2id's working memory are locked in memory") && !locked[0].fix.contains("RLIMIT_MEMLOCK"))
        #expect(Doctor.checks.contains("swap"))
    }
}
