import AgeFormat
import VaultCore

/// Phase 2 of both state machines (age-plugin.md): the plugin leads, one command at a time, and
/// gemvault answers each until `done`. The user's requests and `error` are answered here; the
/// state machine's own commands go to `handle`.
enum PluginConversation {
    /// Commands that belong to one state machine only: the other's sending one is out of order.
    static let recipientOnly: Set<String> = ["recipient-stanza", "labels"]
    static let identityOnly: Set<String> = ["file-key"]

    /// Runs phase 2 to its `done`; returns the messages of the plugin's `error` commands.
    /// `handle` answers the state machine's commands; `foreign` are the other machine's.
    static func run(_ process: PluginProcess, user: any AgePluginUser, foreign: Set<String>,
                    handle: (PluginCommand) throws(AgeError) -> Void) throws(AgeError) -> [String] {
        var errors: [String] = []
        for _ in 0..<process.limits.commandLimit {
            var command = try process.receive()
            // A file key or a PIN passes through here: wiped once answered.
            defer { SecretBytes.wipe(&command.body) }
            switch command.type {
            case "done":
                process.finished = true
                return errors
            case "msg":
                try process.send(user.show(text(command.body), from: process.program) ? "ok" : "fail")
            case "confirm":
                try confirm(command, process, user)
            case "request-public":
                if let answer = user.requestPublic(text(command.body), from: process.program) {
                    try process.send("ok", body: Array(answer.utf8))
                } else {
                    try process.send("fail")
                }
            case "request-secret":
                try requestSecret(command, process, user)
            case "error":
                errors.append(errorText(command))
                try process.send("ok")
            case let type where foreign.contains(type):
                throw process.failure("sent '\(type)', which belongs to the other state machine (the protocol was broken)")
            case let type where recipientOnly.contains(type) || identityOnly.contains(type):
                try handle(command)
            default:
                // Grease, or a command of a later version: answered as the spec says.
                try process.send("unsupported")
            }
        }
        throw process.failure("sent more than \(process.limits.commandLimit) commands without finishing")
    }

    private static func confirm(_ command: PluginCommand, _ process: PluginProcess, _ user: any AgePluginUser) throws(AgeError) {
        guard (1...2).contains(command.arguments.count), let yes = AgePluginWire.decodeArgument(command.arguments[0]) else {
            throw process.failure("sent a malformed confirm")
        }
        var no: String?
        if command.arguments.count == 2 {
            guard let decoded = AgePluginWire.decodeArgument(command.arguments[1]) else { throw process.failure("sent a malformed confirm") }
            no = text(decoded)
        }
        switch user.confirm(text(command.body), yes: text(yes), no: no, from: process.program) {
        case true?: try process.send("ok", ["yes"])
        case false?: try process.send("ok", ["no"])
        case nil: try process.send("fail")
        }
    }

    /// The secret goes from the hidden prompt's secret memory to the plugin; nothing else keeps it.
    private static func requestSecret(_ command: PluginCommand, _ process: PluginProcess, _ user: any AgePluginUser) throws(AgeError) {
        guard let secret = user.requestSecret(text(command.body), from: process.program) else {
            try process.send("fail")
            return
        }
        try secret.withUnsafeBytes { (raw) throws(AgeError) in try process.send("ok", body: raw) }
    }

    /// What the plugin said, as text (neutralised where it is shown).
    static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes.prefix(4096), as: UTF8.self) }

    private static func errorText(_ command: PluginCommand) -> String {
        let subject = command.arguments.joined(separator: " ")
        let message = text(command.body)
        return subject.isEmpty ? message : "\(subject): \(message)"
    }
}
