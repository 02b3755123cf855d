import VaultCore

/// One frame gathered from bytes as they arrive, on either side of the socket.
///
/// The 8-byte header and the body's first byte (a request's operation, a response's status)
/// are read before any memory is allocated, so the announced length is checked against the
/// bound for that very request first. The body then grows with the bytes that actually came
/// (doubling from 64 KiB), never with what was announced: a client that announces 17 MiB and
/// stops costs nothing. Secret memory comes from the failable allocation, so running out of
/// it is a refusal, never the end of the process.
public struct FrameAssembler {
    public enum Kind: Sendable {
        /// A client's request: bounded per operation (`AgentProtocol.maxRequestBody`).
        case request
        /// The agent's answer: any status, up to `AgentProtocol.maxFrame`.
        case response
    }

    public enum Outcome {
        /// Every byte that was waiting has been taken; the frame is not whole yet.
        case waiting
        /// The peer left before the frame was whole.
        case closed
        case complete(SecretBytes)
        case refused(Refusal)
    }

    public enum Refusal: Error, Equatable, Sendable {
        /// Not a frame: wrong magic, or an empty body.
        case malformed
        case unknownOperation(UInt8)
        /// The announced body is longer than the bound for its operation.
        case tooLarge(limit: Int)
        /// Growing would take more than the room the caller allows (others hold the memory).
        case noRoom
        /// sodium_malloc failed.
        case outOfMemory
    }

    static let prefixLength = 9
    /// The first allocation for a body; it doubles as bytes arrive.
    static let firstChunk = 64 << 10

    public let kind: Kind
    private var prefix = [UInt8](repeating: 0, count: prefixLength)
    private var prefixCount = 0
    private var announced = 0
    private var body: SecretBytes?
    private var bodyCount = 0

    public init(kind: Kind) { self.kind = kind }

    /// Whether any byte of the frame arrived (the agent's 2-second clock starts then).
    public var hasStarted: Bool { prefixCount > 0 }
    /// Bytes of the frame received so far.
    public var received: Int { prefixCount < Self.prefixLength ? prefixCount : 8 + bodyCount }
    /// The secret memory the body holds now.
    public var held: Int { body?.count ?? 0 }

    /// Takes bytes from `read` until the frame is whole or none are waiting. `read` fills the
    /// buffer it is given and returns the count: 0 when the peer left, nil when nothing waits.
    /// `room` bounds the secret memory this body may hold. After a refusal, nothing is held.
    public mutating func take(room: Int = .max, _ read: (UnsafeMutableRawBufferPointer) -> Int?) -> Outcome {
        while true {
            if prefixCount < Self.prefixLength {
                let count = prefix.withUnsafeMutableBytes { read(UnsafeMutableRawBufferPointer(rebasing: $0[prefixCount...])) }
                guard let count else { return .waiting }
                guard count > 0 else { return .closed }
                prefixCount += count
                if let refusal = checkPrefix(room: room) { return refuse(refusal) }
                if prefixCount < Self.prefixLength { continue }
            }
            guard let current = body else { return refuse(.malformed) }
            if bodyCount == announced { return .complete(current) }
            if bodyCount == current.count, let refusal = grow(room: room) { return refuse(refusal) }
            guard let target = body else { return refuse(.malformed) }
            let count = target.withUnsafeMutableBytes { read(UnsafeMutableRawBufferPointer(rebasing: $0[bodyCount...])) }
            guard let count else { return .waiting }
            guard count > 0 else { return .closed }
            bodyCount += count
        }
    }

    /// Checks what the prefix holds so far: the magic from its fourth byte, the length from
    /// its eighth, the operation's bound from its ninth, which also allocates the first chunk.
    private mutating func checkPrefix(room: Int) -> Refusal? {
        if prefixCount >= 4, Array(prefix[0..<4]) != AgentProtocol.magic { return .malformed }
        guard prefixCount >= 8 else { return nil }
        announced = Int(UInt32(prefix[4]) | UInt32(prefix[5]) << 8 | UInt32(prefix[6]) << 16 | UInt32(prefix[7]) << 24)
        guard announced >= 1 else { return .malformed }
        guard prefixCount == Self.prefixLength, body == nil else { return nil }
        let limit: Int
        switch kind {
        case .request:
            guard let bound = AgentProtocol.maxRequestBody(operation: prefix[8]) else { return .unknownOperation(prefix[8]) }
            limit = bound
        case .response:
            limit = AgentProtocol.maxFrame
        }
        guard announced <= limit else { return .tooLarge(limit: limit) }
        let size = min(announced, Self.firstChunk)
        guard size <= room else { return .noRoom }
        guard let first = SecretBytes.allocate(count: size) else { return .outOfMemory }
        first.withUnsafeMutableBytes { $0[0] = prefix[8] }
        body = first
        bodyCount = 1
        return nil
    }

    /// Doubles the body (up to the announced length), copying what arrived; the old memory is
    /// wiped as it is freed.
    private mutating func grow(room: Int) -> Refusal? {
        guard let current = body else { return .malformed }
        let size = min(announced, current.count * 2)
        // Both buffers live while the bytes are copied.
        guard current.count + size <= room else { return .noRoom }
        guard let larger = SecretBytes.allocate(count: size) else { return .outOfMemory }
        larger.withUnsafeMutableBytes { target in
            current.withUnsafeBytes { source in
                target.baseAddress!.copyMemory(from: source.baseAddress!, byteCount: bodyCount)
            }
        }
        body = larger
        return nil
    }

    private mutating func refuse(_ refusal: Refusal) -> Outcome {
        body = nil
        return .refused(refusal)
    }
}
