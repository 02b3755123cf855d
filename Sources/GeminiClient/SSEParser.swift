/// Splits a `text/event-stream` body into events as bytes arrive.
///
/// Works on bytes, so a UTF-8 character or a `data: ` prefix split across reads is never
/// decoded half-way. Accepts LF and CRLF line ends. Lines that are not SSE fields (Google
/// appends a bare JSON error after the events when a stream fails) are collected in `extra`.
public struct SSEParser: Sendable {
    private var buffer: [UInt8] = []
    private var dataLines: [[UInt8]] = []
    /// Non-SSE lines seen so far, in order.
    public private(set) var extra: [UInt8] = []
    /// Set when a line, an event or the extra text grew past `limit`; the rest is dropped.
    public private(set) var overflowed = false
    /// The largest line, event or block of extra text accepted from a server.
    public let limit: Int

    public init(limit: Int = 16 << 20) { self.limit = limit }

    /// Feeds bytes and returns the payloads of the events they completed.
    public mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [[UInt8]] {
        guard !overflowed else { return [] }
        buffer.append(contentsOf: bytes)
        if buffer.count > limit || extra.count > limit || dataLines.reduce(0, { $0 + $1.count }) > limit {
            overflowed = true
            buffer.removeAll()
            return []
        }
        var events: [[UInt8]] = []
        var start = 0
        while let newline = buffer[start...].firstIndex(of: 0x0A) {
            var line = buffer[start..<newline]
            if line.last == 0x0D { line = line.dropLast() }
            start = newline + 1
            if let event = take(line: line) { events.append(event) }
        }
        buffer.removeFirst(start)
        return events
    }

    /// Ends the stream: a final event without its blank line still counts.
    public mutating func finish() -> [[UInt8]] {
        var events: [[UInt8]] = []
        if !buffer.isEmpty {
            var line = buffer[...]
            if line.last == 0x0D { line = line.dropLast() }
            if let event = take(line: line) { events.append(event) }
            buffer.removeAll()
        }
        if let event = dispatch() { events.append(event) }
        return events
    }

    private static let dataPrefix = Array("data:".utf8)

    private mutating func take(line: ArraySlice<UInt8>) -> [UInt8]? {
        if line.isEmpty { return dispatch() }
        if line.starts(with: Self.dataPrefix) {
            var value = line.dropFirst(Self.dataPrefix.count)
            if value.first == 0x20 { value = value.dropFirst() }
            dataLines.append(Array(value))
            return nil
        }
        if line.first == UInt8(ascii: ":") { return nil }
        for field in ["event:", "id:", "retry:"] where line.starts(with: Array(field.utf8)) { return nil }
        extra.append(contentsOf: line)
        extra.append(0x0A)
        return nil
    }

    private mutating func dispatch() -> [UInt8]? {
        guard !dataLines.isEmpty else { return nil }
        defer { dataLines.removeAll() }
        return Array(dataLines.joined(separator: [0x0A]))
    }
}
