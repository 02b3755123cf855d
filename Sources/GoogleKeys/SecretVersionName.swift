/// Secret Manager's name of a secret's version, `projects/PROJECT/secrets/SECRET/versions/N`:
/// exactly six segments, none empty, N a version number above 0 written plainly (`latest` and
/// `007` are not names Google gives). The one parser of that name, beside `GoogleKeyResource`.
public struct SecretVersionName: Sendable, Equatable, CustomStringConvertible {
    /// The project's id, or (Google answers with it) its number.
    public let project: String
    public let secret: String
    public let version: UInt64

    public init?(_ name: String) {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 6, parts[0] == "projects", parts[2] == "secrets", parts[4] == "versions",
              !parts[1].isEmpty, !parts[3].isEmpty,
              let number = UInt64(parts[5]), number > 0, String(number) == parts[5] else { return nil }
        project = String(parts[1])
        secret = String(parts[3])
        version = number
    }

    /// Whether `project` is a project number rather than an id.
    public var namesProjectNumber: Bool { Self.isNumber(project) }

    static func isNumber(_ text: String) -> Bool { !text.isEmpty && text.allSatisfy(\.isASCII) && text.allSatisfy(\.isNumber) }

    public var name: String { "projects/\(project)/secrets/\(secret)/versions/\(version)" }
    public var description: String { name }
}
