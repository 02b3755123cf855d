import ChatUI
import Conversations
import Rendering
import Settings
import SystemIO
import TerminalIO
import VaultCore

let historyCommands: [CommandSpec] = [
    CommandSpec(path: ["history", "list"], arguments: "", argumentRange: 0...0,
                summary: "saved conversations: id, title, model, turns, first and last dates (also plain 'gemvault history')",
                options: [.json], details: "Reading history needs the vault: an unlocked session, or its passphrase.",
                isGroupDefault: true, run: HistoryCommand.list),
    CommandSpec(path: ["history", "show"], arguments: "ID", argumentRange: 1...1,
                summary: "print a saved conversation (any unique prefix of its id)",
                options: [.rawHistory],
                details: "On a terminal, a conversation taller than the window goes through $PAGER (default '\(Pager.defaultCommand.joined(separator: " "))'; empty or 'cat' prints directly). $PAGER is split at spaces and run without a shell.",
                run: HistoryCommand.show),
    CommandSpec(path: ["history", "search"], arguments: "TEXT", argumentRange: 1...1,
                summary: "the saved conversations that hold TEXT (ignoring case), with the matching lines",
                options: [.json],
                details: "Titles, prompts, replies and attachment names are searched, decrypted in memory only; a long result goes through $PAGER on a terminal, as with show. Reading history needs the vault.",
                run: HistoryCommand.search),
    CommandSpec(path: ["history", "rm"], arguments: "[ID]", argumentRange: 0...1,
                summary: "delete a saved conversation, all of them, or those older than a duration",
                options: [.all, .olderThan, .yes],
                details: "Needs no passphrase: deleting reads nothing. --all and --older-than say how many they would delete and ask first on a terminal.",
                run: HistoryCommand.remove),
    CommandSpec(path: ["history", "export"], arguments: "ID", argumentRange: 1...1,
                summary: "print a saved conversation as Markdown or JSON",
                options: [.format],
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
        guard let keys = try? vault.sessionConversationKeys(), let current = keys.first,
              let settings = try? vault.sessionSettings() else { return nil }
        rememberRecipient(VaultContents(settings: settings, conversationKey: current))
        return keys
    }

    /// The key pairs that open saved conversations: from the session, or the passphrase.
    func historyKeys() throws -> HistoryKeys {
        if let seeds = rememberRecipientThroughSession() { return try HistoryKeys(seeds: seeds) }
        return try HistoryKeys(seeds: try vault.openDocument().contents.conversationKeys)
    }

    /// A recorder for a new conversation, or nil with the reason it is not saved (Conversations
    /// decides). `resuming` goes on with a file whose system instruction in effect is `system`.
    func recorder(_ call: Invocation, settings: Settings, kind: ConversationKind, resuming writer: HistoryWriter? = nil,
                  system: String? = nil) -> (ConversationRecorder?, String?) {
        if call.flag(.noSave) { return (nil, nil) }
        let fromVaultOrAbove = switch settings.resolved(.history).origin {
        case .builtIn, .configFile: false
        case .vault, .environment, .flag: true
        }
        let setting = HistoryStore.HistorySetting(off: settings[.history] == .off, fromVaultOrAbove: fromVaultOrAbove)
        return history.recorder(setting, vaultExists: vault.exists, kind: kind, resuming: writer, system: system,
                                keepAttachments: call.flag(.keepAttachments), warn: { Console.warning($0) })
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

    /// `--json` keeps ISO dates in UTC for programs; the table is for people: local time (TZ),
    /// the kind, titles without markdown heading marks, and rows that fit the terminal's width.
    static func list(_ call: Invocation) throws {
        let keys = try call.context.historyKeys()
        let raw = try call.context.history.summaries(with: keys, unreadable: { id, error in
            Console.warning("conversation \(id) cannot be read: \(ErrorReport.describe(error).1)")
        })
        if call.flag(.json) {
            let all = raw.map { summary in
                Summary(id: summary.id, title: EscapeNeutralizer.neutralize(summary.title), model: EscapeNeutralizer.neutralize(summary.model),
                        kind: summary.kind, turns: summary.turns, first: Output.isoDate(summary.first), last: Output.isoDate(summary.last))
            }
            try Output.json(["conversations": all], schema: .historyList)
            return
        }
        if raw.isEmpty { Console.note("no saved conversations"); return }
        let rows = raw.map { summary in
            [String(summary.id.prefix(8)), summary.kind, String(summary.turns), Output.localDate(summary.first), Output.localDate(summary.last),
             EscapeNeutralizer.neutralize(summary.model), EscapeNeutralizer.neutralize(plainTitle(summary.title))]
        }
        var table = [["ID", "KIND", "TURNS", "FIRST", "LAST", "MODEL", "TITLE"]] + rows
        guard Terminal.stdoutIsTerminal, let columns = Terminal.columns else {
            try Console.out(Output.table(table))
            return
        }
        // A narrow window keeps the title readable: the first date, the model, the turns and
        // the kind give way, in that order, until the title has room for its first words.
        for giving in ["FIRST", "MODEL", "TURNS", "KIND"] {
            let titleStart = table[0].indices.dropLast().reduce(0) { start, column in start + table.map { $0[column].count }.max()! + 1 }
            guard titleStart + Self.titleRoom > columns, let column = table[0].firstIndex(of: giving) else { break }
            table = table.map { row in var row = row; row.remove(at: column); return row }
        }
        try Console.out(Output.table(table).split(separator: "\n", omittingEmptySubsequences: false)
            .map { Output.fitted(String($0), width: columns) }.joined(separator: "\n"))
    }

    /// The columns a title keeps in a narrow window before other columns give way.
    static let titleRoom = 24

    /// A title as read: a first line written as a markdown heading (`## Plan`) loses its marks.
    static func plainTitle(_ title: String) -> String {
        let unmarked = title.drop { $0 == "#" }
        guard unmarked.count < title.count, unmarked.first == " " || unmarked.isEmpty else { return title }
        let rest = String(unmarked.drop { $0 == " " })
        return rest.isEmpty ? title : rest
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
        try Pager.show(render(transcript, call), environment: context.helperEnvironment)
        if let damage = transcript.damage { throw HistoryStore.Failure.broken(transcript.path, damage) }
    }

    static func render(_ transcript: Transcript, _ call: Invocation) -> String {
        if call.flag(.rawHistory) {
            // Unstyled, but a saved reply's escape sequences still must not reach a terminal or a pipe.
            return transcript.annotatedTurns.map { turn, notes in
                let reply = turn.reply
                return notes.map { "(\($0))\n" }.joined() + EscapeNeutralizer.neutralize("you › \(turn.user)\ngemini › \(GroundedAnswer.text(reply))\n")
                    + GroundedAnswer.footer(reply, style: Style(enabled: false), hyperlinks: false) + "\n"
            }.joined()
        }
        let style = call.context.style(try? Settings.resolve(try call.context.settingLayers(call)), fd: FileDescriptor.standardOutput.raw)
        if style.enabled, let columns = Terminal.columns {
            // The seed's chat screen: bubbles on a terminal, the replies' markdown laid out inside
            // by the renderer chat uses; plain text everywhere else.
            let layout = BubbleLayout(width: columns, color: true)
            let markdown = MarkdownRenderer(styled: true)
            return transcript.annotatedTurns.map { turn, notes in
                let user = notes.map { "(\($0))\n" }.joined() + EscapeNeutralizer.neutralize(turn.user)
                let saved = turn.reply
                let reply = markdown.lines(GroundedAnswer.text(saved), width: layout.contentWidth(.model))
                return layout.exchange(user: user, reply: reply, interrupted: turn.interrupted)
                    .map { $0.encoded(styled: true) }.joined(separator: "\n") + "\n" + GroundedAnswer.footer(saved, style: style, hyperlinks: false)
            }.joined()
        }
        var text = style.dim("conversation \(transcript.id) (\(EscapeNeutralizer.neutralize(transcript.meta?.model ?? "?")))") + "\n\n"
        for (turn, notes) in transcript.annotatedTurns {
            text += notes.map { style.dim("(\($0))") + "\n" }.joined()
            text += style.bold(style.blue("you ›")) + " " + EscapeNeutralizer.neutralize(turn.user) + "\n"
            let saved = turn.reply
            let cited = GroundedAnswer.text(saved)
            let reply = style.enabled ? MarkdownRenderer(styled: true).render(cited) : EscapeNeutralizer.neutralize(cited)
            text += style.bold(style.gray("gemini ›")) + " " + reply + (turn.interrupted ? " [interrupted]" : "") + "\n"
                + GroundedAnswer.footer(saved, style: style, hyperlinks: false) + "\n"
        }
        return text
    }

    struct SearchListing: Encodable {
        let query: String
        let conversations: [Found]
    }

    struct Found: Encodable {
        let id: String
        let title: String
        let model: String
        let kind: String
        let turns: Int
        let last: String
        let matches: [Match]
    }

    struct Match: Encodable {
        /// 0 for the title.
        let turn: Int
        /// title, user, model or attachment.
        let place: String
        let line: String
    }

    static func search(_ call: Invocation) throws {
        let query = call.positionals[0]
        guard !query.trimmedWhitespace.isEmpty else { throw UsageError("give some text to search for", command: call.command) }
        let context = call.context
        let results = try context.history.search(query, with: try context.historyKeys(), unreadable: { id, error in
            Console.warning("conversation \(id) cannot be read: \(ErrorReport.describe(error).1)")
        })
        if call.flag(.json) {
            let found = results.map { result in
                Found(id: result.summary.id, title: result.summary.title, model: result.summary.model, kind: result.summary.kind,
                      turns: result.summary.turns, last: Output.isoDate(result.summary.last),
                      matches: result.matches.map { Match(turn: $0.turn, place: $0.place.rawValue, line: $0.line) })
            }
            try Output.json(SearchListing(query: query, conversations: found), schema: .historySearch)
            return
        }
        guard !results.isEmpty else {
            Console.note("no saved conversation holds '\(query)'")
            return
        }
        let style = context.style(nil, fd: FileDescriptor.standardOutput.raw)
        var text = ""
        for result in results {
            let summary = result.summary
            text += style.bold(String(summary.id.prefix(8))) + "  " + Output.localDate(summary.last) + "  " + EscapeNeutralizer.neutralize(summary.title) + "\n"
            for match in result.matches.prefix(5) {
                let label = match.place == .title ? "title" : "\(match.place == .model ? "gemini" : match.place == .attachment ? "file" : "you") (turn \(match.turn))"
                text += "  " + style.dim(label + ":") + " " + style.highlighting(EscapeNeutralizer.neutralize(query), in: EscapeNeutralizer.neutralize(match.line)) + "\n"
            }
            if result.matches.count > 5 { text += "  " + style.dim("… \(result.matches.count - 5) more") + "\n" }
        }
        try Pager.show(text, environment: context.helperEnvironment)
    }

    static func remove(_ call: Invocation) throws {
        let history = call.context.history
        if call.flag(.all) || call.value(.olderThan) != nil {
            guard call.positionals.isEmpty else { throw UsageError("give an ID, or --all, or --older-than, not both", command: call.command) }
            var cutoff = Int64.max
            if let text = call.value(.olderThan) {
                guard let seconds = DurationText.seconds(text) else { throw UsageError("--older-than takes a duration such as 30d or 12h, not '\(text)'", command: call.command) }
                cutoff = Output.now() - Int64(seconds)
            }
            // Many conversations at once: asked on a terminal, and only with --yes without one.
            if !call.flag(.yes) {
                guard TerminalQuestion.available else {
                    throw UsageError("\(call.flag(.all) ? "--all" : "--older-than") deletes conversations for good; without a terminal to ask on, it needs --yes",
                                     command: call.command)
                }
            }
            let doomed = try history.ids(writtenBefore: cutoff)
            if !call.flag(.yes), !doomed.isEmpty {
                let what = call.value(.olderThan) == nil ? "all \(doomed.count) saved conversation\(doomed.count == 1 ? "" : "s")"
                    : "\(doomed.count) saved conversation\(doomed.count == 1 ? "" : "s") last written more than \(call.value(.olderThan) ?? "") ago"
                guard TerminalQuestion.confirm("Delete \(what)? This cannot be undone.") else {
                    throw CommandFailure(.failure, "nothing was deleted")
                }
            }
            let removed = try history.remove(doomed)
            Console.note("deleted \(removed) conversation\(removed == 1 ? "" : "s")")
            return
        }
        guard let prefix = call.positionals.first else { throw UsageError("give an ID, --all or --older-than", command: call.command) }
        let id = try history.resolve(prefix)
        try history.remove(id)
        Console.note("deleted conversation \(id)")
    }

    struct Export: Encodable {
        let id: String
        @Nullable var meta: ConversationMeta?
        let turns: [ExportedTurn]
    }

    /// A turn in `export --format json`: every field present, null when it says nothing.
    struct ExportedTurn: Encodable {
        let user: String
        let model: String
        let interrupted: Bool
        let time: Int64
        @Nullable var modelName: String?
        @Nullable var system: String?
        let attachments: [ExportedAttachment]
        /// A grounded reply's searches, sources and supports (byte offsets into `model`).
        @Nullable var grounding: Grounding?
        let urlContext: [URLRetrieval]

        init(_ turn: SavedTurn) {
            user = turn.user
            model = turn.model
            interrupted = turn.interrupted
            time = turn.time
            modelName = turn.modelName
            system = turn.system
            attachments = (turn.attachments ?? []).map(ExportedAttachment.init)
            grounding = turn.grounding
            urlContext = turn.urlContext ?? []
        }
    }

    struct ExportedAttachment: Encodable {
        let name: String
        let size: Int
        let sha256: String
        let mimeType: String
        /// Kept only with --keep-attachments: a text file's text, or anything else's bytes in base64.
        @Nullable var text: String?
        @Nullable var data: String?

        init(_ saved: SavedAttachment) {
            name = saved.name
            size = saved.size
            sha256 = saved.sha256
            mimeType = saved.mimeType
            text = saved.text
            data = saved.data
        }
    }

    /// What `history export` writes.
    enum ExportFormat: String {
        case md, json
    }

    /// Without --format.
    static let defaultFormat = ExportFormat.md

    static func export(_ call: Invocation) throws {
        let name = call.value(.format) ?? defaultFormat.rawValue
        guard let format = ExportFormat(rawValue: name) else { throw UsageError("--format takes md or json, not '\(name)'", command: call.command) }
        let transcript = try load(call)
        switch format {
        case .json:
            try Output.json(Export(id: transcript.id, meta: transcript.meta, turns: transcript.turns.map(ExportedTurn.init)), schema: .historyExport)
        case .md:
            var text = "# \(transcript.meta?.title ?? "gemvault conversation")\n\n_\(transcript.meta?.model ?? "?"), \(Output.isoDate(transcript.meta?.created ?? 0))_\n\n"
            for (turn, notes) in transcript.annotatedTurns {
                text += "## You\n\n" + notes.map { "_(\($0))_\n\n" }.joined() + "\(turn.user)\n\n## Gemini\n\n\(turn.model)\(turn.interrupted ? "\n\n_[interrupted]_" : "")\n\n"
            }
            // Control characters have no place in Markdown, and could drive a terminal.
            try Console.out(EscapeNeutralizer.neutralize(text))
        }
    }
}
