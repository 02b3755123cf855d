import FoundationEssentials
import GoogleHTTP

/// What the fuzzers (Fuzz/) and the corpus replay tests drive through the stream parser and
/// the decoding of its events. The check returns the property the input broke, or nil.
public enum StreamFuzzing {
    /// The first byte sets how the rest is cut into reads. The same bytes, cut any way, must
    /// give the same events; every event is then decoded as the client decodes it, and the
    /// byte scan that skips the error decoding must never miss an error the decoder finds.
    public static func check(_ bytes: [UInt8]) -> String? {
        guard let cut = bytes.first else { return nil }
        let body = Array(bytes.dropFirst())
        let limit = 4096  // small, so that the overflow paths are reached too
        var whole = SSEParser(limit: limit)
        let wholeEvents = body.withUnsafeBytes { whole.feed($0) } + whole.finish()
        var pieces = SSEParser(limit: limit)
        var pieceEvents: [[UInt8]] = []
        let step = Int(cut) % 37 + 1
        for start in stride(from: 0, to: body.count, by: step) {
            pieceEvents += body[start..<min(start + step, body.count)].withUnsafeBytes { pieces.feed($0) }
        }
        pieceEvents += pieces.finish()
        if !whole.overflowed && !pieces.overflowed {
            guard wholeEvents == pieceEvents, whole.extra == pieces.extra else { return "the events depend on how the bytes were cut into reads" }
        }
        for event in wholeEvents {
            if let envelope = GoogleStatus.decode(event), envelope.code != nil || envelope.status != nil,
               !GoogleStatus.mayBeEnvelope(event) {
                return "the byte scan missed an error envelope"
            }
            if let chunk = try? JSONDecoder().decode(GenerateContentResponse.self, from: Data(event)) {
                _ = chunk.visibleText
            }
        }
        _ = GoogleStatus.decode(body)?.retryDelay
        return nil
    }
}
