import Agent
import Conversations
import GemvaultConfig
import SystemIO
import TerminalIO
import VaultCore

let historyCommands: [CommandSpec] = [
    CommandSpec(path: ["history", "list"], arguments: "", argumentRange: 0...0,
                summary: "saved conversations: id, title, model, turns, first and last dates",
                options: [jsonOption], details: "Reading history needs the vault: an unlocked session, or its passphrase.",
                run: HistoryCommand.list),
    CommandSpec(path: ["history", "show"], arguments: "ID", argumentRange: 1...1,
                summary: "print a saved conversation (any unique prefix of its id)",
                options: [OptionSpec(name: "--raw", value: nil, help: "the text as saved, unstyled; escape sequences are shown as text, never run")],
                details: "", run: HistoryCommand.show),
    CommandSpec(path: ["history", "rm"], arguments: "[ID]", argumentRange: 0...1,
                summary: "delete a saved conversation, all of them, or those older than a duration",
                options: [OptionSpec(name: "--all", value: nil, help: "delete every saved conversation"),
                          OptionSpec(name: "--older-than", value: "DURATION", help: "delete those last written before, such as 30d")],
                details: "Needs no passphrase: deleting reads nothing.", run: HistoryCommand.remove),
    CommandSpec(path: ["history", "export"], arguments: "ID", argumentRange: 1...1,
                summary: "print a saved conversation as Markdown or JSON",
                options: [OptionSpec(name: "--format", value: "md|json", help: "md (default) or json")],
                details: "", run: HistoryCommand.export),
]

extension Context {
    /// This vault's saved conversations.
    var history: HistoryStore { HistoryStore(stateDirectory: paths.stateHome, vaultPath: vaultPath) }

    /// Notes the public half of the current conversation key and the vault's `history`
    /// setting (the vault's observer does it whenever it opens or saves the vault).
    func rememberRecipient(_ contents: VaultContents) { vault.note(contents) }

    /// The recipient follows what the session holds: after a rekey it made, or when history is
    /// read through it. Returns the conversation keys, or nil without a session.
    @discardableResult
    func rememberRecipientThroughSession() -> [SecretBytes]? {
        guard let keys = try? vault.throughSession({ agent throws(AgentError) in try agent.conversationKeys() }), let current = keys.first,
              let settings = try? vault.sessionSettings() else { return nil }
        rememberRecipient(VaultContents(settings: settings, conversationKey: current))
        return keys
    }

    /// The key pairs that open saved conversations: from the session, or the passphrase.
    func historyKeys() throws -> HistoryKeys {
        if let seeds = rememberRecipientThroughSession() { return try HistoryKeys(seeds: seeds) }
        return try HistoryKeys(seeds: try vault.openDocument().contents.conversationKeys)
    }

    /// Whether conversations are kept. Without the vault open, its own `history` setting comes
    /// from the recipient file, so `history off` holds while the vault is locked.
    func historyIsOff(_ settings: Settings, recipient: HistoryStore.Recipient?) -> Bool {
        let setting = settings.resolved(.history)
        switch setting.origin {
        case .builtIn, .configFile:
            if let recorded = recipient?.vaultHistory { return recorded == "off" }
        case .vault, .environment, .flag:
            break
        }
        return setting.value == "off"
    }

    /// A recorder for a new conversation, or nil with the reason it is not saved.
    func recorder(_ call: Invocation, settings: Settings, kind: String, resuming writer: HistoryWriter? = nil) -> (ConversationRecorder?, String?) {
        if call.flag("--no-save") { return (nil, nil) }
        guard store.exists else {
            return (nil, settings[.history] == "off" ? nil : "there is no vault, so this conversation is not saved")
        }
        do {
            let recipient = try history.recipient()
            if historyIsOff(settings, recipient: recipient) { return (nil, nil) }
            guard recipient != nil else { throw HistoryStore.Failure.noRecipient }
        } catch let failure as HistoryStore.Failure {
            return (nil, "this conversation is not saved: \(failure.description)")
        } catch {
            return (nil, "this conversation is not saved: \(error)")
        }
        return (ConversationRecorder(store: history, kind: kind, resuming: writer, warn: { Console.warning($0) }), nil)
    }
}

enum HistoryCommand {
    struct Summary: Encodable {
        let id: String
        let title: String
        let model: String
        let kind: String
        let turns: Int
        let first: String
        let last: String
    }

    static func summaries(_ context: Context) throws -> [Summary] {
        let keys = try context.historyKeys()
        // One damaged file must not hide the others.
        return try context.history.summaries(with: keys, unreadable: { id, error in
            Console.warning("conversation \(id) cannot be read: \(ErrorReport.describe(error).1)")
        }).map { summary in
            Summary(id: summary.id, title: EscapeNeutralizer.neutralize(summary.title), model: EscapeNeutralizer.neutralize(summary.model),
                    kind: summary.kind, turns: summary.turns, first: Output.isoDate(summary.first), last: Output.isoDate(summary.last))
        }
    }

    static func list(_ call: Invocation) throws {
        let all = try summaries(call.context)
        if call.flag("--json") { try Output.json(["conversations": all], schema: .historyList); return }
        if all.isEmpty { Console.err("gemvault: no saved conversations\n"); return }
        try Console.out(Output.table([["ID", "TURNS", "FIRST", "LAST", "MODEL", "TITLE"]]
            + all.map { [String($0.id.prefix(8)), String($0.turns), $0.first, $0.last, $0.model, $0.title] }))
    }

    static func load(_ call: Invocation) throws -> Transcript {
        let context = call.context
        let id = try context.history.resolve(call.positionals[0])
        return try context.history.load(id, with: try context.historyKeys())
    }

    /// What was intact is shown; then a damaged, dropped, reordered or repeated record is
    /// reported (exit 4).
    static func show(_ call: Invocation) throws {
        let context = call.context
        let id = try context.history.resolve(call.positionals[0])
        let transcript = try context.history.loadIntact(id, with: try context.historyKeys())
        try render(transcript, call)
        if let damage = transcript.damage { throw HistoryStore.Failure.broken(transcript.path, damage) }
    }

    static func render(_ transcript: Transcript, _ call: Invocation) throws(StandardOutputFailure) {
        if call.flag("--raw") {
            // Unstyled, but a saved reply's escape sequences still must not reach a terminal or a pipe.
            for turn in transcript.turns {
                try Console.out(EscapeNeutralizer.neutralize("you › \(turn.user)\ngemini › \(turn.model)\n\n"))
            }
            return
        }
        let style = call.context.style(try? Settings.resolve(try call.context.settingLayers(call)), fd: FileDescriptor.standardOutput.raw)
        if style.enabled, let columns = Terminal.columns {
            // The seed's chat screen: bubbles on a terminal, plain text everywhere else.
            let markdown = MarkdownRenderer(styled: false)
            let turns = transcript.turns.map { turn -> (user: String, model: String) in
                var model = markdown.render(turn.model)
                if model.hasSuffix("\n") { model.removeLast() }
                return (user: EscapeNeutralizer.neutralize(turn.user), model: model)
            }
            try Console.out(BubbleLayout(width: columns, color: true).render(turns))
            return
        }
        var text = style.dim("conversation \(transcript.id) (\(EscapeNeutralizer.neutralize(transcript.meta?.model ?? "?")))") + "\n\n"
        for turn in transcript.turns {
            text += style.bold(style.blue("you ›")) + " " + EscapeNeutralizer.neutralize(turn.user) + "\n"
            let reply = style.enabled ? MarkdownRenderer(styled: true).render(turn.model) : EscapeNeutralizer.neutralize(turn.model)
            text += style.bold(style.gray("gemini ›")) + " " + reply + (turn.interrupted ? " [interrupted]" : "") + "\n\n"
        }
        try Console.out(text)
    }

    static func remove(_ call: Invocation) throws {
        let history = call.context.history
        if call.flag("--all") || call.value("--older-than") != nil {
            guard call.positionals.isEmpty else { throw UsageError("give an ID, or --all, or --older-than, not both", command: call.command) }
            var cutoff = Int64.max
            if let text = call.value("--older-than") {
                guard let seconds = DurationText.seconds(text) else { throw UsageError("--older-than takes a duration such as 30d or 12h, not '\(text)'", command: call.command) }
                cutoff = Output.now() - Int64(seconds)
            }
            let removed = try history.removeOlder(than: cutoff)
            Console.err("gemvault: deleted \(removed) conversation\(removed == 1 ? "" : "s")\n")
            return
        }
        guard let prefix = call.positionals.first else { throw UsageError("give an ID, --all or --older-than", command: call.command) }
        let id = try history.resolve(prefix)
        try history.remove(id)
        Console.err("gemvault: deleted conversation \(id)\n")
    }

    struct Export: Encodable {
        let version = 1
        let id: String
        @Nullable var meta: ConversationMeta?
        let turns: [SavedTurn]
    }

    static func export(_ call: Invocation) throws {
        let transcript = try load(call)
        switch call.value("--format") ?? "md" {
        case "json":
            try Output.json(Export(id: transcript.id, meta: transcript.meta, turns: transcript.turns), schema: .historyExport)
        case "md":
            var text = "# \(transcript.meta?.title ?? "gemvault conversation")\n\n_\(transcript.meta?.model ?? "?"), \(Output.isoDate(transcript.meta?.created ?? 0))_\n\n"
            for turn in transcript.turns {
                text += "## You\n\n\(turn.user)\n\n## Gemini\n\n\(turn.model)\(turn.interrupted ? "\n\n_[interrupted]_" : "")\n\n"
            }
            // Control characters have no place in Markdown, and could drive a terminal.
            try Console.out(EscapeNeutralizer.neutralize(text))
        case let other:
            throw UsageError("--format takes md or json, not '\(other)'", command: call.command)
        }
    }
}
