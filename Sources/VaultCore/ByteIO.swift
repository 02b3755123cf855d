/// Appends little-endian integers and length-prefixed fields to a byte array.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    mutating func append(_ raw: [UInt8]) { bytes.append(contentsOf: raw) }
    /// A u16 length and the text's UTF-8 bytes.
    mutating func appendField(_ text: String) {
        append(UInt16(text.utf8.count))
        append(Array(text.utf8))
    }
    mutating func append<T: FixedWidthInteger>(_ value: T) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }
}

/// Reads little-endian integers from a buffer, failing (not trapping) past its end.
struct ByteReader {
    struct OutOfBounds: Error {}

    let buffer: UnsafeRawBufferPointer
    private(set) var offset = 0
    /// When set, `buffer` is this secret's memory and secrets are read as views into it.
    let secretOwner: SecretBytes?

    init(_ buffer: UnsafeRawBufferPointer, secretOwner: SecretBytes? = nil) {
        self.buffer = buffer
        self.secretOwner = secretOwner
    }

    var remaining: Int { buffer.count - offset }

    mutating func read<T: FixedWidthInteger>(_: T.Type) throws(OutOfBounds) -> T {
        let size = MemoryLayout<T>.size
        guard remaining >= size else { throw OutOfBounds() }
        var value: T = 0
        withUnsafeMutableBytes(of: &value) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + size])) }
        offset += size
        return T(littleEndian: value)
    }

    mutating func readBytes(_ count: Int) throws(OutOfBounds) -> [UInt8] {
        guard count >= 0, remaining >= count else { throw OutOfBounds() }
        defer { offset += count }
        return Array(buffer[offset..<offset + count])
    }

    /// The next `count` bytes copied straight into secret memory.
    mutating func readSecret(_ count: Int) throws(OutOfBounds) -> SecretBytes {
        guard count >= 0, remaining >= count else { throw OutOfBounds() }
        defer { offset += count }
        if let secretOwner { return SecretBytes(viewing: secretOwner, offset: offset, count: count) }
        return SecretBytes(copying: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + count]))
    }

    mutating func readUTF8(_ count: Int) throws(OutOfBounds) -> String {
        let raw = try readBytes(count)
        guard let text = String(validating: raw, as: UTF8.self) else { throw OutOfBounds() }
        return text
    }
}
