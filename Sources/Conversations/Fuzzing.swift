import TerminalIO
import VaultCore

/// What the fuzzers (Fuzz/) and the corpus replay tests drive through the history's parsers
/// and the markdown renderer. Each check returns the property the input broke, or nil.
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

public enum MarkdownFuzzing {
    /// A reply rendered whole and as a stream cut where the input says: neither may carry an
    /// escape sequence other than the renderer's own colours (`ESC [ digits and ; m`).
    public static func check(_ bytes: [UInt8]) -> String? {
        guard let cut = bytes.first else { return nil }
        let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
        let whole = MarkdownRenderer(styled: true).render(text)
        if let problem = foreignEscape(in: whole) { return "rendered: " + problem }
        let stream = MarkdownStream(renderer: MarkdownRenderer(styled: true))
        var streamed = ""
        var piece = ""
        for (offset, character) in text.enumerated() {
            piece.append(character)
            if offset % (Int(cut % 16) + 1) == 0 {
                streamed += stream.feed(piece)
                piece = ""
            }
        }
        streamed += stream.feed(piece) + stream.finish()
        if let problem = foreignEscape(in: streamed) { return "streamed: " + problem }
        if MarkdownRenderer(styled: false).render(text).utf8.contains(0x1B) { return "unstyled output holds an escape" }
        return nil
    }

    /// What in `output` is not text, a newline, a tab or one of the renderer's colours.
    public static func foreignEscape(in output: String) -> String? {
        let bytes = Array(output.utf8)
        var index = 0
        while let escape = bytes[index...].firstIndex(of: 0x1B) {
            var end = escape + 1
            guard end < bytes.count, bytes[end] == UInt8(ascii: "[") else { return "a bare escape at byte \(escape)" }
            end += 1
            while end < bytes.count, bytes[end] == UInt8(ascii: ";") || (0x30...0x39).contains(bytes[end]) { end += 1 }
            guard end < bytes.count, bytes[end] == UInt8(ascii: "m") else { return "a control sequence that is not a colour at byte \(escape)" }
            index = end + 1
        }
        for scalar in output.unicodeScalars {
            switch scalar.value {
            case 0x09, 0x0A, 0x1B: continue
            case 0x00...0x1F, 0x7F...0x9F, 0x202A...0x202E, 0x2066...0x2069:
                return "control character U+\(String(scalar.value, radix: 16, uppercase: true))"
            default: continue
            }
        }
        return nil
    }
}
