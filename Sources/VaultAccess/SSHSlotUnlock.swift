import SSHAgent
import VaultCore

/// The ssh-agent's way in: the vault's ssh slots whose keys the agent holds, tried before
/// any prompt, once per command; passed over (with a note saying why) when none opens.
public final class SSHAgentUnlock: UnlockMethod {
    let agent: Result<SSHAgentClient, SSHAgentError>
    private var tried = false

    /// `agent`: SSH_AUTH_SOCK's agent, or why there is none.
    public init(agent: Result<SSHAgentClient, SSHAgentError>) { self.agent = agent }

    public var prompts: Bool { false }
    public func serves(_ purpose: UnlockPurpose) -> Bool { purpose == .anyWayIn }

    public func key(for file: VaultFile, purpose: UnlockPurpose, access: VaultAccess) throws -> UnlockKey? {
        if tried { return nil }
        tried = true
        guard !file.sshSlots.isEmpty else { return nil }
        switch agent {
        case .failure(let error):
            access.ui.note("the vault's ssh-agent slot is not tried: \(error.message)")
            return nil
        case .success(let agent):
            switch SSHSlotUnlock.open(file, agent: agent) {
            case .opened(let opener): return UnlockKey(opener)
            case .passedOver(let reason):
                access.ui.note("\(reason); asking for the passphrase")
                return nil
            }
        }
    }
}

/// Opening a vault through its ssh-agent slots, and making one: which of the agent's keys
/// a slot names, the signature, and the checks on what the agent answered.
public enum SSHSlotUnlock {
    /// What opened the vault, or why no ssh slot did (said before the passphrase prompt).
    public enum Outcome {
        case opened(SSHSlotOpener)
        case passedOver(String)
    }

    /// Tries each ssh slot whose key the agent holds, in the file's order.
    public static func open(_ file: VaultFile, agent: SSHAgentClient) -> Outcome {
        let slots = file.sshSlots
        guard !slots.isEmpty else { return .passedOver("the vault has no ssh-agent slot") }
        let identities: [SSHAgentIdentity]
        do throws(SSHAgentError) { identities = try agent.identities() } catch { return .passedOver(error.message) }
        var failures: [String] = []
        for slot in slots {
            let key = slot.sshKey
            guard let identity = identities.first(where: { $0.fingerprint == key.fingerprint && $0.keyType == key.algorithm.keyType }) else { continue }
            do {
                let signature = try agent.sign(slot.message, with: identity, algorithm: key.algorithm)
                if let opener = try slot.opener(signature: signature) { return .opened(opener) }
                failures.append("the signature of key \(key.fingerprintText) does not open its slot")
            } catch let error as SSHAgentError {
                failures.append("key \(key.fingerprintText): \(error.message)")
                // One stalled agent costs one deadline, not one per slot.
                if case .timedOut = error { break }
            } catch {
                failures.append("key \(key.fingerprintText): \(error)")
            }
        }
        if !failures.isEmpty { return .passedOver(failures.joined(separator: "; ")) }
        return .passedOver("ssh-agent has no key " + slots.map { $0.sshKey.fingerprintText }.joined(separator: " or "))
    }

    /// The agent's key a new slot is made with: the one `choice` names (a fingerprint, or a
    /// `.pub` file's key), or the agent's only key.
    public static func chooseKey(_ choice: SSHKeyChoice?, agent: SSHAgentClient) throws -> SSHAgentIdentity {
        let identities = try agent.identities()
        guard !identities.isEmpty else { throw SlotError("the ssh-agent holds no keys", hint: "add one with ssh-add, then try again") }
        let listing = identities.map { "\($0.keyType) \($0.fingerprintText) \($0.comment)" }.joined(separator: "; ")
        switch choice {
        case nil:
            guard identities.count == 1 else {
                throw SlotError("the ssh-agent holds \(identities.count) keys (\(listing))", hint: "choose one with --key FINGERPRINT or --key FILE.pub")
            }
            return identities[0]
        case .fingerprint(let text)?:
            guard let found = identities.first(where: { $0.fingerprintText == text }) else {
                throw SlotError("the ssh-agent has no key \(text) (it holds: \(listing))", hint: "add it with ssh-add, or name one it holds")
            }
            return found
        case .publicKey(let blob, let path)?:
            guard let found = identities.first(where: { $0.blob == blob }) else {
                throw SlotError("the ssh-agent does not hold the key in \(path) (\(SSHSlotKey.fingerprintText(Sodium.sha256(blob))))", hint: "add it with ssh-add, then try again")
            }
            return found
        }
    }

    /// The slot's key and the signature of `challenge`, signed twice: a key whose two
    /// signatures differ (ECDSA, a randomising token) could never open its slot again.
    public static func sign(challenge: [UInt8], with identity: SSHAgentIdentity, agent: SSHAgentClient, now: Int64) throws -> (SSHSlotKey, SecretBytes) {
        let message = SSHAgentSlot.message(challenge: challenge)
        guard let algorithm = SSHSlotKey.Algorithm(keyType: identity.keyType) else {
            if identity.keyType.hasPrefix("ecdsa-") || identity.keyType.hasPrefix("sk-") {
                throw SlotError("\(identity.keyType) key \(identity.fingerprintText) makes a different signature each time, so it could never open the same slot twice",
                                hint: "use an Ed25519 or RSA key (ssh-keygen -t ed25519)")
            }
            throw SlotError("\(identity.keyType) keys cannot hold a slot", hint: "use an Ed25519 or RSA key (ssh-keygen -t ed25519)")
        }
        let first = try agent.sign(message, with: identity, algorithm: algorithm)
        let second = try agent.sign(message, with: identity, algorithm: algorithm)
        guard first.isEqual(to: second) else {
            throw SlotError("key \(identity.fingerprintText) gave two different signatures of the same challenge, so it could never open the same slot twice",
                            hint: "use a key whose signatures are deterministic: Ed25519, or RSA")
        }
        return (SSHSlotKey(algorithm: algorithm, fingerprint: identity.fingerprint, added: now), first)
    }
}

/// How `slot add ssh --key` names the key.
public enum SSHKeyChoice: Equatable {
    case fingerprint(String)
    case publicKey(blob: [UInt8], path: String)
}

/// The ssh-agent's own failures (no socket, a refusal, a deadline) read like the slot's.
extension SSHAgentError: UnlockFailure {
    public var hint: String { "'ssh-add -l' lists what the agent at SSH_AUTH_SOCK holds" }
}
