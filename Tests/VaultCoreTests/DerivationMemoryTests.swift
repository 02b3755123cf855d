import Glibc
import Testing
@testable import VaultCore

/// Argon2id's working memory is locked against swap where the limits allow (issue 40 item 15),
/// and locking it leaves every secret allocation locked as before.
@Suite(.serialized) struct DerivationMemoryTests {
    /// The `Locked:` kB of the mapping that holds `address`, from /proc/self/smaps.
    static func lockedKiB(at address: UnsafeRawPointer) -> Int? {
        guard let smaps = try? String(decoding: readAll("/proc/self/smaps"), as: UTF8.self) else { return nil }
        let target = UInt(bitPattern: address)
        var inside = false
        for line in smaps.split(separator: "\n") {
            if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
               let low = UInt(line[..<dash], radix: 16), let high = UInt(line[line.index(after: dash)..<space], radix: 16) {
                inside = (low..<high).contains(target)
            } else if inside, line.hasPrefix("Locked:") {
                return line.split(separator: " ").dropFirst().first.flatMap { Int($0) }
            }
        }
        return nil
    }

    static func readAll(_ path: String) throws -> [UInt8] {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw Errno(errno) }
        defer { close(fd) }
        var bytes: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let got = read(fd, &buffer, buffer.count)
            guard got > 0 else { break }
            bytes += buffer[0..<got]
        }
        return bytes
    }

    struct Errno: Error { let code: Int32; init(_ code: Int32) { self.code = code } }

    @Test func theLimitDecidesAndTheCapabilityLiftsIt() {
        let plain = "Name:\tgemvault\nVmLck:\t     128 kB\nCapEff:\t0000000000000000\n"
        let capable = "VmLck:\t       0 kB\nCapEff:\t000001fffeffffff\n"
        let moderate: UInt64 = 256 << 20
        #expect(DerivationMemory.lockability(bytes: moderate, status: plain, limit: 8 << 20)
                == .limited(limit: 8 << 20, needed: moderate + (128 << 10) + (16 << 20)))
        #expect(DerivationMemory.lockability(bytes: moderate, status: plain, limit: .max) == .lockable)
        #expect(DerivationMemory.lockability(bytes: moderate, status: plain, limit: 1 << 30) == .lockable)
        #expect(DerivationMemory.lockability(bytes: moderate, status: capable, limit: 64 << 10) == .lockable)
    }

    /// While a derivation runs, a new mapping (as libsodium's for Argon2) is locked; afterwards
    /// the secrets made before and during it are still locked.
    @Test(.enabled(if: DerivationMemory.lockability(bytes: 4 << 20) == .lockable, "needs CAP_IPC_LOCK or RLIMIT_MEMLOCK above 20 MiB"))
    func newMappingsAreLockedAndSecretsStayLocked() throws {
        let before = SecretBytes.random(count: 32)
        var during: SecretBytes?
        let size = 4 << 20
        let wasLocked = DerivationMemory.assumingSwap(true) {
            DerivationMemory.withLockedMappings(bytes: UInt64(size)) { locked in
                let mapping = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)!
                defer { munmap(mapping, size) }
                memset(mapping, 1, size)
                #expect(Self.lockedKiB(at: mapping) ?? 0 >= size / 1024, "the new mapping is not locked")
                during = SecretBytes.random(count: 32)
                return locked
            }
        }
        #expect(wasLocked)
        #expect(before.withUnsafeBytes { Self.lockedKiB(at: $0.baseAddress!) } ?? 0 > 0, "a secret made before was unlocked")
        #expect(during!.withUnsafeBytes { Self.lockedKiB(at: $0.baseAddress!) } ?? 0 > 0, "a secret made during was unlocked")
    }

    /// Every Argon2id run (here a slot's key) goes through the lock.
    @Test(.enabled(if: DerivationMemory.lockability(bytes: 8 << 10) == .lockable, "needs CAP_IPC_LOCK or RLIMIT_MEMLOCK above 16 MiB"))
    func argon2RunsWithItsMemoryLocked() throws {
        let runs = DerivationMemory.lockedRunsForTests
        _ = try DerivationMemory.assumingSwap(true) {
            try KeySlot.derive(SecretBytes(utf8: "correct horse"), salt: Sodium.randomBytes(Sodium.pwhashSaltBytes), kdf: .testingMinimum)
        }
        #expect(DerivationMemory.lockedRunsForTests > runs)
    }

    /// With no swap, nothing can page Argon2id's memory out: it is not locked (whose cost is a
    /// tenth of the derivation).
    @Test func withoutSwapArgon2RunsUnlocked() throws {
        let runs = DerivationMemory.lockedRunsForTests
        _ = try DerivationMemory.assumingSwap(false) {
            try KeySlot.derive(SecretBytes(utf8: "correct horse"), salt: Sodium.randomBytes(Sodium.pwhashSaltBytes), kdf: .testingMinimum)
        }
        #expect(DerivationMemory.lockedRunsForTests == runs)
    }

    /// /proc/swaps: a header alone is no swap; a line below it is; unreadable counts as swap.
    @Test func swapIsReadFromProcSwaps() {
        let header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n"
        #expect(!DerivationMemory.swapIsActive(swaps: header))
        #expect(DerivationMemory.swapIsActive(swaps: header + "/swapfile                               file\t\t2097148\t\t0\t\t-2\n"))
        #expect(DerivationMemory.swapIsActive(swaps: nil))
    }
}
