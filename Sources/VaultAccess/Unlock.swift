import VaultCore

/// What a command supplies to unlock a vault: a secret read at a prompt, a note and a warning
/// shown. Which way in is tried, in what order, and how often a wrong secret may be typed again
/// are decided here (`UnlockMethod`, `VaultAccess.withSecret`), not by the UI. With the
/// progress hook of a derivation (`KeyDerivationProgress`), it is the only call from the
/// vault's walks back into the CLI.
public protocol UnlockUI: Sendable {
    /// Reads the secret `request` names, after showing its `retryNote`; nil when it cannot be
    /// had here (a later try from a descriptor or a file, which give one; a PIN without a
    /// terminal) or the user declined (Enter at the PIN prompt). An error when none can be
    /// read at all (no terminal).
    func ask(_ request: SecretRequest) throws -> SecretBytes?
    /// Tells the user something about the unlock (why an ssh slot was passed over, another
    /// writer holding the vault's lock).
    func note(_ text: String)
    /// Warns about the vault (a rollback accepted, a session that is not used).
    func warn(_ text: String)
    /// Whether a passphrase can be had without failing for lack of a terminal.
    var canAsk: Bool { get }
}

extension UnlockUI {
    public func note(_ text: String) {}
    public func warn(_ text: String) { note(text) }
}

/// One secret a command asks for: its prompt, where it may come from, and which try this is.
public struct SecretRequest: Sendable, Equatable {
    /// Where the secret may come from.
    public enum Source: Sendable, Equatable {
        /// --passphrase-fd, --passphrase-file, else the terminal.
        case passphraseOptions
        /// The terminal, else standard input.
        case terminalOrStandardInput
        /// The terminal only: nothing given on purpose is used for it.
        case terminalOnly
    }

    /// What the prompt names ("Passphrase", "Current passphrase", "Recovery code").
    public let name: String
    public let source: Source
    /// What a wrong one is called in notes ("wrong passphrase").
    public let wrong: String
    /// 1 for the first try; a later try is asked only on a terminal.
    public var attempt = 1
    /// Why the secret is asked again ("wrong passphrase, try again (2 of 3 left)").
    public var retryNote: String?

    public init(name: String, source: Source, wrong: String) {
        self.name = name
        self.source = source
        self.wrong = wrong
    }

    public static let passphrase = SecretRequest(name: "Passphrase", source: .passphraseOptions, wrong: "wrong passphrase")
    /// The passphrase `passwd` is about to replace.
    public static let currentPassphrase = SecretRequest(name: "Current passphrase", source: .passphraseOptions, wrong: "wrong passphrase")
    public static let recoveryCode = SecretRequest(name: "Recovery code", source: .terminalOrStandardInput, wrong: "wrong recovery code")
    /// An idle-locked session's PIN; Enter goes on to the passphrase.
    public static let pin = SecretRequest(name: "Unlock with PIN (passphrase: press Enter)", source: .terminalOnly, wrong: "wrong PIN")
}

/// What a command opens the vault for: any way in the vault offers (tried in the order of the
/// access's `UnlockMethod`s), or one secret by name (a change that rewraps the passphrase slot
/// or removes a way in asks for the passphrase itself).
public enum UnlockPurpose: Equatable, Sendable {
    case anyWayIn
    case secret(SecretRequest)
}

/// One way to open a vault, as age's identities: an ssh-agent's signature, the passphrase,
/// the recovery code. `VaultAccess` tries its methods in order (`UnlockMethods.standard`).
public protocol UnlockMethod {
    /// Whether it asks the user anything (a command without a terminal tries only those that do not).
    var prompts: Bool { get }
    /// Whether this method opens the vault for `purpose`.
    func serves(_ purpose: UnlockPurpose) -> Bool
    /// A key for one of `file`'s slots, with what it needs asked through `access` (its UI,
    /// its retries); nil, after a note saying why, to go on to the next method.
    func key(for file: VaultFile, purpose: UnlockPurpose, access: VaultAccess) throws -> UnlockKey?
    /// Why a method that asks nothing failed for a reason of its own (a damaged slot, a key
    /// file refused), once it has: thrown again when it is asked again, so a command without
    /// a terminal reports it rather than the missing passphrase.
    var failure: (any Error)? { get }
}

extension UnlockMethod {
    public var failure: (any Error)? { nil }
}

/// The ways in, in the order a command tries them.
public enum UnlockMethods {
    /// The age slots (when an identity is named: `ageIdentity`), the ssh-agent's slots (unless
    /// a passphrase was given on purpose: `sshAgent` nil), then the passphrase, then the
    /// recovery code (asked for by name only). An idle-locked session's PIN is tried before
    /// all of them, on the session's path (`sessionIsOpen`).
    public static func standard(sshAgent: SSHAgentUnlock?, ageIdentity: AgeIdentityUnlock? = nil) -> [any UnlockMethod] {
        (ageIdentity.map { [$0] } ?? []) + (sshAgent.map { [$0] } ?? []) + [SecretUnlock.passphrase, SecretUnlock.recoveryCode]
    }
}

/// A typed secret that derives a slot's key (Argon2id): the passphrase, the recovery code.
public struct SecretUnlock: UnlockMethod, Sendable {
    let requests: [SecretRequest]
    let servesAnyWayIn: Bool
    let derive: @Sendable (VaultFile, SecretBytes) throws -> any SlotKey

    public static let passphrase = SecretUnlock(requests: [.passphrase, .currentPassphrase], servesAnyWayIn: true) { file, secret in
        try PassphraseKey.unlocking(file, with: secret)
    }
    public static let recoveryCode = SecretUnlock(requests: [.recoveryCode], servesAnyWayIn: false) { file, secret in
        try RecoveryKey.unlocking(file, with: secret)
    }

    public var prompts: Bool { true }

    public func serves(_ purpose: UnlockPurpose) -> Bool {
        switch purpose {
        case .anyWayIn: servesAnyWayIn
        case .secret(let request): requests.contains { $0.name == request.name }
        }
    }

    public func key(for file: VaultFile, purpose: UnlockPurpose, access: VaultAccess) throws -> UnlockKey? {
        guard case .secret(let request) = purpose else { return try key(for: file, purpose: .secret(requests[0]), access: access) }
        return try access.withSecret(request) { secret in
            UnlockKey(try derive(file, secret), deriveAgain: { file in try derive(file, secret) })
        }
    }
}

/// A key for one of the vault's slots with the secret it came from, so reading and then
/// writing cost one derivation while the slot is unchanged.
public struct UnlockKey {
    public let key: any SlotKey
    /// Derives the key again for a slot that changed since (another writer's passwd); nil
    /// when there is no secret to derive from (a vault this command created, an ssh slot).
    let deriveAgain: ((VaultFile) throws -> any SlotKey)?

    public init(_ key: any SlotKey, deriveAgain: ((VaultFile) throws -> any SlotKey)? = nil) {
        self.key = key
        self.deriveAgain = deriveAgain
    }

    /// Opens `file` with the key while its slot is the one it was derived for; after another
    /// writer's passwd changed the salt, the secret is derived again.
    func open(_ file: VaultFile, path: String) throws -> VaultDocument {
        if key.fits(file) { return try VaultDocument.open(file, path: path, key: key) }
        guard let deriveAgain else { throw VaultError.wrongPassphrase }
        return try VaultDocument.open(file, path: path, key: try deriveAgain(file))
    }

    /// The passphrase slot's derived key, which a new passphrase keeps the parameters of.
    public var passphraseKey: PassphraseKey? { key as? PassphraseKey }
}

/// A way in that cannot be made or used from what its holder offers (an ssh-agent without
/// the key, a key whose signatures differ), with what to do about it: exit 1 with its hint.
public protocol UnlockFailure: ReportableError {
    var message: String { get }
    var hint: String { get }
}

extension UnlockFailure {
    public var report: FailureReport { FailureReport(.failure, message, hint: hint) }
}

/// An `UnlockFailure` with its words.
public struct SlotError: UnlockFailure {
    public let message: String
    public let hint: String
    public init(_ message: String, hint: String) {
        self.message = message
        self.hint = hint
    }
}
