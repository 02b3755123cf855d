import GoogleHTTP
import VaultCore

/// A transport for unit tests: it answers from a script instead of the network and keeps
/// every request it was given (secrets copied out as text: tests only).
public final class FakeTransport: HTTPTransport, @unchecked Sendable {
    /// One scripted answer.
    public enum Reply {
        case answer(status: Int, body: [UInt8], retryAfter: Double? = nil)
        /// A body handed to the reader in these pieces, as a network delivers a stream.
        case pieces(status: Int, [[UInt8]])
        /// An outcome with no body (a refused connection, a timeout …).
        case outcome(HTTPOutcome)

        public static func json(_ status: Int, _ text: String, retryAfter: Double? = nil) -> Reply {
            .answer(status: status, body: Array(text.utf8), retryAfter: retryAfter)
        }

        /// `text` in pieces of `size` bytes, so events and lines are split across reads.
        public static func stream(_ status: Int, _ text: String, pieceSize size: Int) -> Reply {
            let bytes = Array(text.utf8)
            return .pieces(status: status, stride(from: 0, to: bytes.count, by: size).map { Array(bytes[$0..<min($0 + size, bytes.count)]) })
        }
    }

    /// What a request looked like when it reached the transport.
    public struct Sent: Sendable, Equatable {
        public let method: String
        public let url: String
        public let headers: [String]
        public let secretHeader: String?
        public let body: [UInt8]?
    }

    private var replies: [Reply]
    private let answer: ((Sent) -> Reply)?
    public private(set) var sent: [Sent] = []

    /// Answers in order; a request beyond the script fails as a transport error.
    public init(_ replies: [Reply]) {
        self.replies = replies
        self.answer = nil
    }

    /// Answers each request by what it asks for.
    public init(answering: @escaping (Sent) -> Reply) {
        self.replies = []
        self.answer = answering
    }

    public func perform(_ request: HTTPRequest, onData: (Int, UnsafeRawBufferPointer) -> HTTPDataVerdict, onTick: (() -> Bool)?) -> HTTPOutcome {
        let text: (SecretBytes) -> String = { $0.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
        let url: String
        switch request.target {
        case .plain(let plain): url = plain
        case .secret(let secret): url = text(secret)
        }
        let body: [UInt8]?
        switch request.body {
        case .none: body = nil
        case .plain(let bytes): body = bytes
        case .secret(let secret): body = Array(text(secret).utf8)
        }
        let record = Sent(method: request.method, url: url, headers: request.headers,
                          secretHeader: request.secretHeader.map { $0.prefix + text($0.value) }, body: body)
        sent.append(record)
        let reply: Reply
        if let answer { reply = answer(record) } else if replies.isEmpty { reply = .outcome(.transportError("the script has no more answers")) } else { reply = replies.removeFirst() }
        switch reply {
        case .outcome(let outcome):
            return outcome
        case .answer(let status, let bytes, let retryAfter):
            let verdict = bytes.withUnsafeBytes { onData(status, $0) }
            return verdict == .abort ? .aborted(status: status, retryAfter: retryAfter) : .complete(status: status, retryAfter: retryAfter)
        case .pieces(let status, let pieces):
            for piece in pieces where piece.withUnsafeBytes({ onData(status, $0) }) == .abort {
                return .aborted(status: status, retryAfter: nil)
            }
            return .complete(status: status, retryAfter: nil)
        }
    }
}
