import SystemIO
import VaultCore

/// Where swapped pages go, judged from /proc/swaps and sysfs: a dm-crypt device (directly or
/// below LVM) or zram keeps them from the disk in the clear; anything else may not.
public struct SwapArea: Sendable, Equatable {
    public enum Storage: Sendable, Equatable { case encrypted, memory, plain, unknown }

    public let name: String
    public let storage: Storage

    /// The areas in /proc/swaps (`Filename Type Size Used Priority`, spaces escaped as `\040`).
    public static func list(procSwaps: String, sysRoot: String = "/sys") -> [SwapArea] {
        procSwaps.split(separator: "\n").dropFirst().compactMap { line in
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count >= 2 else { return nil }
            let name = String(fields[0]).replacing("\\040", with: " ")
            let block: String?
            if fields[1] == "partition" {
                block = FolderListing.resolved(name).map { String($0.split(separator: "/").last ?? "") }.map { "\(sysRoot)/class/block/\($0)" }
            } else {
                block = FileStatus.of(name).map { "\(sysRoot)/dev/block/\($0.deviceMajor):\($0.deviceMinor)" }
            }
            return SwapArea(name: name, storage: block.map { storage(of: $0, depth: 0) } ?? .unknown)
        }
    }

    /// A block device's storage, following a device-mapper target down to what it sits on.
    static func storage(of block: String, depth: Int) -> Storage {
        let device = String(FolderListing.resolved(block)?.split(separator: "/").last ?? "")
        if device.hasPrefix("zram") { return .memory }
        if let uuid = PlainFile.readText(block + "/dm/uuid"), uuid.hasPrefix("CRYPT-") { return .encrypted }
        let below = FolderListing.entries(block + "/slaves")?.map(\.name) ?? []
        guard !below.isEmpty, depth < 8 else { return FileStatus.of(block) == nil ? .unknown : .plain }
        let found = below.map { storage(of: block + "/slaves/" + $0, depth: depth + 1) }
        return found.allSatisfy { $0 == .encrypted || $0 == .memory } ? .encrypted : .plain
    }
}

extension Doctor {
    /// Swap that is not encrypted, and whether Argon2id's working memory is locked out of it.
    func swapFindings() -> [Finding] {
        let exposed = swapAreas.filter { $0.storage == .plain || $0.storage == .unknown }
        guard !exposed.isEmpty else { return [] }
        let names = exposed.map { $0.storage == .unknown ? "\($0.name) (not known to be encrypted)" : $0.name }.joined(separator: ", ")
        let argon: String
        switch derivationMemory {
        case .lockable:
            argon = "gemvault's secrets and Argon2id's working memory are locked in memory, but other programs' pages (an editor, a shell holding a key) can reach disk"
        case .limited(let limit, let needed):
            argon = "Argon2id's working memory cannot be locked (RLIMIT_MEMLOCK is \(limit >> 10) KiB, a derivation needs \(needed >> 10) KiB), so a page of it, which lets PIN and passphrase guesses be checked quickly, can reach disk"
        }
        return [Finding(check: "swap", message: "swap is not encrypted: \(names); \(argon)",
                        fix: "encrypt swap (a dm-crypt swap with a random key in /etc/crypttab), use zram, or turn swap off (swapoff -a)"
                            + (derivationMemory == .lockable ? "" : "; or raise RLIMIT_MEMLOCK (ulimit -l, LimitMEMLOCK= in a unit, memlock in /etc/security/limits.conf)"))]
    }
}
