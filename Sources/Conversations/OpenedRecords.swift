import Dispatch
import FoundationEssentials
import Glibc
import VaultCore

/// A run of a conversation file's records, opened into one guarded allocation and parsed.
/// A sodium_malloc of its own per record cost more than the record's X25519 (four system calls
/// for the guard pages, then freeing them); a long run is opened and parsed on every core,
/// since each sealed box's X25519 and its JSON are then most of what is left. What depends on
/// the records before (numbering by the old, unnumbered kind) is left to the reader, in order.
struct OpenedRecords {
    /// Each record as `HistoryStore.parseRecord` reads it when nothing chained came before,
    /// or nil for a record that did not open.
    let parsed: [Result<(HistoryRecord, Bool), HistoryStore.RecordProblem>?]
    /// Whether each record's plaintext is the old, bare-JSON kind.
    let unnumbered: [Bool]
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

    /// The records at `positions` of a file whose records are `ranges` (the header first);
    /// `tryingFirst` is the index in `keys.all` of the key to try first. Records come in runs
    /// sealed to one key, so the key that opened the record before is tried first.
    init(_ positions: Range<Int>, of ranges: [Range<Int>], in file: [UInt8], with keys: HistoryKeys, tryingFirst firstKey: Int,
         cores: Int = Self.onlineCores) {
        let overhead = SealedBox.overhead
        var total = 0
        let places = positions.map { position in
            let length = max(ranges[position].count - overhead, 0)
            defer { total += length }
            return total..<total + length
        }
        let memory = SecretBytes(count: max(total, 1))
        var parsed = [Result<(HistoryRecord, Bool), HistoryStore.RecordProblem>?](repeating: nil, count: positions.count)
        var unnumbered = [Bool](repeating: false, count: positions.count)
        var openedWith = [Int](repeating: -1, count: positions.count)
        let chunks = positions.count >= Self.parallelFrom ? max(1, cores) : 1
        file.withUnsafeBytes { raw in
            memory.withUnsafeMutableBytes { out in
                parsed.withUnsafeMutableBufferPointer { parsed in
                    unnumbered.withUnsafeMutableBufferPointer { unnumbered in
                        openedWith.withUnsafeMutableBufferPointer { openedWith in
                            // Each chunk writes only its own records' places and results.
                            let shared = Shared(file: raw, out: out, parsed: parsed, unnumbered: unnumbered, openedWith: openedWith)
                            let openChunk: @Sendable (Int) -> Void = { chunk in
                                let decoder = JSONDecoder()
                                var key = firstKey
                                for index in positions.count * chunk / chunks..<positions.count * (chunk + 1) / chunks {
                                    let position = positions.lowerBound + index
                                    let sealed = UnsafeRawBufferPointer(rebasing: shared.file[ranges[position]])
                                    guard sealed.count > overhead else { continue }
                                    let target = UnsafeMutableRawBufferPointer(rebasing: shared.out[places[index]])
                                    var opened = SealedBox.open(sealed, with: keys.all[key], into: target)
                                    for other in keys.all.indices where !opened && other != key {
                                        opened = SealedBox.open(sealed, with: keys.all[other], into: target)
                                        if opened { key = other }
                                    }
                                    guard opened else { continue }
                                    shared.openedWith[index] = key
                                    let plain = UnsafeRawBufferPointer(target)
                                    shared.unnumbered[index] = plain.first == UInt8(ascii: "{")
                                    shared.parsed[index] = HistoryStore.parseRecord(plain, position: position, previous: file[ranges[position - 1]],
                                                                                    chained: false, decoder: decoder)
                                }
                            }
                            if chunks == 1 { openChunk(0) } else { DispatchQueue.concurrentPerform(iterations: chunks, execute: openChunk) }
                        }
                    }
                }
            }
        }
        self.parsed = parsed
        self.unnumbered = unnumbered
        lastKey = openedWith.last { $0 >= 0 }
    }

    private struct Shared: @unchecked Sendable {
        let file: UnsafeRawBufferPointer
        let out: UnsafeMutableRawBufferPointer
        let parsed: UnsafeMutableBufferPointer<Result<(HistoryRecord, Bool), HistoryStore.RecordProblem>?>
        let unnumbered: UnsafeMutableBufferPointer<Bool>
        let openedWith: UnsafeMutableBufferPointer<Int>
    }
}
