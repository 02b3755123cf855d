import Settings
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

let pinCommands: [CommandSpec] = [
    CommandSpec(path: ["pin", "set"], arguments: "", argumentRange: 0...0,
                summary: "set a PIN for the unlocked session: after an idle lock, the PIN opens it again",
                options: [],
                details: "The PIN (4 to 64 characters, digits allowed) is asked twice on the terminal, or read as one line from stdin when stdin is not a terminal.\nThe agent keeps the vault's key wrapped under Argon2id(PIN) and 32 random bytes that exist only in its locked memory; nothing of it is written anywhere.\nThe setting pin_tries (default 3) wrong PINs wipe it; lock, the session's absolute limit, passwd, rekey and recover end it. Docs/quick-unlock.md.",
                run: { try PinCommand.setPIN($0) }),
    CommandSpec(path: ["pin", "clear"], arguments: "", argumentRange: 0...0,
                summary: "forget the session's PIN: after an idle lock, the passphrase is needed again",
                options: [], details: "A session locked while idle, whose PIN was all it had left, ends.", run: PinCommand.clear),
]

enum PinCommand {
    /// `N tries left` / `1 try left`.
    static func tries(_ count: Int) -> String { "\(count) \(count == 1 ? "try" : "tries") left" }

    /// Asks for a new PIN and hands it to the unlocked session; `tries` is pin_tries, resolved
    /// here from every layer (the session's vault settings included) when not given.
    static func setPIN(_ call: Invocation, tries given: Int? = nil) throws {
        let context = call.context
        guard let status = try? context.vault.session.status(), status.unlocked else {
            throw CommandFailure(.failure, "no unlocked session for \(context.vaultPath): a PIN opens a session again, so one must be open",
                                 hint: "run 'gemvault unlock --pin'")
        }
        let tries: Int
        if let given {
            tries = given
        } else {
            var layers = try context.settingLayers(call)
            layers.vaultSettings = (try? context.vault.session.settings()) ?? [:]
            layers.vaultPath = context.vaultPath
            tries = try Settings.resolve(layers)[.pinTries]
        }
        let source: SecretSource = Terminal.stdinIsTerminal ? .terminal : .fileDescriptor(FileDescriptor.standardInput.raw)
        let pin = try SecretInput.readNew(from: source, prompt: "New PIN: ", confirmPrompt: "Repeat the PIN: ",
                                          weakness: { PINWrappedKey.isAllowed($0) ? nil : lengthRule }, warn: { Console.warning($0) })
        guard PINWrappedKey.isAllowed(pin) else { throw CommandFailure(.usage, lengthRule, hint: "run the command again with another PIN") }
        Redaction.registerPassphrase(pin)
        let after = try context.vault.session.setPIN(pin, tries: tries)
        Console.note("PIN set: after an idle lock, it opens the session again until \(after.maxDeadline.map(Output.localDate) ?? "the session's absolute limit"); \(tries) wrong \(tries == 1 ? "PIN wipes" : "PINs wipe") it")
    }

    static let lengthRule = "a PIN has \(PINWrappedKey.lengths.lowerBound) to \(PINWrappedKey.lengths.upperBound) characters"

    static func clear(_ call: Invocation) throws {
        let agent = call.context.vault.session
        guard let status = try? agent.status(), status.pinTriesLeft != nil else {
            Console.note("no PIN is set for \(call.context.vaultPath)")
            return
        }
        try agent.forgetPIN()
        Console.note(status.unlocked ? "PIN forgotten; after an idle lock the passphrase is needed" : "PIN forgotten; the locked session ended")
    }
}
