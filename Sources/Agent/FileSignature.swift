import Glibc

/// What lstat says of the vault file and its generation records (device, inode, size, mode,
/// owner, modification and change times): while it is the same, the file the agent holds is
/// the file on disk and need not be read, parsed and checked again before an answer. A file
/// changed within the last `settle` seconds gives no signature, since the kernel's clock for
/// file times is coarse (a few ms): two writes within one tick could look alike.
struct FileSignature: Equatable {
    static let settle = 0.05

    private let parts: [[Int]]

    init?(paths: [String]) {
        var clock = timespec()
        clock_gettime(CLOCK_REALTIME, &clock)
        let now = Double(clock.tv_sec) + Double(clock.tv_nsec) / 1e9
        var parts: [[Int]] = []
        for path in paths {
            var info = stat()
            guard lstat(path, &info) == 0 else {
                // A record not made yet: its appearing later is a change.
                parts.append([])
                continue
            }
            let changed = Double(info.st_ctim.tv_sec) + Double(info.st_ctim.tv_nsec) / 1e9
            if now - changed < Self.settle { return nil }
            parts.append([Int(info.st_dev), Int(info.st_ino), Int(info.st_size), Int(info.st_mode), Int(info.st_uid),
                          info.st_mtim.tv_sec, info.st_mtim.tv_nsec, info.st_ctim.tv_sec, info.st_ctim.tv_nsec])
        }
        self.parts = parts
    }
}
