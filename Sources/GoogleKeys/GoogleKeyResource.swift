/// The API Keys service's name of a key, `projects/PROJECT/locations/LOCATION/keys/ID`: exactly
/// six segments, none empty (Google answers with the project number and location `global`).
/// The one parser of that name; anything else is not a key's name.
public struct GoogleKeyResource: Sendable, Equatable, CustomStringConvertible {
    public let project: String
    public let location: String
    public let keyId: String

    public init?(_ name: String) {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "projects", parts[2] == "locations", parts[4] == "keys",
              !parts[1].isEmpty, !parts[3].isEmpty, !parts[5].isEmpty else { return nil }
        project = String(parts[1])
        location = String(parts[3])
        keyId = String(parts[5])
    }

    /// A key of `project` in the only location keys have.
    public init(project: String, keyId: String) {
        self.project = project
        self.location = "global"
        self.keyId = keyId
    }

    /// The folder of a project's keys, `projects/PROJECT/locations/global/keys`.
    public static func collection(project: String) -> String { "projects/\(project)/locations/global/keys" }

    public var name: String { "projects/\(project)/locations/\(location)/keys/\(keyId)" }
    public var description: String { name }
}
