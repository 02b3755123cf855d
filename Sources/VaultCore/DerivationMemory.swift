import Glibc
import Synchronization
import SystemIO

/// Argon2id's working memory (64 to 256 MiB, mapped inside libsodium) locked against swap:
/// its first blocks come from BLAKE2b of the passphrase or PIN alone, so a swapped page would
/// let guesses be checked at BLAKE2b speed. libsodium offers no allocator hook, so while a
/// derivation runs every new mapping is locked (`mlockall(MCL_FUTURE | MCL_ONFAULT)`); after
/// it `munlockall` ends that, and the `sodium_malloc` regions that call also unlocked are
/// locked again. Both ends hold the lock that every secret allocation and free holds.
/// With no swap active, nothing can page the memory out (hibernation writes to swap too), so
/// it is not locked: locking 64 to 256 MiB a page at a time costs a tenth of the derivation.
public enum DerivationMemory {
    /// Whether a derivation needing so many bytes can be locked here, and why not.
    public enum Lockability: Sendable, Equatable {
        case lockable
        /// `RLIMIT_MEMLOCK` leaves less than the derivation needs (bytes).
        case limited(limit: UInt64, needed: UInt64)
    }

    private struct State {
        /// The secret regions from `sodium_malloc` (address, bytes): locked again after `munlockall`.
        /// A list, not a `[UInt: Int]`: a dictionary's first use makes the Swift runtime look its
        /// type up, which cost every command more than the lookups it serves (Docs/performance.md).
        var regions: [(address: UInt, count: Int)] = []
        /// Derivations running now with new mappings locked.
        var lockedDerivations = 0
        /// Derivations that ran locked since the process began, for tests.
        var lockedRuns = 0
        /// Whether swap is taken to be active, for tests (nil: /proc/swaps says).
        var assumedSwap: Bool?
    }

    private static let state = Mutex(State())

    /// CAP_IPC_LOCK (bit 14 of CapEff) lifts the limit.
    static func hasLockCapability(status: String) -> Bool {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("CapEff:") }),
              let field = line.dropFirst("CapEff:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first,
              let mask = UInt64(field, radix: 16) else { return false }
        return mask & (1 << 14) != 0
    }

    /// What the process has locked already (VmLck, KiB in /proc/self/status), in bytes.
    static func lockedBytes(status: String) -> UInt64 {
        guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmLck:") }) else { return 0 }
        let number = line.dropFirst("VmLck:".count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { UInt64($0) } ?? 0
        return number * 1024
    }

    /// Whether `bytes` more can be locked: with CAP_IPC_LOCK or an unlimited or large enough
    /// `RLIMIT_MEMLOCK` (with 16 MiB to spare for the secrets and stacks mapped meanwhile).
    public static func lockability(bytes: UInt64, status: String = PlainFile.readText("/proc/self/status") ?? "",
                                   limit: UInt64? = nil) -> Lockability {
        if hasLockCapability(status: status) { return .lockable }
        let soft: UInt64
        if let limit { soft = limit } else {
            var current = rlimit()
            guard getrlimit(__rlimit_resource_t(__RLIMIT_MEMLOCK.rawValue), &current) == 0 else { return .limited(limit: 0, needed: bytes) }
            soft = current.rlim_cur == rlim_t.max ? .max : UInt64(current.rlim_cur)
        }
        let needed = bytes + lockedBytes(status: status) + (16 << 20)
        return soft == .max || soft >= needed ? .lockable : .limited(limit: soft, needed: needed)
    }

    /// Whether any swap is active: /proc/swaps lists one below its header. Unreadable counts as
    /// active, so the memory is then locked as before.
    static func swapIsActive(swaps: String? = PlainFile.readText("/proc/swaps")) -> Bool {
        guard let swaps else { return true }
        return swaps.split(separator: "\n").count > 1
    }

    /// Runs `body` with new mappings locked when swap is active and the limits allow; tells
    /// `body` whether they are.
    static func withLockedMappings<T, E: Error>(bytes: UInt64, _ body: (Bool) throws(E) -> T) throws(E) -> T {
        guard state.withLock({ $0.assumedSwap }) ?? swapIsActive(), lockability(bytes: bytes) == .lockable, begin() else { return try body(false) }
        defer { end() }
        return try body(true)
    }

    private static func begin() -> Bool {
        state.withLock { state in
            if state.lockedDerivations == 0 {
                guard mlockall(MCL_FUTURE | Int32(MCL_ONFAULT)) == 0 else { return false }
            }
            state.lockedDerivations += 1
            state.lockedRuns += 1
            return true
        }
    }

    private static func end() {
        state.withLock { state in
            state.lockedDerivations -= 1
            guard state.lockedDerivations == 0 else { return }
            munlockall()
            for region in state.regions {
                _ = mlock(UnsafeRawPointer(bitPattern: region.address), region.count)
            }
        }
    }

    static var lockedRunsForTests: Int { state.withLock { $0.lockedRuns } }

    /// Runs `body` as if swap were active or not (tests: the machine may have none).
    static func assumingSwap<T>(_ active: Bool, _ body: () throws -> T) rethrows -> T {
        state.withLock { $0.assumedSwap = active }
        defer { state.withLock { $0.assumedSwap = nil } }
        return try body()
    }

    /// `allocate` under the lock, so no region is made between `munlockall` and the re-locking.
    static func allocate(_ make: () -> UnsafeMutableRawPointer?, count: Int) -> UnsafeMutableRawPointer? {
        state.withLock { state in
            guard let pointer = make() else { return nil }
            state.regions.append((UInt(bitPattern: pointer), max(count, 1)))
            return pointer
        }
    }

    static func free(_ pointer: UnsafeMutableRawPointer, _ release: (UnsafeMutableRawPointer) -> Void) {
        state.withLock { state in
            // The newest are freed first, as a rule: looked for from the end, its place taken by the last.
            if let index = state.regions.lastIndex(where: { $0.address == UInt(bitPattern: pointer) }) {
                state.regions.swapAt(index, state.regions.count - 1)
                state.regions.removeLast()
            }
            release(pointer)
        }
    }
}
