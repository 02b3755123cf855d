import VaultCore

/// What the fuzzers (Fuzz/) and the corpus replay tests drive through the history's parsers.
/// Each check returns the property the input broke, or nil.
public enum HistoryFuzzing {

    /// The first byte picks what the rest is: a conversation file as stored (0), records whose
    /// plaintext is sealed here so that decoding them is reached (1), or an index's plaintext (2).
    public static func check(_ bytes: [UInt8]) -> String? {
        // One fixed conversation key pair, so that inputs can reach past the seal.
        guard let mode = bytes.first,
              let pair = try? SealedBox.keyPair(seed: SecretBytes(copying: [UInt8](repeating: 0x42, count: 32))) else { return nil }
        let rest = Array(bytes.dropFirst())
        switch mode % 3 {
        case 0:
            _ = try? HistoryStore.decode(rest, id: "fuzz", path: "fuzz", with: HistoryKeys([pair]))
        case 1:
            // Half the inputs are taken as JSON bodies and framed as a writer would, so that the
            // chain and numbering checks pass and the JSON is reached; the rest as raw plaintexts.
            let header = HistoryStore.fileMagic + pair.publicKey
            var file = HistoryStore.framed(header)
            var previous = header
            for (position, record) in HistoryStore.split(rest).enumerated() {
                let plain = bytes.count % 2 == 0 ? HistoryStore.recordPlaintext(record, sequence: UInt64(position + 1), previous: Sodium.blake2b256(previous[...])) : record
                guard let sealed = try? SealedBox.seal(plain, to: pair.publicKey) else { return "sealing failed" }
                file += HistoryStore.framed(sealed)
                previous = sealed
            }
            _ = try? HistoryStore.decode(file, id: "fuzz", path: "fuzz", with: HistoryKeys([pair]))
        default:
            guard let sealed = try? pair.sealPrivately(rest, purpose: HistoryIndex.purpose) else { return "sealing failed" }
            let index = HistoryIndex.decode(HistoryIndex.magic + sealed, with: pair)
            guard !index.entries.isEmpty else { return nil }
            guard let encoded = try? index.encoded(with: pair) else { return "an index that decodes does not encode" }
            let again = HistoryIndex.decode(encoded, with: pair)
            return again.entries.mapValues(\.summary) == index.entries.mapValues(\.summary) ? nil : "an index changes when encoded and decoded again"
        }
        return nil
    }
}
