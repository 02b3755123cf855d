import GoogleKeys

/// Secret material in memory from `sodium_malloc`: guard pages, locked against swap, wiped when released.
///
/// Bytes are reachable only inside `withUnsafeBytes`, so nothing copies them into ordinary
/// Swift storage by accident. Use it for passphrases, derived keys, the data key, the
/// decrypted payload and API keys.
public final class SecretBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    /// The number of bytes held.
    public private(set) var count: Int
    /// For a view into another secret: the owner of the memory, kept alive, never freed here.
    private let owner: SecretBytes?
    /// The secret whose memory this one lives in (itself when it has its own allocation).
    var memoryOwner: SecretBytes { owner ?? self }
    /// Ordinary memory (`init(plainCopying:)`), not `sodium_malloc`'s.
    private let isPlain: Bool

    /// Zero-filled secret memory of `count` bytes.
    public init(count: Int) {
        self.count = count
        self.pointer = Sodium.allocate(count)
        self.owner = nil
        self.isPlain = false
    }

    /// A copy of bytes that are never secret but travel beside secrets (the numbers of an agent
    /// message), in ordinary memory, wiped and freed as any: `sodium_malloc`'s guarded, locked
    /// pages take about ten system calls to make and free, which every date in an agent's
    /// answer paid (Docs/performance.md).
    public init(plainCopying bytes: UnsafeRawBufferPointer) {
        self.count = bytes.count
        self.pointer = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 16)
        if bytes.count > 0 { pointer.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        self.owner = nil
        self.isPlain = true
    }

    /// Zero-filled secret memory of `count` bytes, or nil when there is no memory for it: for
    /// sizes a peer announced (the agent's requests), which must never end the process.
    public static func allocate(count: Int) -> SecretBytes? {
        guard let pointer = Sodium.allocateIfAvailable(count) else { return nil }
        return SecretBytes(adopting: pointer, count: count)
    }

    private init(adopting pointer: UnsafeMutableRawPointer, count: Int) {
        self.pointer = pointer
        self.count = count
        self.owner = nil
        self.isPlain = false
    }

    /// `range` of this secret without a copy (and without allocating); it keeps this one alive.
    public func view(_ range: Range<Int>) -> SecretBytes {
        SecretBytes(viewing: self, offset: range.lowerBound, count: range.count)
    }

    /// Part of another secret, without a copy: every sodium_malloc costs whole guarded pages,
    /// so the keys of a large vault are views into its one decrypted payload.
    init(viewing parent: SecretBytes, offset: Int, count: Int) {
        precondition(offset >= 0 && count >= 0 && offset + count <= parent.count)
        self.pointer = parent.pointer + offset
        self.count = count
        self.owner = parent.owner ?? parent
        self.isPlain = false
    }

    /// A copy of `bytes` in secret memory. The caller stays responsible for wiping its source.
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count)
        if bytes.count > 0 { pointer.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
    }

    /// A copy of part of another secret.
    public convenience init(slicing other: SecretBytes, range: Range<Int>) {
        precondition(range.lowerBound >= 0 && range.upperBound <= other.count)
        self.init(count: range.count)
        other.withUnsafeBytes { source in
            if range.count > 0 { pointer.copyMemory(from: source.baseAddress! + range.lowerBound, byteCount: range.count) }
        }
    }

    deinit {
        guard owner == nil else { return }
        guard isPlain else { return Sodium.free(pointer) }
        Sodium.wipe(pointer, count)
        pointer.deallocate()
    }

    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    public func withUnsafeMutableBytes<R, E: Error>(_ body: (UnsafeMutableRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: count))
    }

    /// Shortens the visible length in place (the tail is wiped), for buffers read to an unknown length.
    public func truncate(to newCount: Int) {
        precondition(newCount >= 0 && newCount <= count && owner == nil)
        Sodium.wipe(pointer + newCount, count - newCount)
        count = newCount
    }

    /// Runs `body` with a NUL-terminated copy, itself in secret memory, for C APIs such as HTTP headers.
    public func withCString<R>(prefix: String = "", _ body: (UnsafePointer<CChar>) throws -> R) rethrows -> R {
        let prefixBytes = Array(prefix.utf8)
        let terminated = SecretBytes(count: prefixBytes.count + count + 1)
        terminated.withUnsafeMutableBytes { out in
            out.copyBytes(from: prefixBytes)
            if count > 0 { (out.baseAddress! + prefixBytes.count).copyMemory(from: pointer, byteCount: count) }
        }
        return try body(terminated.pointer.assumingMemoryBound(to: CChar.self))
    }

    /// Constant-time comparison.
    public func isEqual(to other: SecretBytes) -> Bool {
        withUnsafeBytes { a in other.withUnsafeBytes { b in Sodium.constantTimeEqual(a, b) } }
    }

    /// Whether every byte is printable ASCII; API keys always are.
    public var isPrintableASCII: Bool {
        withUnsafeBytes { $0.allSatisfy { $0 >= 0x20 && $0 < 0x7f } }
    }

    /// Whether every byte is printable ASCII other than the space: all an API key or access
    /// token may put into an HTTP header. A line break would end the header and start another.
    public var isHeaderSafe: Bool {
        count > 0 && withUnsafeBytes { $0.allSatisfy { $0 > 0x20 && $0 < 0x7f } }
    }

    /// A key or token as received (typed, piped, read from a file, the environment, a command or
    /// an answer): the first line when nothing but white space follows it (a trailing newline,
    /// CRLF), else nil. Anything more is refused, never cut: a second line would go out as headers.
    public func singleLineCredential() -> SecretBytes? {
        let trimmed = trimmingWhitespace()
        return trimmed.isHeaderSafe ? trimmed : nil
    }

    /// The first four and last four characters with an ellipsis between them, for display.
    /// Values of 12 bytes or fewer, or not printable ASCII, are not shown at all.
    public var masked: String {
        guard count > 12, isPrintableASCII else { return "****" }
        return withUnsafeBytes { bytes in
            String(decoding: bytes.prefix(4), as: UTF8.self) + "…" + String(decoding: bytes.suffix(4), as: UTF8.self)
        }
    }

    /// A copy with leading and trailing ASCII white space (including CR and LF) removed.
    public func trimmingWhitespace() -> SecretBytes {
        withUnsafeBytes { bytes in SecretBytes(slicing: self, range: Self.trimmedRange(bytes)) }
    }

    /// Where `bytes` lie without leading and trailing spaces, tabs, CRs and LFs: a reader can
    /// look at a line in place and copy only what is secret.
    public static func trimmedRange(_ bytes: UnsafeRawBufferPointer) -> Range<Int> {
        func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0a || b == 0x0d }
        let start = bytes.firstIndex { !isSpace($0) } ?? bytes.count
        let end = (bytes.lastIndex { !isSpace($0) } ?? -1) + 1
        return start..<max(start, end)
    }
}

extension SecretBytes {
    /// Secret memory holding `text`'s UTF-8 bytes. Only for values that were never secret in
    /// ordinary memory (test vectors, generated codes) or that are wiped right after.
    public convenience init(utf8 text: String) {
        var bytes = Array(text.utf8)
        self.init(count: bytes.count)
        withUnsafeMutableBytes { $0.copyBytes(from: bytes) }
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { Sodium.wipe(base, $0.count) } }
    }

    /// A copy of bytes that were never secret, or that are wiped by their owner.
    public convenience init(copying bytes: [UInt8]) {
        self.init(count: bytes.count)
        withUnsafeMutableBytes { $0.copyBytes(from: bytes) }
    }

    /// A copy of `bytes` that wipes them: for a secret that had to pass through ordinary memory.
    public convenience init(taking bytes: inout [UInt8]) {
        self.init(copying: bytes)
        Self.wipe(&bytes)
    }

    /// Zeroes ordinary memory that held a secret.
    public static func wipe(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { if let base = $0.baseAddress { Sodium.wipe(base, $0.count) } }
    }

    /// Random secret bytes.
    public static func random(count: Int) -> SecretBytes {
        let secret = SecretBytes(count: count)
        Sodium.fillRandom(secret)
        return secret
    }
}

extension SecretBytes {
    /// Which of Google's key shapes the value has.
    public var googleKeyKind: GoogleKeyKind { withUnsafeBytes { GoogleKeyShape.kind(of: $0) } }
    /// The kind this value starts like when it is too short to be one (a paste cut short).
    public var cutShortKind: GoogleKeyKind? { withUnsafeBytes { GoogleKeyShape.cutShortKind(of: $0) } }
}
