/// ssh's wire encoding (RFC 4251 §5) for agent messages: big-endian u32s and length-prefixed strings.
struct SSHWireWriter {
    private(set) var bytes: [UInt8] = []

    mutating func byte(_ value: UInt8) { bytes.append(value) }
    mutating func uint32(_ value: UInt32) { bytes += [UInt8(value >> 24), UInt8(value >> 16 & 0xff), UInt8(value >> 8 & 0xff), UInt8(value & 0xff)] }
    mutating func string(_ value: [UInt8]) {
        uint32(UInt32(value.count))
        bytes += value
    }
}

/// Reads ssh's wire encoding; every read is bounded by what is left, and nil when it runs out.
struct SSHWireCursor {
    private var rest: ArraySlice<UInt8>

    init(_ bytes: ArraySlice<UInt8>) { rest = bytes }

    var isAtEnd: Bool { rest.isEmpty }

    mutating func byte() -> UInt8? { rest.popFirst() }

    mutating func uint32() -> UInt32? {
        guard rest.count >= 4 else { return nil }
        let value = rest.prefix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        rest = rest.dropFirst(4)
        return value
    }

    mutating func string() -> ArraySlice<UInt8>? {
        guard let length = uint32(), Int(length) <= rest.count else { return nil }
        let value = rest.prefix(Int(length))
        rest = rest.dropFirst(Int(length))
        return value
    }
}

/// The same reads over raw bytes, giving ranges instead of copies: a signature is parsed where
/// it lies, in secret memory.
struct SSHWireRanges {
    private let bytes: UnsafeRawBufferPointer
    private var offset = 0

    init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func byte() -> UInt8? {
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// The range (relative to these bytes) of the next length-prefixed string.
    mutating func string() -> Range<Int>? {
        guard bytes.count - offset >= 4 else { return nil }
        let length = (0..<4).reduce(0) { $0 << 8 | Int(bytes[offset + $1]) }
        guard length <= bytes.count - offset - 4 else { return nil }
        defer { offset += 4 + length }
        return offset + 4 ..< offset + 4 + length
    }
}
