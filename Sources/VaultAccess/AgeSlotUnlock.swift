import AgeFormat
import Sharing
import VaultCore

/// The age identities a command has for the vault's age slots, and where they came from.
public struct AgeIdentitySource {
    /// The identity file, as notes name it.
    public let path: String
    public let identities: [any AgeIdentity]

    public init(path: String, identities: [any AgeIdentity]) {
        self.path = path
        self.identities = identities
    }
}

/// The age slots' way in: tried first, before the ssh-agent and any prompt, when an age
/// identity is at hand (`unlock -i`, the age_identity setting); passed over, with a note, when
/// it opens none of them. The identity file is read only when the vault has an age slot.
public final class AgeIdentityUnlock: UnlockMethod {
    let load: () throws -> AgeIdentitySource?
    /// The identities an age plugin offers with its hardware present, for the slots'
    /// recipients (age's `-j NAME`): the seam the plugin client fills; none without it.
    let hardwareIdentities: ([String]) -> [any AgeIdentity]
    private var tried = false
    public private(set) var failure: (any Error)?

    public init(load: @escaping () throws -> AgeIdentitySource?, hardwareIdentities: @escaping ([String]) -> [any AgeIdentity] = { _ in [] }) {
        self.load = load
        self.hardwareIdentities = hardwareIdentities
    }

    public var prompts: Bool { false }
    public func serves(_ purpose: UnlockPurpose) -> Bool { purpose == .anyWayIn }

    public func key(for file: VaultFile, purpose: UnlockPurpose, access: VaultAccess) throws -> UnlockKey? {
        if let failure { throw failure }
        if tried { return nil }
        tried = true
        let slots = file.slots(AgeSlot.self)
        guard !slots.isEmpty else { return nil }
        let source: AgeIdentitySource?
        let opened: AgeSlotKey?
        let identities: [any AgeIdentity]
        do {
            source = try load()
            identities = (source?.identities ?? []) + hardwareIdentities(slots.map(\.recipient))
            guard !identities.isEmpty else { return nil }
            opened = try AgeSlotKey.unlocking(file, path: access.path, with: identities)
        } catch let error as AgeError {
            access.ui.note("the vault's age slot is passed over: \(error.detail); asking for the passphrase")
            return nil
        } catch {
            failure = error
            throw error
        }
        guard let opened else {
            access.ui.note("\(source.map { "the age identity in \($0.path)" } ?? "the age plugin") opens none of the vault's age slots; asking for the passphrase")
            return nil
        }
        return UnlockKey(opened, deriveAgain: { file in
            guard let again = try AgeSlotKey.unlocking(file, path: access.path, with: identities) else { throw VaultError.wrongPassphrase }
            return again
        })
    }
}

extension VaultAccess {
    /// Adds an age slot sealed to `recipient`. It is sealed to once before anything is asked,
    /// so a recipient that cannot be sealed to (its plugin missing) costs no typing.
    public func addAgeSlot(_ recipient: any AgeRecipient, now: Int64) throws {
        _ = try AgeSlot.make(dataKey: SecretBytes.random(count: AgeSlot.dataKeyBytes), recipient: recipient, added: now)
        try addSlot { dataKey in try AgeSlot.make(dataKey: dataKey, recipient: recipient, added: now) }
    }
}
