import Conversations
import GoogleKeys
import KeyResolution
import Rotation
import Settings
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

let rotationCommands: [CommandSpec] = [
    CommandSpec(path: ["key", "rotate"], arguments: "[NAME]", argumentRange: 0...1,
                summary: "replace a key: paste a new one, or have Google make it (--create) and delete the old one",
                options: [.noVerify, .checkTimeout, .allowInsecureEndpoint, .create, .undo, .finish, .ifOlderThan, .ifDue, .keepOld, .project, .serviceAccount,
                          .verifyTimeout, .grace, .noWait, .forceClaim, .apikeysEndpoint, .secretmanagerEndpoint, .json],
                details: "Without --create or --undo, the new key comes from a hidden prompt, or stdin when it is not a terminal. The check lists the models (one cheap call).\nA key the API refuses changes nothing (exit 6). Afterwards, delete the old key in Google AI Studio.\nWith --create, gemvault finds the key at Google (recorded by an earlier rotation, else keys:lookupKey), makes a new auth key bound to the same service account with the same restrictions, checks it against Gemini (retrying while Google propagates it), stores it, and deletes the old key. Any failure before the new key is stored deletes it again and leaves the vault as it was. Credentials: token_command, GOOGLE_APPLICATION_CREDENTIALS, gcloud's application-default credentials, or the metadata server (Docs/rotation.md). Google refusing exits 6, no answer 7.\nA key linked to Secret Manager (key set --from gsm://…) is rotated through its secret: the new key is checked, added as a version and stored, and after --grace the previous version is disabled and the old key deleted; --if-due lets one machine of a fleet rotate, and --force takes over another rotator's live claim (Docs/fleet.md).",
                run: RotationCommand.rotate),
    CommandSpec(path: ["key", "history"], arguments: "NAME", argumentRange: 1...1,
                summary: "a key's current and earlier values, masked, with their dates",
                options: [.json], details: "", run: RotationCommand.history),
    CommandSpec(path: ["key", "rollback"], arguments: "NAME", argumentRange: 1...1,
                summary: "make a key's previous value current again (recorded in its history)",
                options: [], details: "", run: RotationCommand.rollback),
]

enum RotationCommand {
    static func rotate(_ call: Invocation) throws {
        let context = call.context
        let name = call.positionals.first ?? Setting.key.defaultValue
        let googleOnly: [OptionSpec] = [.ifOlderThan, .ifDue, .keepOld, .project, .serviceAccount, .verifyTimeout, .grace, .noWait, .forceClaim, .apikeysEndpoint,
                                        .secretmanagerEndpoint, .json]
        let modes = [OptionSpec.create, .undo, .finish].filter(call.flag)
        if modes.count > 1 { throw UsageError("give one of --create, --undo and --finish", command: call.command) }
        if let mode = modes.first {
            if call.flag(.noVerify) { throw UsageError("--no-verify is for a pasted key; --create always checks the new key", command: call.command) }
            let createOnly: [OptionSpec] = [.ifOlderThan, .ifDue, .project, .serviceAccount, .verifyTimeout, .forceClaim]
            if mode != .create, let option = createOnly.first(where: call.flag) {
                throw UsageError("\(option.name) goes with --create", command: call.command)
            }
            if mode == .finish && call.flag(.grace) { throw UsageError("--grace goes with --create or --undo", command: call.command) }
            if call.flag(.ifOlderThan) && call.flag(.ifDue) { throw UsageError("give --if-older-than or --if-due, not both", command: call.command) }
            switch mode {
            case .create: return try GoogleRotation.create(call.rotationRequest(), name: name)
            case .undo: return try GoogleRotation.undo(call.rotationRequest(), name: name)
            default: return try FleetRotation.finishCommand(call.rotationRequest(), name: name)
            }
        }
        if let option = googleOnly.first(where: call.flag) { throw UsageError("\(option.name) goes with --create or --undo", command: call.command) }
        try VaultContents.validateName(name)
        try context.vault.checkBeforePrompt()
        let key = try VaultCommand.readAPIKey(prompt: "New API key for '\(name)': ")
        KeyKindNotice.warn(key, name: name)
        let outcome = try PastedRotation.replace(name, with: key, now: Output.now(), in: context.vault,
                                                 check: call.flag(.noVerify) ? nil : { try verify(key, call, vaultSettings: $0) })
        Console.note("rotated key '\(name)' to \(key.masked)\(call.flag(.noVerify) ? " (not checked)" : ", which the API accepted"); the previous one (\(outcome.masked ?? "?")) is kept in its history")
        call.context.vault.reshareAfterRotation(name: name, ConsoleShareOutput())
        Console.note("now delete the old key where it was made: https://aistudio.google.com/apikey ('gemvault key rollback \(name)' undoes the rotation)")
    }

    /// One cheap authenticated call (listing models) with the new key, against the endpoint
    /// the key will be used with: the vault's settings count.
    static func verify(_ key: SecretBytes, _ call: Invocation, vaultSettings: [String: String]?, origin: String = "the new key",
                       replaceHint: String = "check that you pasted the whole new key; nothing was changed") throws {
        ProviderChoice.current.prepare()
        let context = call.context
        var layers = try context.settingLayers(call)
        if let vaultSettings {
            layers.vaultSettings = vaultSettings
            layers.vaultPath = context.vaultPath
        }
        let settings = try Settings.resolve(layers)
        let setup = ProviderChoice.Setup(settings: settings, key: key, keyOrigin: origin, keyReplaceHint: replaceHint)
        _ = try ProviderChoice.current.build(setup).chatModels(handlers: StreamHandlers())
    }

    struct HistoryEntry: Encodable {
        let value: String
        let kind: GoogleKeyKind
        let current: Bool
        /// When it was set (current) or replaced (earlier values).
        let date: String
        /// The value's key at Google, when gemvault made or found it.
        @Nullable var google_key: String?
        @Nullable var service_account: String?
    }

    struct HistoryReport: Encodable {
        let version = 1
        let name: String
        let created: String
        let rotated: String
        @Nullable var lastUsed: String?
        let values: [HistoryEntry]
    }

    static func history(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        guard let key = try call.context.vault.keySummaries().first(where: { $0.name == name }) else { throw VaultError.keyNotFound(name: name) }
        let report = HistoryReport(name: name, created: Output.isoDate(key.created), rotated: Output.isoDate(key.updated),
                                   lastUsed: key.lastUsed > 0 ? Output.isoDate(key.lastUsed) : nil,
                                   values: [HistoryEntry(value: key.masked, kind: key.kind, current: true, date: Output.isoDate(key.updated),
                                                         google_key: key.google?.resource, service_account: key.google?.serviceAccount.nonEmpty)]
                                       + key.earlier.map { HistoryEntry(value: $0.masked, kind: $0.kind, current: false, date: Output.isoDate($0.retired),
                                                                        google_key: $0.google?.resource, service_account: $0.google?.serviceAccount.nonEmpty) })
        if call.flag(.json) { try Output.json(report, schema: .keyHistory); return }
        let showGoogle = report.values.contains { $0.google_key != nil }
        var rows = [["VALUE", "KIND", "STATE", "SINCE OR RETIRED"] + (showGoogle ? ["GOOGLE KEY", "SERVICE ACCOUNT"] : [])]
        // People read local times; the report keeps ISO for --json.
        let shownDates = [key.updated] + key.earlier.map(\.retired)
        for (entry, date) in zip(report.values, shownDates) {
            rows.append([entry.value, entry.kind.label, entry.current ? "current" : "retired", Output.localDate(date)]
                        + (showGoogle ? [entry.google_key ?? "-", entry.service_account ?? "-"] : []))
        }
        try Console.out(Output.table(rows))
        Console.note("'\(name)' created \(Output.localDate(key.created)), last set \(Output.localDate(key.updated)), last used \(key.lastUsed > 0 ? Output.localDate(key.lastUsed) : "never (through a session)")")
    }

    static func rollback(_ call: Invocation) throws {
        let name = call.positionals[0]
        try VaultContents.validateName(name)
        let restored = try call.context.vault.apply(.rollBack(name: name, now: Output.now()))
        Console.note("key '\(name)' is back to \(restored.masked ?? "?"); the value it replaced is in its history")
    }
}

extension Context {
    /// Once a day per key, chat, ask and exec remind that a vault key is older than rotation_days (KeyResolution).
    var rotationReminder: RotationReminder { RotationReminder(vaultPath: vaultPath, stateHome: paths.stateHome) }
}
