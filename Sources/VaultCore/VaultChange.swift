import GoogleKeys

/// One change to a vault's contents, the same whether it is made in this process under the
/// vault's lock or sent to the session agent: the agent is never handed a whole payload.
public enum VaultChange: Sendable {
    /// Store or replace a key; a replaced value goes into its history.
    case setKey(name: String, secret: SecretBytes, now: Int64)
    /// Replace an existing key (rotation): refused when there is no such key.
    case replaceKey(name: String, secret: SecretBytes, now: Int64)
    /// Replace an existing key with a value made at Google by `key rotate --create`: the new
    /// value's Google key is recorded, and so is the replaced one's (`replacedGoogle`, found by
    /// a lookup when the vault did not know it yet).
    case rotateKey(name: String, secret: SecretBytes, now: Int64, google: GoogleKeyRecord, replacedGoogle: GoogleKeyRecord?)
    case removeKey(name: String)
    /// Make a key's previous value current again.
    case rollBack(name: String, now: Int64)
    /// Set (a value) or unset (nil) a vault setting.
    case setting(name: String, value: String?)
    /// Makes the sharing identity when the vault has none (labelled `label`; hybrid post-quantum
    /// unless `classic`), or relabels it when `relabel`. Its secrets are made where the change is
    /// applied: in a session, inside the agent.
    case identity(label: String, relabel: Bool, classic: Bool = false)
    /// Adds a hybrid post-quantum seed to a classic identity (`identity --upgrade`); refused
    /// without an identity, nothing changed when it has one already (`replaced` then says so).
    case upgradeIdentity
    /// Records a key's sharing state: a share written, a recipient dropped, a followed file read.
    case recordSharing(name: String, record: KeySharing)
    /// Stores an imported key and its sharing state together.
    case importKey(name: String, secret: SecretBytes, now: Int64, google: GoogleKeyRecord?, record: KeySharing)
    /// Stores a key fetched from Secret Manager and links it to its secret (`key set --from`).
    case linkKey(name: String, secret: SecretBytes, now: Int64, link: SecretLink)
    /// A linked key fetched again: a changed value becomes current (the old one goes into its
    /// history), and the link notes the version and the time. Applied only while the key is
    /// still linked as it was when the fetch began (fetched at `since`): a value set by hand,
    /// or another link, made meanwhile is never overwritten.
    case refreshLink(name: String, secret: SecretBytes, now: Int64, link: SecretLink, since: Int64)
    /// `key rotate --create` of a linked key: the value made at Google and added to the secret
    /// as `link.version` becomes current with its Google key, and the link records the rotation
    /// (the version and key its finish retires). Refused unless the key is linked to the same secret.
    case rotateLinkedKey(name: String, secret: SecretBytes, now: Int64, google: GoogleKeyRecord, replacedGoogle: GoogleKeyRecord?, link: SecretLink)
    /// A linked key's rotation finished (its grace is over, the previous version disabled and the
    /// old key deleted): recorded only while the link's rotation is still the one that replaced
    /// `version` (a refresh meanwhile does not matter).
    case finishLinkedRotation(name: String, version: UInt64)
    /// `key rotate --undo` of a linked key: the previous value current again, the link at the
    /// version that now holds it and without a rotation to finish.
    case rollBackLinked(name: String, now: Int64, link: SecretLink)
    /// A change to the secrets for other tools.
    case secret(ToolSecretChange)

    /// What a change reports back, for its message: the masked value it replaced or restored.
    public struct Outcome: Sendable, Equatable {
        public let masked: String?
        public let replaced: Bool

        public init(masked: String?, replaced: Bool) {
            self.masked = masked
            self.replaced = replaced
        }
    }

    /// Applies the change; the contents stay as they were when it throws.
    @discardableResult
    public func apply(to contents: VaultContents) throws(VaultError) -> Outcome {
        try refuseIfLinked(contents)
        switch self {
        case .setKey(let name, let secret, let now):
            let old = contents.key(named: name)
            try contents.setKey(name, secret: secret, now: now)
            // A value set by hand is the key's own now: Secret Manager no longer replaces it.
            contents.links[name] = nil
            return Outcome(masked: old?.secret.masked, replaced: old != nil)
        case .replaceKey(let name, let secret, let now):
            guard let old = contents.key(named: name) else { throw .keyNotFound(name: name) }
            try contents.setKey(name, secret: secret, now: now)
            return Outcome(masked: old.secret.masked, replaced: true)
        case .rotateKey(let name, let secret, let now, let google, let replacedGoogle):
            guard let old = contents.key(named: name) else { throw .keyNotFound(name: name) }
            try contents.setKey(name, secret: secret, now: now, google: google, replacedGoogle: replacedGoogle)
            return Outcome(masked: old.secret.masked, replaced: true)
        case .removeKey(let name):
            try contents.removeKey(name)
            return Outcome(masked: nil, replaced: true)
        case .rollBack(let name, let now):
            return Outcome(masked: try contents.rollBack(name, now: now).secret.masked, replaced: true)
        case .setting(let name, let value):
            let had = contents.settings[name] != nil
            if let value { try contents.setSetting(name, value: value) } else { _ = contents.removeSetting(name) }
            return Outcome(masked: nil, replaced: had)
        case .identity, .upgradeIdentity:
            return try applyIdentity(to: contents)
        case .recordSharing(let name, let record):
            let had = contents.sharing[name] != nil
            try contents.setSharing(name, record)
            return Outcome(masked: nil, replaced: had)
        case .importKey(let name, let secret, let now, let google, let record):
            return try Self.applyImportKey(name, secret, now, google: google, record: record, in: contents)
        case .linkKey(let name, let secret, let now, let link):
            guard link.isWellFormed else { throw .valueTooLarge("the Secret Manager reference of \(name)") }
            let old = contents.key(named: name)
            try contents.setKey(name, secret: secret, now: now)
            try contents.setLink(name, link)
            return Outcome(masked: old?.secret.masked, replaced: old != nil)
        case .refreshLink(let name, let secret, let now, let link, let since):
            return try Self.applyRefreshLink(name, secret, now, link, since: since, in: contents)
        case .rotateLinkedKey(let name, let secret, let now, let google, let replacedGoogle, let link):
            return try Self.applyRotateLinkedKey(name, secret, now, google: google, replacedGoogle: replacedGoogle, link: link, in: contents)
        case .finishLinkedRotation(let name, let version):
            return try Self.applyFinishLinkedRotation(name, version: version, in: contents)
        case .rollBackLinked(let name, let now, let link):
            guard let current = contents.links[name], current.reference == link.reference else { throw .notLinked(name: name) }
            guard link.isWellFormed else { throw .valueTooLarge("the Secret Manager reference of \(name)") }
            let restored = try contents.rollBack(name, now: now)
            try contents.setLink(name, link)
            return Outcome(masked: restored.secret.masked, replaced: true)
        case .secret(let change): return try contents.apply(change)
        }
    }

    /// A linked key's value comes from Secret Manager: it is not replaced, rotated or rolled
    /// back by hand.
    private func refuseIfLinked(_ contents: VaultContents) throws(VaultError) {
        switch self {
        case .replaceKey(let name, _, _), .rotateKey(let name, _, _, _, _), .rollBack(let name, _):
            // The next fetch would replace such a value, and a deleted Google key come back.
            if let link = contents.links[name] { throw .linkedKey(name: name, reference: link.reference) }
        default: break
        }
    }

    /// The sharing identity made, relabelled, or given its post-quantum part.
    private func applyIdentity(to contents: VaultContents) throws(VaultError) -> Outcome {
        switch self {
        case .identity(let label, let relabel, let classic):
            if let existing = contents.identity {
                if relabel { try contents.setIdentity(existing.relabeled(label)) }
                return Outcome(masked: nil, replaced: true)
            }
            try contents.setIdentity(.generate(label: label, classic: classic))
            return Outcome(masked: nil, replaced: false)
        default:
            guard let existing = contents.identity else { throw .cryptoFailure("the vault has no sharing identity to upgrade") }
            if existing.hybridSeed != nil { return Outcome(masked: nil, replaced: false) }
            try contents.setIdentity(existing.upgraded())
            return Outcome(masked: nil, replaced: true)
        }
    }

    /// A shared key received: the key and its sharing record stored together, or neither.
    private static func applyImportKey(_ name: String, _ secret: SecretBytes, _ now: Int64, google: GoogleKeyRecord?, record: KeySharing,
                                       in contents: VaultContents) throws(VaultError) -> Outcome {
        let old = contents.key(named: name)
        // Checked first, so a refused record leaves the key unstored.
        guard record.recipients.count <= KeySharing.recipientLimit else { throw .valueTooLarge("the recipients of \(name)") }
        try contents.setKey(name, secret: secret, now: now, google: google)
        try contents.setSharing(name, record)
        return Outcome(masked: old?.secret.masked, replaced: old != nil)
    }

    /// A linked key's rotation: the new value and the link that will finish it, while the
    /// key is still linked to the same secret.
    private static func applyRotateLinkedKey(_ name: String, _ secret: SecretBytes, _ now: Int64, google: GoogleKeyRecord,
                                             replacedGoogle: GoogleKeyRecord?, link: SecretLink,
                                             in contents: VaultContents) throws(VaultError) -> Outcome {
        guard let old = contents.key(named: name) else { throw .keyNotFound(name: name) }
        guard let current = contents.links[name], current.reference == link.reference else { throw .notLinked(name: name) }
        guard link.isWellFormed else { throw .valueTooLarge("the Secret Manager reference of \(name)") }
        try contents.setKey(name, secret: secret, now: now, google: google, replacedGoogle: replacedGoogle)
        try contents.setLink(name, link)
        return Outcome(masked: old.secret.masked, replaced: true)
    }

    /// A fetch's new value and time, stored only when the link is still the one fetched.
    private static func applyRefreshLink(_ name: String, _ secret: SecretBytes, _ now: Int64, _ link: SecretLink, since: Int64,
                                         in contents: VaultContents) throws(VaultError) -> Outcome {
        guard let old = contents.key(named: name) else { throw .keyNotFound(name: name) }
        guard link.isWellFormed else { throw .valueTooLarge("the Secret Manager reference of \(name)") }
        guard let current = contents.links[name], current.reference == link.reference, current.fetched == since else {
            return Outcome(masked: nil, replaced: false)
        }
        let changed = !old.secret.isEqual(to: secret)
        if changed { try contents.setKey(name, secret: secret, now: now) }
        var kept = link
        kept.rotation = current.rotation
        try contents.setLink(name, kept)
        return Outcome(masked: old.secret.masked, replaced: changed)
    }

    /// A linked rotation's grace over: the rotation kept only as done, once.
    private static func applyFinishLinkedRotation(_ name: String, version: UInt64, in contents: VaultContents) throws(VaultError) -> Outcome {
        guard let current = contents.links[name], let rotation = current.rotation, rotation.previousVersion == version, rotation.isPending else {
            return Outcome(masked: nil, replaced: false)
        }
        var finished = current
        finished.rotation = LinkedRotation(previousVersion: rotation.previousVersion, retireKey: rotation.retireKey, finishAfter: 0)
        try contents.setLink(name, finished)
        return Outcome(masked: nil, replaced: true)
    }
}

/// What may be shown of a key without its value: for `key list`, `key history`, `status`.
public struct KeySummary: Sendable, Equatable {
    public struct Earlier: Sendable, Equatable {
        public let masked: String
        public let kind: GoogleKeyKind
        public let retired: Int64
        public let google: GoogleKeyRecord?

        public init(masked: String, kind: GoogleKeyKind, retired: Int64, google: GoogleKeyRecord? = nil) {
            self.masked = masked
            self.kind = kind
            self.retired = retired
            self.google = google
        }
    }

    public let name: String
    public let masked: String
    public let kind: GoogleKeyKind
    public let created: Int64
    public let updated: Int64
    public let lastUsed: Int64
    public let earlier: [Earlier]
    /// The current value's key at Google, when known.
    public let google: GoogleKeyRecord?
    /// The secret the value is fetched from, for a linked key.
    public var link: SecretLink?

    public init(name: String, masked: String, kind: GoogleKeyKind, created: Int64, updated: Int64, lastUsed: Int64, earlier: [Earlier],
                google: GoogleKeyRecord? = nil) {
        self.google = google
        self.name = name
        self.masked = masked
        self.kind = kind
        self.created = created
        self.updated = updated
        self.lastUsed = lastUsed
        self.earlier = earlier
    }
}

extension StoredKey {
    public var summary: KeySummary {
        var summary = KeySummary(name: name, masked: secret.masked, kind: secret.googleKeyKind, created: created, updated: updated, lastUsed: lastUsed,
                   earlier: previous.map { KeySummary.Earlier(masked: $0.secret.masked, kind: $0.secret.googleKeyKind, retired: $0.retired, google: $0.google) },
                   google: google)
        summary.link = link
        return summary
    }
}
