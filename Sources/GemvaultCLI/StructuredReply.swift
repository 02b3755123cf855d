import FoundationEssentials
import Conversations
import SystemIO
import VaultCore

/// `ask --schema FILE`: the schema sent as `responseJsonSchema`, and the reply checked against
/// it here before a script sees it (exit 8 when it does not match).
struct StructuredReply {
    /// Far more than a schema needs; a mistaken file is not read whole.
    static let fileLimit = 1 << 20

    let path: String
    let json: JSONValue
    private let checker: JSONSchemaCheck

    /// Refused (exit 64) before any request: a file that is not a JSON Schema gemvault can enforce.
    static func load(_ path: String, _ call: Invocation) throws -> StructuredReply {
        guard let text = PlainFile.readText(path, limit: fileLimit) else {
            throw UsageError("--schema \(path): no such regular file, unreadable, or over 1 MiB", command: call.command,
                             fix: "give the path of a JSON Schema file of at most 1 MiB")
        }
        guard let json = try? JSONDecoder().decode(JSONValue.self, from: Data(text.utf8)) else {
            throw UsageError("--schema \(path) is not JSON", command: call.command)
        }
        guard case .object = json else { throw UsageError("--schema \(path) must hold a JSON Schema object", command: call.command) }
        do {
            return StructuredReply(path: path, json: json, checker: try JSONSchemaCheck(json))
        } catch {
            throw UsageError("--schema \(path): \(error.message)", command: call.command)
        }
    }

    /// The reply parsed, when it is JSON that matches.
    func check(_ reply: String) throws -> JSONValue {
        guard let value = try? JSONDecoder().decode(JSONValue.self, from: Data(reply.utf8)) else {
            throw CommandFailure(.replyMismatch, "the reply is not JSON, so it cannot match \(path)",
                                 hint: "'gemvault ask --json --schema \(path) …' shows the reply in 'text'")
        }
        let violation: String?
        do {
            violation = try checker.firstViolation(in: value)
        } catch {
            throw CommandFailure(.replyMismatch, "the reply could not be checked against \(path): the check stopped after \(error.steps) steps or \(Int(error.seconds)) seconds",
                                 hint: "simplify the schema (fewer anyOf/oneOf branches, shorter patterns); 'gemvault ask --json --schema \(path) …' shows the reply in 'text'")
        }
        if let violation {
            throw CommandFailure(.replyMismatch, "the reply does not match \(path): \(violation)",
                                 hint: "'gemvault ask --json --schema \(path) …' shows the reply in 'text'")
        }
        return value
    }
}
