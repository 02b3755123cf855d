import AgeFormat
import VaultCore

/// Operation 32: the hybrid post-quantum identity's decapsulations, as operation 17 (`agree`)
/// does X25519's. The client sends one file's encapsulated keys; the agent answers the KEM's
/// shared secret for each, and the seed stays in the agent.
extension AgentServer {
    /// The vault's hybrid identity, expanded once (an ML-KEM key generation) and held while the
    /// session is unlocked: `wipe` drops it, and a vault whose seed changed expands anew.
    func hybridIdentity(of identity: VaultIdentity) throws -> HybridIdentity? {
        guard let seed = identity.hybridSeed else { return nil }
        if let held = heldHybridIdentity, held.seed.isEqual(to: seed) { return held }
        let expanded = try HybridIdentity(seed: seed)
        heldHybridIdentity = expanded
        return expanded
    }

    static func decapsulations(_ hybrid: HybridIdentity?, _ request: AgentMessage) throws -> AgentMessage {
        guard let hybrid else { return error(.failed, "the vault's sharing identity has no post-quantum part ('gemvault identity --upgrade' adds one)") }
        let encapsulatedKeyBytes = HybridIdentity.encapsulatedKeyBytes
        guard let encs = request.secret(.encapsulatedKey), encs.count > 0, encs.count % encapsulatedKeyBytes == 0,
              encs.count / encapsulatedKeyBytes <= AgentProtocol.decapsulateBatch else {
            return error(.badRequest, "decapsulate needs 1 to \(AgentProtocol.decapsulateBatch) encapsulated keys of \(encapsulatedKeyBytes) bytes")
        }
        let count = encs.count / encapsulatedKeyBytes
        let split = encs.withUnsafeBytes { raw in
            (0..<count).map { Array(raw[$0 * encapsulatedKeyBytes..<($0 + 1) * encapsulatedKeyBytes]) }
        }
        let secrets = try hybrid.decapsulate(split)
        // All zero for a low-order X25519 share, as `agree` answers.
        let out = SecretBytes(count: 32 * count)
        out.withUnsafeMutableBytes { target in
            for (index, secret) in secrets.enumerated() {
                secret?.withUnsafeBytes { (target.baseAddress! + index * 32).copyMemory(from: $0.baseAddress!, byteCount: 32) }
            }
        }
        var response = AgentMessage(code: 0)
        response.add(.hybridSharedSecret, secret: out)
        return response
    }
}

extension AgentClient {
    /// The hybrid identity's shared secret for each of one file's encapsulated keys (operation
    /// 32: one round trip for up to `decapsulateBatch` of them); nil where the X25519 part is a
    /// low-order point.
    public func decapsulate(_ encs: [[UInt8]]) throws(AgentError) -> [SecretBytes?] {
        var secrets: [SecretBytes?] = []
        for start in stride(from: 0, to: encs.count, by: AgentProtocol.decapsulateBatch) {
            secrets += try decapsulateBatch(Array(encs[start..<min(start + AgentProtocol.decapsulateBatch, encs.count)]))
        }
        return secrets
    }

    private func decapsulateBatch(_ encs: [[UInt8]]) throws(AgentError) -> [SecretBytes?] {
        var message = AgentMessage(code: AgentProtocol.Operation.decapsulate.rawValue)
        var joined = Array(encs.joined())
        message.add(.encapsulatedKey, secret: SecretBytes(taking: &joined))
        guard let shared = try request(message).secret(.hybridSharedSecret), shared.count == 32 * encs.count else {
            throw .untrusted("the agent's answer is malformed")
        }
        return (0..<encs.count).map { index in
            let secret = shared.view(index * 32..<(index + 1) * 32)
            return secret.withUnsafeBytes { $0.allSatisfy { $0 == 0 } } ? nil : secret
        }
    }
}
