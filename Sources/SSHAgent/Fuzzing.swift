import VaultCore

/// What the fuzzers (Fuzz/) and the corpus replay tests drive through the ssh-agent answer
/// parsers: the bytes an agent at SSH_AUTH_SOCK, hostile or broken, can send. The first byte
/// picks the answer: even, a key list; odd, a signature (bit 1: RSA, else Ed25519). The check
/// returns the property the input broke, or nil.
public enum SSHAgentFuzzing {
    public static func check(_ bytes: [UInt8]) -> String? {
        guard let mode = bytes.first else { return nil }
        let answer = Array(bytes.dropFirst())
        if mode & 1 == 0 {
            guard let keys = try? SSHAgentClient.parseIdentities(answer) else { return nil }
            // Whatever the agent sent, what reaches a message is printable ASCII.
            for key in keys where !(key.keyType + key.comment).utf8.allSatisfy({ (0x20..<0x7f).contains($0) }) {
                return "a key's type or comment keeps a byte that is not printable"
            }
            if keys.count > SSHAgentClient.maxIdentities { return "more keys than the bound were accepted" }
            return nil
        }
        let algorithm: SSHSlotKey.Algorithm = mode & 2 == 0 ? .ed25519 : .rsa
        let found = answer.withUnsafeBytes { raw in Result { () throws(SSHAgentError) in try SSHAgentClient.signatureRange(in: raw, algorithm: algorithm) } }
        guard case .success(let range) = found else { return nil }
        guard range.lowerBound >= 0, range.upperBound <= answer.count else { return "a signature's range runs outside the answer" }
        return nil
    }
}
