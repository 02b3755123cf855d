/// What a rotation tells the person running it, supplied by the command: the workflow decides
/// what to say, the command how to show it (and where `--json` goes).
public protocol RotationProgress {
    func note(_ text: String)
    func warning(_ text: String)
    /// Lets `seconds` pass (the grace period), showing `label` while it lasts.
    func wait(_ seconds: Double, showing label: String)
    /// The value of `name` changed: its recipients get the new one.
    func keyChanged(_ name: String)
    /// What the command did, once it is done (or stopped after storing a new key).
    func finished(_ report: RotationReport) throws
}

/// What `key rotate --json` prints: the Google keys' names, never a key. A linked key's
/// rotation adds its secret and versions (absent otherwise).
public struct RotationReport: Encodable, Equatable, Sendable {
    public let name: String
    public var action: String
    public var old_key: String?
    public var new_key: String?
    public var service_account: String?
    public var old_key_deleted: Bool
    public let age_days: Int64
    public var secret: String?
    public var secret_version: UInt64?
    public var previous_version: UInt64?
    public var finish_after: String?

    init(name: String, action: String, old_key: String?, new_key: String?, service_account: String?, old_key_deleted: Bool, age_days: Int64,
         secret: String? = nil, secret_version: UInt64? = nil, previous_version: UInt64? = nil, finish_after: String? = nil) {
        self.name = name
        self.action = action
        self.old_key = old_key
        self.new_key = new_key
        self.service_account = service_account
        self.old_key_deleted = old_key_deleted
        self.age_days = age_days
        self.secret = secret
        self.secret_version = secret_version
        self.previous_version = previous_version
        self.finish_after = finish_after
    }

    private enum Keys: String, CodingKey {
        case name, action, old_key, new_key, service_account, old_key_deleted, age_days, secret, secret_version, previous_version, finish_after
    }

    /// The Google keys' fields are always there (null when unknown); the secret's only for a linked key.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(name, forKey: .name)
        try container.encode(action, forKey: .action)
        try container.encode(old_key, forKey: .old_key)
        try container.encode(new_key, forKey: .new_key)
        try container.encode(service_account, forKey: .service_account)
        try container.encode(old_key_deleted, forKey: .old_key_deleted)
        try container.encode(age_days, forKey: .age_days)
        try container.encodeIfPresent(secret, forKey: .secret)
        try container.encodeIfPresent(secret_version, forKey: .secret_version)
        try container.encodeIfPresent(previous_version, forKey: .previous_version)
        try container.encodeIfPresent(finish_after, forKey: .finish_after)
    }
}
