import Dispatch
import Glibc
import VaultCore

/// Every record of a conversation file opened into one guarded allocation. A sodium_malloc of
/// its own per record cost more than the record's X25519 (four system calls for the guard
/// pages, then freeing them); a long conversation is opened on every core, since the X25519
/// of each sealed box is then most of what is left.
struct OpenedRecords {
    /// All the plaintexts, one after another.
    let memory: SecretBytes
    /// Where each record's plaintext is in `memory`, or nil for a record that did not open.
    let plaintext: [Range<Int>?]

    /// Records from this many on are split between the cores; below, threads cost more than they save.
    static let parallelFrom = 64

    /// `records` are ranges of `file`; `tryingFirst` is the index in `keys.all` of the key the
    /// file began under. Records come in runs sealed to one key, so the key that opened the
    /// record before is tried first.
    init(_ records: [Range<Int>], of file: [UInt8], with keys: HistoryKeys, tryingFirst firstKey: Int) {
        let overhead = SealedBox.overhead
        var total = 0
        let places = records.map { record in
            let length = max(record.count - overhead, 0)
            defer { total += length }
            return total..<total + length
        }
        let memory = SecretBytes(count: max(total, 1))
        var opened = [Bool](repeating: false, count: records.count)
        let chunks = records.count >= Self.parallelFrom ? max(1, min(Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))), 8)) : 1
        file.withUnsafeBytes { file in
            memory.withUnsafeMutableBytes { out in
                opened.withUnsafeMutableBufferPointer { opened in
                    // Each chunk writes only its own records' places and flags.
                    let shared = Shared(file: file, out: out, opened: opened)
                    let openChunk: @Sendable (Int) -> Void = { chunk in
                        var key = firstKey
                        for index in records.count * chunk / chunks..<records.count * (chunk + 1) / chunks {
                            let sealed = UnsafeRawBufferPointer(rebasing: shared.file[records[index]])
                            guard sealed.count > overhead else { continue }
                            let target = UnsafeMutableRawBufferPointer(rebasing: shared.out[places[index]])
                            if SealedBox.open(sealed, with: keys.all[key], into: target) {
                                shared.opened[index] = true
                                continue
                            }
                            for other in keys.all.indices where other != key && SealedBox.open(sealed, with: keys.all[other], into: target) {
                                key = other
                                shared.opened[index] = true
                                break
                            }
                        }
                    }
                    if chunks == 1 { openChunk(0) } else { DispatchQueue.concurrentPerform(iterations: chunks, execute: openChunk) }
                }
            }
        }
        self.memory = memory
        plaintext = zip(places, opened).map { $1 ? $0 : nil }
    }

    private struct Shared: @unchecked Sendable {
        let file: UnsafeRawBufferPointer
        let out: UnsafeMutableRawBufferPointer
        let opened: UnsafeMutableBufferPointer<Bool>
    }
}
