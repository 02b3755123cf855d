import SystemIO
import VaultCore

/// The agent's wire protocol, version 1. Docs/session.md describes it.
///
/// A frame is the magic `GVA1`, a u32 little-endian body length, then the body. A request
/// body is an operation byte followed by fields; a response body is a status byte (0 ok,
/// 1 error) followed by fields. A field is a tag byte, a u32 little-endian length and the
/// bytes. Frames travel whole inside `SecretBytes`, since fields can carry key material.
public enum AgentProtocol {
    public static let magic = Array("GVA1".utf8)
    /// Large enough for the biggest vault's contents, small enough to bound a hostile client.
    public static let maxFrame = 17 << 20

    public enum Operation: UInt8, Sendable {
        case status = 1, unlock = 2, contents = 3, write = 4, rekey = 5, lock = 6, keyNames = 7
    }

    public enum Tag: UInt8, Sendable {
        case keyEncryptionKey = 1, idleSeconds = 2, maxSeconds = 3, payload = 4, generation = 5, keyName = 6
        case message = 7, errorKind = 8, vaultPath = 9, unlockedAt = 10, idleDeadline = 11, maxDeadline = 12
        case pid = 13, state = 14, backup = 15, recoveryCode = 16, seenGeneration = 17, keyNames = 18
        /// Beside `keyNames`, line for line: each key's shape (`auth`, `standard`, `other`).
        case keyKinds = 19
    }

    public enum ErrorKind: UInt8, Sendable {
        /// The agent holds no vault (never unlocked, or locked).
        case locked = 1
        /// The write was based on an older generation; fetch and try again.
        case stale = 2
        /// The file went back to an older generation.
        case rolledBack = 3
        /// The key-encryption key does not open the vault.
        case wrongKey = 4
        case badRequest = 5
        case failed = 6
    }
}

/// A request or response being built or read: an operation or status byte and fields.
public struct AgentMessage {
    public var code: UInt8
    public private(set) var fields: [(AgentProtocol.Tag, SecretBytes)] = []

    public init(code: UInt8) { self.code = code }

    public mutating func add(_ tag: AgentProtocol.Tag, secret: SecretBytes) { fields.append((tag, secret)) }
    public mutating func add(_ tag: AgentProtocol.Tag, text: String) { fields.append((tag, SecretBytes(copying: Array(text.utf8)))) }
    public mutating func add(_ tag: AgentProtocol.Tag, number: Int64) {
        withUnsafeBytes(of: number.littleEndian) { fields.append((tag, SecretBytes(copying: $0))) }
    }

    public func secret(_ tag: AgentProtocol.Tag) -> SecretBytes? { fields.first { $0.0 == tag }?.1 }
    public func text(_ tag: AgentProtocol.Tag) -> String? {
        secret(tag).map { value in value.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
    }
    public func number(_ tag: AgentProtocol.Tag) -> Int64? {
        guard let value = secret(tag), value.count == 8 else { return nil }
        return value.withUnsafeBytes { bytes in
            var number: Int64 = 0
            withUnsafeMutableBytes(of: &number) { $0.copyMemory(from: bytes) }
            return Int64(littleEndian: number)
        }
    }

    /// The whole frame, in secret memory.
    public func frame() -> SecretBytes {
        let bodyLength = 1 + fields.reduce(0) { $0 + 5 + $1.1.count }
        let frame = SecretBytes(count: 8 + bodyLength)
        frame.withUnsafeMutableBytes { out in
            var offset = 0
            func put(_ bytes: UnsafeRawBufferPointer) {
                guard bytes.count > 0 else { return }
                (out.baseAddress! + offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                offset += bytes.count
            }
            AgentProtocol.magic.withUnsafeBytes { put($0) }
            withUnsafeBytes(of: UInt32(bodyLength).littleEndian) { put($0) }
            withUnsafeBytes(of: code) { put($0) }
            for (tag, value) in fields {
                withUnsafeBytes(of: tag.rawValue) { put($0) }
                withUnsafeBytes(of: UInt32(value.count).littleEndian) { put($0) }
                value.withUnsafeBytes { put($0) }
            }
        }
        return frame
    }

    /// No request or response has more; each field costs a sodium_malloc.
    public static let maxFields = 32

    /// Parses a body (the frame without magic and length). Unknown tags are skipped;
    /// a field running past the end, or more than `maxFields` fields, is an error.
    public static func parse(body: SecretBytes) -> AgentMessage? {
        body.withUnsafeBytes { bytes -> AgentMessage? in
            guard bytes.count >= 1 else { return nil }
            var message = AgentMessage(code: bytes[0])
            var offset = 1
            var fieldCount = 0
            while offset < bytes.count {
                fieldCount += 1
                guard bytes.count - offset >= 5, fieldCount <= maxFields else { return nil }
                let tag = bytes[offset]
                var length: UInt32 = 0
                withUnsafeMutableBytes(of: &length) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset + 1..<offset + 5])) }
                let count = Int(UInt32(littleEndian: length))
                offset += 5
                guard count <= bytes.count - offset else { return nil }
                if let known = AgentProtocol.Tag(rawValue: tag) {
                    message.fields.append((known, SecretBytes(copying: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]))))
                }
                offset += count
            }
            return message
        }
    }
}

/// Reads one frame from a descriptor within a deadline, into secret memory.
public enum FrameReader {
    public enum Failure: Error, Equatable {
        case timedOut, closed, malformed, tooLarge
    }

    /// Blocks (with poll) until a whole frame arrived or the deadline passed.
    public static func read(_ connection: FileDescriptor, deadline: Double) throws(Failure) -> SecretBytes {
        var header = [UInt8](repeating: 0, count: 8)
        try fill(connection, count: 8, deadline: deadline) { offset, available in
            header.withUnsafeMutableBytes { raw in
                (try? connection.readAvailable(into: UnsafeMutableRawBufferPointer(rebasing: raw[offset..<min(offset + available, 8)]))) ?? nil
            }
        }
        let length = try bodyLength(header)
        let body = SecretBytes(count: length)
        try fill(connection, count: length, deadline: deadline) { offset, available in
            body.withUnsafeMutableBytes { raw in
                (try? connection.readAvailable(into: UnsafeMutableRawBufferPointer(rebasing: raw[offset..<min(offset + available, length)]))) ?? nil
            }
        }
        return body
    }

    /// The body length a frame's 8-byte header announces, checked against the protocol's bounds.
    static func bodyLength(_ header: [UInt8]) throws(Failure) -> Int {
        guard header.count == 8, Array(header[0..<4]) == AgentProtocol.magic else { throw .malformed }
        let length = Int(UInt32(header[4]) | UInt32(header[5]) << 8 | UInt32(header[6]) << 16 | UInt32(header[7]) << 24)
        guard length >= 1 else { throw .malformed }
        guard length <= AgentProtocol.maxFrame else { throw .tooLarge }
        return length
    }

    /// Calls `read(offset, wanted)` until `count` bytes arrived; it returns nil for "nothing yet".
    private static func fill(_ connection: FileDescriptor, count: Int, deadline: Double,
                             _ read: (Int, Int) -> Int?) throws(Failure) {
        var offset = 0
        while offset < count {
            let remaining = deadline - Clock.monotonicSeconds()
            guard remaining > 0 else { throw .timedOut }
            guard connection.waitReadable(timeout: min(remaining, 1)) else { continue }
            guard let n = read(offset, count - offset) else { continue }
            if n == 0 { throw .closed }
            offset += n
        }
    }
}
