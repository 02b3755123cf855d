import COpenSSL
import Glibc
import SystemIO
import VaultCore

/// A key an ssh-agent holds: its public key blob (ssh wire format) and comment.
public struct SSHAgentIdentity: Sendable, Equatable {
    public let blob: [UInt8]
    public let comment: String

    /// The key's type, the first string of its blob (`ssh-ed25519`, `ssh-rsa`, `ecdsa-sha2-nistp256`…),
    /// made printable: an agent's bytes reach the terminal in messages.
    public var keyType: String {
        var reader = SSHWireCursor(blob[...])
        return reader.string().map { Self.printable($0.prefix(64)) } ?? "?"
    }

    /// Printable ASCII only: any other byte (escape sequences included) becomes `?`.
    static func printable<Bytes: Collection>(_ bytes: Bytes) -> String where Bytes.Element == UInt8 {
        String(bytes.map { (0x20..<0x7f).contains($0) ? Character(UnicodeScalar($0)) : "?" })
    }

    /// SHA-256 of the blob, as `ssh-keygen -l` and `ssh-add -l` show it.
    public var fingerprint: [UInt8] { Sodium.sha256(blob) }
    public var fingerprintText: String { SSHSlotKey.fingerprintText(fingerprint) }
}

/// What went wrong talking to an ssh-agent; each says so in words a user can act on.
public enum SSHAgentError: Error, Equatable, Sendable {
    case noSocket
    case unreachable(String)
    case timedOut(Double)
    case malformed(String)
    /// SSH_AGENT_FAILURE: a declined confirmation, a locked token, a key removed meanwhile.
    case refused
    case servedByAnotherUser(UInt32)

    public var message: String {
        switch self {
        case .noSocket: "SSH_AUTH_SOCK is not set"
        case .unreachable(let why): "the ssh-agent cannot be reached (\(why))"
        case .timedOut(let seconds): "the ssh-agent did not answer within \(Int(seconds)) s"
        case .malformed(let what): "the ssh-agent's answer is malformed: \(what)"
        case .refused: "the ssh-agent refused to sign (a declined confirmation, a locked token, or a key removed meanwhile)"
        case .servedByAnotherUser(let uid): "the ssh-agent socket is served by uid \(uid), not by you"
        }
    }
}

/// The ssh-agent protocol (draft-miller-ssh-agent), spoken directly over `SSH_AUTH_SOCK`: list
/// the keys, and sign with one. Every answer is read against a deadline and a size bound, so a
/// hostile or stuck agent costs a few seconds and an error, never a hang.
public struct SSHAgentClient: Sendable {
    enum Message: UInt8 {
        case failure = 5, requestIdentities = 11, identitiesAnswer = 12, signRequest = 13, signResponse = 14
    }
    /// SSH_AGENT_RSA_SHA2_512: sign an ssh-rsa key with rsa-sha2-512.
    static let rsaSHA2512Flag: UInt32 = 4
    /// OpenSSH's own bound on one agent message.
    static let maxMessage = 256 << 10
    /// More keys than any agent sensibly holds.
    static let maxIdentities = 1024

    public let socketPath: String
    /// Seconds for listing the keys, and for a signature (a token may wait for a touch or PIN).
    public let listTimeout: Double
    public let signTimeout: Double

    public init(socketPath: String, listTimeout: Double = 5, signTimeout: Double = 30) {
        self.socketPath = socketPath
        self.listTimeout = listTimeout
        self.signTimeout = signTimeout
    }

    /// The agent of `environment`'s SSH_AUTH_SOCK; GEMVAULT_SSH_AGENT_TIMEOUT (seconds) bounds each answer.
    public init(environment: [String: String]) throws(SSHAgentError) {
        guard let path = environment["SSH_AUTH_SOCK"], !path.isEmpty else { throw .noSocket }
        let bound = environment["GEMVAULT_SSH_AGENT_TIMEOUT"].flatMap(Double.init).map { min(max($0, 0.1), 300) }
        self.init(socketPath: path, listTimeout: bound ?? 5, signTimeout: bound ?? 30)
    }

    /// The keys the agent holds.
    public func identities() throws(SSHAgentError) -> [SSHAgentIdentity] {
        let answer = try exchange([Message.requestIdentities.rawValue], timeout: listTimeout)
        // Public keys and comments: no secret in this answer.
        return try Self.parseIdentities(answer.withUnsafeBytes { Array($0) })
    }

    /// SSH2_AGENT_IDENTITIES_ANSWER: its keys, with comments made printable.
    static func parseIdentities(_ answer: [UInt8]) throws(SSHAgentError) -> [SSHAgentIdentity] {
        var reader = SSHWireCursor(answer[...])
        guard reader.byte() == Message.identitiesAnswer.rawValue else { throw .malformed("it did not answer with its keys") }
        guard let count = reader.uint32(), count <= Self.maxIdentities else { throw .malformed("it announces too many keys") }
        var found: [SSHAgentIdentity] = []
        for _ in 0..<count {
            guard let blob = reader.string(), let comment = reader.string() else { throw .malformed("a key is cut short") }
            found.append(SSHAgentIdentity(blob: Array(blob), comment: SSHAgentIdentity.printable(comment.prefix(200))))
        }
        guard reader.isAtEnd else { throw .malformed("bytes follow its list of keys") }
        return found
    }

    /// The raw signature of `data` by `identity` (an Ed25519 or RSA key; RSA with rsa-sha2-512).
    /// The answer must be that signature type, and verify for the key. The signature is a slot's secret: it stays in
    /// the answer's secret memory, and is returned as a view of it.
    public func sign(_ data: [UInt8], with identity: SSHAgentIdentity, algorithm: SSHSlotKey.Algorithm) throws(SSHAgentError) -> SecretBytes {
        var request = SSHWireWriter()
        request.byte(Message.signRequest.rawValue)
        request.string(identity.blob)
        request.string(data)
        request.uint32(algorithm == .rsa ? Self.rsaSHA2512Flag : 0)
        let answer = try exchange(request.bytes, timeout: signTimeout)
        let range = try answer.withUnsafeBytes { raw throws(SSHAgentError) in try Self.signatureRange(in: raw, algorithm: algorithm) }
        var signature = answer.view(range)
        if algorithm == .rsa { signature = try Self.paddedToModulus(signature, of: identity) }
        try check(signature, of: data, by: identity, algorithm: algorithm)
        return signature
    }

    /// Some agents drop an RSA signature's leading zero bytes; OpenSSH pads them back, and so
    /// must a slot, whose secret is these bytes: the same key through any agent gives the same.
    static func paddedToModulus(_ signature: SecretBytes, of identity: SSHAgentIdentity) throws(SSHAgentError) -> SecretBytes {
        let length = try rsaKey(of: identity).modulus.count
        guard signature.count <= length else { throw .malformed("the signature is longer than key \(identity.fingerprintText)'s modulus") }
        guard signature.count < length else { return signature }
        let padded = SecretBytes(count: length)
        padded.withUnsafeMutableBytes { out in
            signature.withUnsafeBytes { (out.baseAddress! + (length - $0.count)).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
        }
        return padded
    }

    /// An ssh-rsa blob's exponent and modulus (mpints, big-endian, leading zeros dropped),
    /// refused below 2048 bits or with an exponent no RSA key has (even, or below 3).
    static func rsaKey(of identity: SSHAgentIdentity) throws(SSHAgentError) -> (exponent: [UInt8], modulus: [UInt8]) {
        var key = SSHWireCursor(identity.blob[...])
        _ = key.string()
        guard let exponentField = key.string(), let modulusField = key.string() else { throw .malformed("the RSA key is cut short") }
        let exponent = Array(exponentField.drop { $0 == 0 }), modulus = Array(modulusField.drop { $0 == 0 })
        guard modulus.count >= 256, modulus.count <= 2048 else {
            throw .malformed("key \(identity.fingerprintText) is an RSA key of \(modulus.count * 8) bits; a slot takes 2048 to 16384")
        }
        guard let last = exponent.last, last & 1 == 1, exponent.count <= 8, exponent.count > 1 || last >= 3 else {
            throw .malformed("key \(identity.fingerprintText) has an RSA exponent no real key has")
        }
        return (exponent, modulus)
    }

    /// Where the raw signature lies in an SSH2_AGENT_SIGN_RESPONSE, whose signature must be of
    /// `algorithm`'s type; found in place, so the secret is never copied.
    static func signatureRange(in raw: UnsafeRawBufferPointer, algorithm: SSHSlotKey.Algorithm) throws(SSHAgentError) -> Range<Int> {
        var reader = SSHWireRanges(raw)
        switch reader.byte() {
        case Message.signResponse.rawValue: break
        case Message.failure.rawValue: throw .refused
        default: throw .malformed("it did not answer with a signature")
        }
        guard let blob = reader.string(), reader.isAtEnd else { throw .malformed("the signature is cut short") }
        var inner = SSHWireRanges(UnsafeRawBufferPointer(rebasing: raw[blob]))
        guard let format = inner.string(), let signature = inner.string(), inner.isAtEnd else { throw .malformed("the signature is cut short") }
        let formatBytes = raw[blob.lowerBound + format.lowerBound ..< blob.lowerBound + format.upperBound]
        guard formatBytes.elementsEqual(algorithm.signatureType.utf8) else {
            throw .malformed("it signed with \(SSHAgentIdentity.printable(formatBytes.prefix(64))) where \(algorithm.signatureType) was asked for")
        }
        return blob.lowerBound + signature.lowerBound ..< blob.lowerBound + signature.upperBound
    }

    private func check(_ signature: SecretBytes, of data: [UInt8], by identity: SSHAgentIdentity, algorithm: SSHSlotKey.Algorithm) throws(SSHAgentError) {
        var key = SSHWireCursor(identity.blob[...])
        _ = key.string()
        switch algorithm {
        case .ed25519:
            guard let publicKey = key.string(), Ed25519.verify(secretSignature: signature, of: data, by: Array(publicKey)) else {
                throw .malformed("the signature is not one by key \(identity.fingerprintText)")
            }
        case .rsa:
            let (exponent, modulus) = try Self.rsaKey(of: identity)
            let verified = modulus.withUnsafeBufferPointer { n in
                exponent.withUnsafeBufferPointer { e in
                    signature.withUnsafeBytes { raw in
                        gv_rsa_sha512_verify(n.baseAddress, n.count, e.baseAddress, e.count,
                                             raw.baseAddress?.assumingMemoryBound(to: UInt8.self), raw.count, data, data.count)
                    }
                }
            }
            guard verified == 1 else { throw .malformed("the signature is not one by key \(identity.fingerprintText)") }
        }
    }

    /// Sends one request and reads one answer (its type byte and payload) within `timeout`,
    /// connecting included: an agent that never accepts costs `timeout`, not a hang.
    private func exchange(_ request: [UInt8], timeout: Double) throws(SSHAgentError) -> SecretBytes {
        let deadline = Deadline(after: timeout)
        let connection: FileDescriptor
        do { connection = try UnixSocket.connect(path: socketPath, deadline: deadline.moment) } catch {
            if error.code == ETIMEDOUT { throw .timedOut(timeout) }
            throw .unreachable("\(error.operation) \(SSHAgentIdentity.printable(error.path.utf8)): \(error.reason)")
        }
        if let peer = try? UnixSocket.peer(of: connection), peer.uid != CurrentUser.id, peer.uid != 0 {
            throw .servedByAnotherUser(peer.uid)
        }
        var framed = SSHWireWriter()
        framed.uint32(UInt32(request.count))
        try write(framed.bytes + request, to: connection, deadline: deadline, timeout: timeout)
        var header = [UInt8](repeating: 0, count: 4)
        try header.withUnsafeMutableBytes { raw in
            Result { () throws(SSHAgentError) in try read(into: raw, from: connection, deadline: deadline, timeout: timeout) }
        }.get()
        let length = header.reduce(0) { $0 << 8 | Int($1) }
        guard length >= 1, length <= Self.maxMessage else { throw .malformed("it announces a message of \(length) bytes") }
        guard let body = SecretBytes.allocate(count: length) else { throw .malformed("no memory for its answer") }
        try body.withUnsafeMutableBytes { raw throws(SSHAgentError) in try read(into: raw, from: connection, deadline: deadline, timeout: timeout) }
        return body
    }

    private func write(_ bytes: [UInt8], to connection: FileDescriptor, deadline: Deadline, timeout: Double) throws(SSHAgentError) {
        var sent = 0
        while sent < bytes.count {
            let attempt = bytes.withUnsafeBytes { raw in
                Result { () throws(SystemError) in try connection.writeSome(UnsafeRawBufferPointer(rebasing: raw[sent...])) }
            }
            switch attempt {
            case .failure(let error): throw .unreachable("\(error.operation) \(error.path): \(error.reason)")
            case .success(let written?): sent += written
            case .success(nil):
                guard !deadline.hasPassed else { throw .timedOut(timeout) }
                _ = connection.waitWritable(timeout: deadline.slice(atMost: 1))
            }
        }
    }

    private func read(into buffer: UnsafeMutableRawBufferPointer, from connection: FileDescriptor, deadline: Deadline, timeout: Double) throws(SSHAgentError) {
        do throws(FileDescriptor.ExactReadFailure) {
            try connection.readExactly(buffer, deadline: deadline)
        } catch {
            switch error {
            case .failed(let system): throw .unreachable(system.reason)
            case .closed: throw .malformed("it closed the connection part way")
            case .timedOut: throw .timedOut(timeout)
            }
        }
    }
}
