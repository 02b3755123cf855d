import CommandLineKit
import Conversations
import Settings
import SystemIO
import TerminalIO
import VaultCore

let completionCommands: [CommandSpec] = [
    CommandSpec(path: ["completion"], arguments: "bash|zsh|fish", argumentRange: 1...1,
                summary: "print a shell completion script",
                options: [],
                details: """
                The script completes commands, options and their values, key names (from an unlocked session only: it never asks for a passphrase), \
                model names (from the list 'gemvault models' last saw) and history ids. It asks gemvault for candidates, so it stays right after an upgrade.
                bash: gemvault completion bash > ~/.local/share/bash-completion/completions/gemvault
                zsh: gemvault completion zsh > ~/.zfunc/_gemvault (with ~/.zfunc on $fpath)
                fish: gemvault completion fish > ~/.config/fish/completions/gemvault.fish
                """,
                run: CompletionCommand.script),
    CommandSpec(path: ["version"], arguments: "", argumentRange: 0...0,
                summary: "print the version (so do --version, -V and -v)",
                options: [], details: "",
                run: { _ in try Console.out("gemvault \(gemvaultVersion)\n") }),
]

/// What a word on the command line can be, read from the table's placeholders.
enum CompletionKind: Equatable {
    case nothing, files, commands, keys, models, historyIDs, settings
    case words([String])

    /// `--vault PATH`, `--key NAME`, `ID`, `bash|zsh|fish`…
    init(placeholder: String) {
        let bare = placeholder.filter { !"[].".contains($0) }
        switch bare {
        case "PATH", "FILE": self = .files
        case "NAME": self = .keys
        case "M": self = .models
        case "ID": self = .historyIDs
        case "KEY": self = .settings
        case "PRESET": self = .words(KDFParameters.Preset.allCases.map(\.rawValue))
        case "WHEN": self = .words(ColorMode.allCases.map(\.rawValue))
        case "COMMAND": self = .commands
        default: self = bare.contains("|") ? .words(bare.split(separator: "|").map(String.init)) : .nothing
        }
    }
}

/// The candidates for the last word of a partial command line, from the command table.
/// Nothing here prompts: key names come from an unlocked session or not at all.
struct CompletionEngine {
    let context: Context

    /// `words` are the words after `gemvault`; the last one is being typed (maybe empty).
    /// Only candidates made of plain characters are offered: a model name from a server or
    /// a file name in the history folder must not reach a shell's command line as code.
    func candidates(_ words: [String]) -> [String] {
        commandLine.completions(words) { placeholder, prefix in values(CompletionKind(placeholder: placeholder), prefix: prefix) }
            .filter { $0.hasPrefix("@") || Self.isPlain($0) }
    }

    static func isPlain(_ word: String) -> Bool {
        !word.isEmpty && word.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || "._-/:@+=,".utf8.contains(byte)
        }
    }

    private func values(_ kind: CompletionKind, prefix: String) -> [String] {
        let all: [String]
        switch kind {
        case .nothing: return []
        case .files: return [ShellCompletion.files]
        case .commands: return [ShellCompletion.commands]
        case .words(let words): all = words
        case .settings: all = SettingsSchema.all.map(\.name)
        case .keys: all = sessionKeyNames()
        case .models: all = ModelCache(paths: context.paths).names()
        case .historyIDs: all = (try? context.history.ids()) ?? []
        }
        return all.filter { $0.hasPrefix(prefix) }
    }

    /// From an unlocked session only, never by prompting. The names-only request carries no
    /// key and does not count as use; a stalled agent costs a second at most.
    private func sessionKeyNames() -> [String] {
        guard context.vault.exists else { return [] }
        return context.vault.session.keyNames(timeout: 1)
    }
}

/// The model names `gemvault models` last listed, for completion. Not a secret, but kept in
/// a checked folder of the user's so nobody else can plant names.
struct ModelCache {
    let paths: Paths
    var folder: String { paths.cacheHome + "/gemvault" }

    func save(_ names: [String]) {
        guard let folder = try? TrustedFolder.create(folder) else { return }
        let plain = names.filter(CompletionEngine.isPlain)
        try? folder.replace("models", with: Array((plain.joined(separator: "\n") + "\n").utf8), tempPrefix: ".models.tmp.")
    }

    func names() -> [String] {
        guard let folder = try? TrustedFolder.open(folder),
              let file = try? TrustedFile.open("models", in: folder, requirement: .configuration),
              let bytes = try? file.readAll(limit: 1 << 20) else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init).filter(ProviderChoice.isModelName)
    }
}

enum CompletionCommand {
    /// `gemvault __complete WORD...`: the candidates, one a line. `@files` and `@commands`
    /// ask the shell to complete paths or command names itself.
    static func complete(_ words: [String], environment: [String: String]) throws(StandardOutputFailure) {
        let engine = CompletionEngine(context: Context(environment: environment, options: .none))
        let candidates = engine.candidates(words.isEmpty ? [""] : words)
        if !candidates.isEmpty { try Console.out(candidates.joined(separator: "\n") + "\n") }
    }

    static func script(_ call: Invocation) throws {
        guard let script = ShellCompletion.script(call.positionals[0], program: "gemvault") else {
            throw UsageError("completion takes bash, zsh or fish, not '\(call.positionals[0])'", command: call.command)
        }
        try Console.out(script)
    }
}
