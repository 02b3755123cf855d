import AgeFormat
import Sharing
import SystemIO
import VaultCore

/// The agent's side of sharing that needs more than a line: the next share of a key, which it
/// builds from its own vault and signs (operation 16), and one file's agreements (17).
extension AgentServer {
    /// Builds and signs the next share of the named key for the recipient groups, recording
    /// its serial in the vault before answering: a caller chooses neither the key nor the serial.
    func signNextShare(_ request: AgentMessage) throws -> AgentMessage {
        try signNext(request, needs: "signShare needs a key name and its recipients") { document, name, groups in
            do {
                let signed = try document.contents.signNextShare(of: name, for: groups, now: Clock.now())
                return .signed(signed.serial, signed.documents.map { $0.encoded() })
            } catch VaultError.keyNotFound(let name) {
                return .refused(Self.noSuchKey(name))
            }
        }
    }

    /// Builds and signs the next share of the named secret for other tools (operation 25), as
    /// operation 16 does for a key: the serial is recorded before the answer.
    func signNextSecretShare(_ request: AgentMessage) throws -> AgentMessage {
        try signNext(request, needs: "signSecretShare needs a secret name and its recipients") { document, name, groups in
            do {
                let signed = try document.contents.signNextSecretShare(of: name, for: groups, now: Clock.now())
                return .signed(signed.serial, signed.documents.map { $0.encoded() })
            } catch VaultError.secretNotFound(let name) {
                return .refused(Self.noSuchSecret(name))
            }
        }
    }

    /// What signing gave: the serial and the encoded documents, or the answer refusing it.
    enum SignedShare {
        case signed(UInt64, [SecretBytes])
        case refused(AgentMessage)
    }

    /// A share signed by the agent: the name and recipients from the request, `sign` under the
    /// vault's lock (the serial it records is saved before the answer), the serial and documents back.
    private func signNext(_ request: AgentMessage, needs: String,
                          sign: (VaultDocument, String, [[String]]) throws -> SignedShare) throws -> AgentMessage {
        guard let name = request.text(.keyName), let text = request.text(.shareRecipients) else { return Self.error(.badRequest, needs) }
        let groups = ShareGroups.decode(text)
        var signed: (serial: UInt64, documents: [SecretBytes])?
        var response = try locked({ document in
            do {
                switch try sign(document, name, groups) {
                case .signed(let serial, let documents): signed = (serial, documents)
                case .refused(let refusal): return refusal
                }
            } catch {
                return Self.error(.badRequest, "\(error)")
            }
            document.contents.recordUse(uses)
            return nil
        }, backup: .previous)
        guard response.code == 0, let signed else { return response }
        response.add(.shareSerial, number: Int64(signed.serial))
        response.add(.shareDocuments, secret: ShareGroups.joined(signed.documents))
        return response
    }

    /// The shared secret of `secret` with each 32-byte share, in order; all zero for a low-order one.
    static func agreements(_ secret: SecretBytes, _ shares: SecretBytes) throws -> SecretBytes {
        let count = shares.count / X25519.keyBytes
        let out = SecretBytes(count: shares.count)
        for index in 0..<count {
            let point = shares.withUnsafeBytes { Array($0[index * X25519.keyBytes..<(index + 1) * X25519.keyBytes]) }
            guard let shared = try? X25519.sharedSecret(secret, point) else { continue }
            out.withUnsafeMutableBytes { target in
                shared.withUnsafeBytes { (target.baseAddress! + index * X25519.keyBytes).copyMemory(from: $0.baseAddress!, byteCount: X25519.keyBytes) }
            }
        }
        return out
    }
}

/// How operation 16 carries its recipient groups and documents.
public enum ShareGroups {
    /// One recipient a line, a blank line between groups.
    public static func encode(_ groups: [[String]]) -> String { groups.map { $0.joined(separator: "\n") }.joined(separator: "\n\n") }

    public static func decode(_ text: String) -> [[String]] {
        text.split(separator: "\n\n", omittingEmptySubsequences: false).map { $0.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
    }

    /// Each part as a big-endian u32 length and its bytes, in secret memory.
    public static func joined(_ parts: [SecretBytes]) -> SecretBytes {
        let out = SecretBytes(count: parts.reduce(0) { $0 + 4 + $1.count })
        out.withUnsafeMutableBytes { target in
            var offset = 0
            for part in parts {
                let length = UInt32(part.count)
                for (index, byte) in [UInt8(length >> 24), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)].enumerated() {
                    target[offset + index] = byte
                }
                offset += 4
                part.withUnsafeBytes { if $0.count > 0 { (target.baseAddress! + offset).copyMemory(from: $0.baseAddress!, byteCount: $0.count) } }
                offset += part.count
            }
        }
        return out
    }

    /// The parts of `joined`'s bytes; nil when they do not add up.
    public static func split(_ bytes: SecretBytes) -> [SecretBytes]? {
        var parts: [SecretBytes] = []
        var offset = 0
        while offset < bytes.count {
            guard bytes.count - offset >= 4 else { return nil }
            let length = bytes.withUnsafeBytes { raw in (0..<4).reduce(0) { $0 << 8 | Int(raw[offset + $1]) } }
            offset += 4
            guard length <= bytes.count - offset else { return nil }
            parts.append(bytes.view(offset..<offset + length))
            offset += length
        }
        return parts
    }
}
