import Dispatch
import Glibc
import VaultCore

/// A run of a conversation file's records opened into one guarded allocation. A sodium_malloc
/// of its own per record cost more than the record's X25519 (four system calls for the guard
/// pages, then freeing them); a long run is opened on every core, since the X25519 of each
/// sealed box is then most of what is left.
struct OpenedRecords {
    /// All the plaintexts, one after another.
    let memory: SecretBytes
    /// Where each record's plaintext is in `memory`, or nil for a record that did not open.
    let plaintext: [Range<Int>?]
    /// The index in `keys.all` of the key that opened the last record that opened.
    let lastKey: Int?

    /// Runs from this many records on are split between the cores; below, threads cost more than they save.
    static let parallelFrom = 64
    /// A file is opened in runs of about this many bytes: memory stays small enough to be
    /// locked, and a record that does not open early in a file costs only its run.
    static let runBytes = 1 << 20

    static var onlineCores: Int { max(1, min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 8)) }

    /// The runs of `records` that `init` takes, in order: each about `runBytes`, at least one record.
    static func runs(_ records: Range<Int>, sizes: (Int) -> Int) -> [Range<Int>] {
        var runs: [Range<Int>] = []
        var start = records.lowerBound
        while start < records.upperBound {
            var end = start + 1
            var bytes = sizes(start)
            while end < records.upperBound, bytes + sizes(end) <= runBytes {
                bytes += sizes(end)
                end += 1
            }
            runs.append(start..<end)
            start = end
        }
        return runs
    }

    /// `records` are ranges of `file`; `tryingFirst` is the index in `keys.all` of the key to try
    /// first. Records come in runs sealed to one key, so the key that opened the record before
    /// is tried first.
    init(_ records: [Range<Int>], of file: [UInt8], with keys: HistoryKeys, tryingFirst firstKey: Int, cores: Int = Self.onlineCores) {
        let overhead = SealedBox.overhead
        var total = 0
        let places = records.map { record in
            let length = max(record.count - overhead, 0)
            defer { total += length }
            return total..<total + length
        }
        let memory = SecretBytes(count: max(total, 1))
        var openedWith = [Int](repeating: -1, count: records.count)
        let chunks = records.count >= Self.parallelFrom ? max(1, cores) : 1
        file.withUnsafeBytes { file in
            memory.withUnsafeMutableBytes { out in
                openedWith.withUnsafeMutableBufferPointer { openedWith in
                    // Each chunk writes only its own records' places and keys.
                    let shared = Shared(file: file, out: out, openedWith: openedWith)
                    let openChunk: @Sendable (Int) -> Void = { chunk in
                        var key = firstKey
                        for index in records.count * chunk / chunks..<records.count * (chunk + 1) / chunks {
                            let sealed = UnsafeRawBufferPointer(rebasing: shared.file[records[index]])
                            guard sealed.count > overhead else { continue }
                            let target = UnsafeMutableRawBufferPointer(rebasing: shared.out[places[index]])
                            if SealedBox.open(sealed, with: keys.all[key], into: target) {
                                shared.openedWith[index] = key
                                continue
                            }
                            for other in keys.all.indices where other != key && SealedBox.open(sealed, with: keys.all[other], into: target) {
                                key = other
                                shared.openedWith[index] = other
                                break
                            }
                        }
                    }
                    if chunks == 1 { openChunk(0) } else { DispatchQueue.concurrentPerform(iterations: chunks, execute: openChunk) }
                }
            }
        }
        self.memory = memory
        plaintext = zip(places, openedWith).map { $1 >= 0 ? $0 : nil }
        lastKey = openedWith.last { $0 >= 0 }
    }

    private struct Shared: @unchecked Sendable {
        let file: UnsafeRawBufferPointer
        let out: UnsafeMutableRawBufferPointer
        let openedWith: UnsafeMutableBufferPointer<Int>
    }
}
