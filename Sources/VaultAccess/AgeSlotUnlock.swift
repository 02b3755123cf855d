import AgeFormat
import Sharing
import SystemIO
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

    /// The identities in the private identity file `path` (checked as a passphrase file is),
    /// read straight into locked memory, as the key file is: it holds secret keys.
    /// `sshPassphrase` asks a protected ssh key's passphrase (`IdentityFile`).
    public static func reading(_ path: String, sshPassphrase: (Int) throws -> SecretBytes) throws -> AgeIdentitySource {
        let file: FileDescriptor?
        do throws(TrustedOpenError) { file = try TrustedFile.openSecret(ProcessIdentity.expandingTilde(path)) } catch { throw VaultError(error) }
        guard let file else { throw Unreadable.missing(path: path) }
        let limit = 64 << 10
        let buffer = SecretBytes(count: limit + 1)
        let length: Int
        do { length = try buffer.withUnsafeMutableBytes { raw throws(SystemError) in try file.readFully(into: raw) } } catch {
            throw Unreadable.failed(path: path, reason: error.reason)
        }
        guard length <= limit else { throw Unreadable.failed(path: path, reason: "it is larger than \(limit >> 10) KiB, more than any identity file") }
        buffer.truncate(to: length)
        return AgeIdentitySource(path: path, identities: try IdentityFile.identities(in: buffer, path: path, sshPassphrase: sshPassphrase))
    }

    /// An identity file that is not there, or cannot be read.
    public enum Unreadable: Error, Equatable, ReportableError {
        case missing(path: String)
        case failed(path: String, reason: String)

        public var report: FailureReport {
            switch self {
            case .missing(let path):
                FailureReport(.failure, "the age identity \(path) does not exist", hint: "name the file age-keygen wrote (-i FILE, or the age_identity setting in config.json)")
            case .failed(let path, let reason): FailureReport(.failure, "cannot read the age identity \(path): \(reason)")
            }
        }
    }
}

/// The age slots' way in: tried first, before the ssh-agent and any prompt, when an age
/// identity is at hand (`unlock -i`, the age_identity setting, a plugin's hardware); passed
/// over, with a note, when it opens none of them. The identity file is read only when the
/// vault has an age slot. The file's identities go over every age slot first; only when none
/// opens does a plugin's default identity run (its touch or PIN prompt) for its own slots.
public final class AgeIdentityUnlock: UnlockMethod {
    let load: () throws -> AgeIdentitySource?
    /// The identities an age plugin offers with its hardware present, for the slots'
    /// recipients (age's `-j NAME`): the seam the plugin client fills; none without it.
    let hardwareIdentities: ([String]) -> [any AgeIdentity]
    /// The identity file named on the command line (`unlock -i FILE`): a vault with no age
    /// slot says it is not used, rather than ignore it.
    let named: String?
    private var tried = false
    public private(set) var failure: (any Error)?

    public init(load: @escaping () throws -> AgeIdentitySource?, hardwareIdentities: @escaping ([String]) -> [any AgeIdentity] = { _ in [] }, named: String? = nil) {
        self.load = load
        self.hardwareIdentities = hardwareIdentities
        self.named = named
    }

    public var prompts: Bool { false }
    public func serves(_ purpose: UnlockPurpose) -> Bool { purpose == .anyWayIn }

    public func key(for file: VaultFile, purpose: UnlockPurpose, access: VaultAccess) throws -> UnlockKey? {
        if let failure { throw failure }
        if tried { return nil }
        tried = true
        guard !file.slots(AgeSlot.self).isEmpty else {
            if let named { access.ui.note("the vault has no age slot, so the age identity in \(named) opens nothing; 'gemvault slot add age RECIPIENT' adds one") }
            return nil
        }
        let source: AgeIdentitySource?
        var passedOver: [String] = []
        var offered = false
        do {
            let loaded: AgeIdentitySource?
            do { loaded = try load() } catch let error as AgeError {
                access.ui.note("the vault's age slots are passed over: \(error.detail); asking for the passphrase")
                return nil
            }
            source = loaded
            let passes: [(AgeSlot) -> [any AgeIdentity]] = [{ _ in loaded?.identities ?? [] }, { self.hardwareIdentities([$0.recipient]) }]
            for pass in passes {
                let tried = try AgeSlotKey.trying(file, path: access.path) { slot in
                    let identities = pass(slot)
                    offered = offered || !identities.isEmpty
                    return identities
                }
                if let opened = tried.key { return key(opened, pass: pass, access: access) }
                passedOver += tried.passedOver.filter { !passedOver.contains($0) }
            }
        } catch {
            failure = error
            throw error
        }
        guard offered else { return nil }
        for reason in passedOver { access.ui.note(reason) }
        access.ui.note("\(source.map { "the age identity in \($0.path)" } ?? "the age plugin") opens none of the vault's age slots; asking for the passphrase")
        return nil
    }

    /// The key a pass opened, opened again with the same identities after another writer changed the slot.
    private func key(_ opened: AgeSlotKey, pass: @escaping (AgeSlot) -> [any AgeIdentity], access: VaultAccess) -> UnlockKey {
        UnlockKey(opened, deriveAgain: { file in
            guard let again = try AgeSlotKey.trying(file, path: access.path, with: pass).key else { throw VaultError.wrongPassphrase }
            return again
        })
    }
}

extension VaultAccess {
    /// Adds an age slot sealed to `recipient`. A plugin's recipient is sealed to once before
    /// anything is asked, so one that cannot be (its plugin missing) costs no typing; any other
    /// recipient always can be, and its plugin-less sealing is not done twice.
    public func addAgeSlot(_ recipient: any AgeRecipient, now: Int64) throws {
        if AgePluginName.ofRecipient(recipient.text) != nil {
            _ = try AgeSlot.make(dataKey: SecretBytes.random(count: AgeSlot.dataKeyBytes), recipient: recipient, added: now)
        }
        try addSlot { dataKey in try AgeSlot.make(dataKey: dataKey, recipient: recipient, added: now) }
    }
}
