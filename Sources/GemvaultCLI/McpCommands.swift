import KeyResolution
import SystemIO
import TerminalIO
import ToolSecrets
import VaultCore

let mcpCommands: [CommandSpec] = [
    CommandSpec(path: ["mcp", "scan"], arguments: "", argumentRange: 0...0,
                summary: "list MCP servers in AI tools' config files and the plaintext secrets in them",
                options: [.mcpConfig], details: """
                Reads Claude Code's ~/.claude.json (top-level and per-project mcpServers) and ./.mcp.json, gemini-cli's ~/.gemini/settings.json, VS Code's mcp.json (user and ./.vscode), Cursor's ~/.cursor/mcp.json (and ./.cursor), Zed's settings.json, or the --config file.
                An environment value or header is reported when it has a known token shape (GitHub, Slack, OpenAI, Anthropic, Google, AWS, a JWT, a PEM block) or looks random; values are shown masked. A file readable by other accounts is reported too.
                """,
                run: McpCommand.scan),
    CommandSpec(path: ["mcp", "wrap"], arguments: "[SERVER...]", argumentRange: 0...Int.max,
                summary: "move MCP servers' plaintext secrets into the vault and run the servers through 'gemvault exec'",
                options: [.mcpConfig, .dryRun, .mcpName], details: """
                Each secret in a local server's env becomes the vault secret mcp.<server>.<VAR> (or --name, for one), and the entry runs 'gemvault exec --secret VAR=NAME -- <its command>'. Every other byte of the file stays as it was.
                The file is written atomically, and not at all when it changed since it was read. The file it replaces, which holds the plaintext, is kept (0600) in gemvault's state folder; 'gemvault mcp unwrap' puts it back.
                A remote server's headers are reported and left in place: the MCP client sends them itself. --dry-run prints the change, values masked, and writes nothing.
                Each client's file before and after: Docs/tool-secrets.md.
                """,
                run: McpCommand.wrap),
    CommandSpec(path: ["mcp", "unwrap"], arguments: "", argumentRange: 0...0,
                summary: "put back the config files 'mcp wrap' replaced (with their plaintext secrets)",
                options: [.mcpConfig, .mcpForce], details: "Refused for a file edited since wrap wrote it, unless --force (the edits are then lost). The secrets stay in the vault.",
                run: McpCommand.unwrap),
]

enum McpCommand {
    static func files(_ call: Invocation) -> [MCPConfigFile] {
        if let path = call.value(.mcpConfig) { return [MCPConfigFile(path: ProcessIdentity.absolutePath(path), client: .other)] }
        let paths = call.context.paths
        let here = ProcessIdentity.workingFolder
        return MCPConfigFile.known(home: paths.home, configHome: paths.configHome, workingFolder: here)
    }

    /// The files that exist and parse; the others are reported (a named file that is missing is an error).
    static func snapshots(_ call: Invocation) throws -> [MCPConfigSnapshot] {
        do {
            return try MCPConfigSnapshot.readAll(files(call), named: call.value(.mcpConfig) != nil, skipped: { Console.warning(describe($0).message) })
        } catch { throw describe(error) }
    }

    /// doctor's checks of MCP config files and of .env files under the current folder.
    /// A `.env` line the other checks already reported (a Gemini key under the home) is not reported twice.
    static func doctorFindings(_ call: Invocation, besides reported: [Finding]) -> [Finding] {
        let paths = call.context.paths
        let here = ProcessIdentity.workingFolder
        let lines = Set(reported.compactMap { $0.message.split(separator: " ").first.map(String.init) })
        return ToolSecretsDoctor.findings(files: MCPConfigFile.known(home: paths.home, configHome: paths.configHome, workingFolder: here), workingFolder: here)
            .filter { !lines.contains(String($0.message.split(separator: " ").first ?? "")) || $0.check != "dotenv-secrets" }
            .map { Finding(check: $0.check, message: $0.message, fix: $0.fix) }
    }

    static func describe(_ error: MCPConfigSnapshot.ReadError) -> CommandFailure {
        switch error {
        case .unreadable(let path, let reason): CommandFailure(.failure, "cannot read \(path): \(reason)")
        case .malformed(let path, let reason): CommandFailure(.failure, "\(path) is not JSON or JSONC: \(reason); nothing was changed")
        case .missing(let path): CommandFailure(.failure, "there is no file \(path)")
        }
    }

    static func scan(_ call: Invocation) throws {
        let snapshots = try snapshots(call)
        var rows: [[String]] = []
        for snapshot in snapshots {
            if snapshot.readableByOthers {
                Console.warning("\(snapshot.file.path) is readable by other accounts (mode \(String(snapshot.permissions, radix: 8))); 'chmod 600 \(snapshot.file.path)' closes it")
            }
            for server in snapshot.servers {
                let findings = snapshot.findings.filter { $0.server == server.name && $0.section == server.section }
                let state = server.isWrapped ? "wrapped" : server.isRemote ? "remote" : "local"
                if findings.isEmpty { rows.append([snapshot.file.path, server.name, state, "-", "-", "-"]) }
                for finding in findings {
                    rows.append([snapshot.file.path, server.name, state, "\(finding.kind) \(finding.variable)", finding.shape.rawValue, finding.masked])
                }
            }
        }
        guard !rows.isEmpty else {
            Console.note("no MCP servers found in \(files(call).map(\.path).joined(separator: ", "))")
            return
        }
        try Console.out(Output.table([["FILE", "SERVER", "KIND", "WHERE", "LOOKS LIKE", "VALUE"]] + rows.map { $0.map(EscapeNeutralizer.neutralize) }))
        let movable = snapshots.flatMap(\.findings).filter { !$0.remote }
        if !movable.isEmpty {
            Console.hint("'gemvault mcp wrap' moves the \(movable.count) secret\(movable.count == 1 ? "" : "s") of local servers into the vault")
        }
    }

    static func wrap(_ call: Invocation) throws {
        let gemvault = ProcessIdentity.executablePath
        let snapshots = try snapshots(call)
        let known = Set(snapshots.flatMap { $0.servers.map(\.name) })
        if let missing = call.positionals.first(where: { !known.contains($0) }) {
            throw CommandFailure(.usage, "no MCP server named '\(EscapeNeutralizer.neutralize(missing))' in \(snapshots.map(\.file.path).joined(separator: ", "))",
                                 hint: "'gemvault mcp scan' lists the servers")
        }
        // Which secrets other servers already use: a dry run asks nothing of the vault.
        let taken = call.flag(.dryRun) ? [:] : try MCPWrapPlan.takenNames(for: snapshots, in: call.context.vault)
        let plans = MCPWrapPlan.makeAll(snapshots, only: call.positionals, gemvault: gemvault, name: call.value(.mcpName), taken: taken)
        if call.value(.mcpName) != nil, plans.reduce(0, { $0 + $1.moves.count }) != 1 {
            throw UsageError("--name names one secret, and this would move \(plans.reduce(0, { $0 + $1.moves.count }))", command: call.command)
        }
        for plan in plans {
            for skipped in plan.skipped { Console.note("\(plan.snapshot.file.path): left '\(skipped.server)' as it is: \(skipped.reason)") }
            guard plan.changes else { continue }
            if call.flag(.dryRun) {
                try Console.out(EscapeNeutralizer.neutralize(plan.diff))
                continue
            }
            let backup = try plan.apply(vault: call.context.vault, backups: MCPBackups(stateHome: call.context.paths.stateHome), now: Output.now())
            for move in plan.moves { Console.note("moved \(move.variable) of '\(move.server)' into the vault as secret '\(move.secretName)' (\(move.value.masked))") }
            Console.note("rewrote \(plan.snapshot.file.path); the previous file, with the plaintext, is kept at \(backup) ('gemvault mcp unwrap' puts it back)")
        }
        if !plans.contains(where: \.changes) { Console.note("nothing to wrap: no local server has a plaintext secret in its env") }
    }

    static func unwrap(_ call: Invocation) throws {
        let backups = MCPBackups(stateHome: call.context.paths.stateHome)
        var restored = 0
        for file in files(call) {
            do {
                try MCPUnwrap.restore(file.path, backups: backups, force: call.flag(.mcpForce))
                restored += 1
                Console.warning("\(file.path) holds its plaintext secrets again; they are also still in the vault")
            } catch MCPWrapError.noBackup {
                continue
            }
        }
        if restored == 0 { Console.note("no file that 'gemvault mcp wrap' rewrote was found to put back") }
    }
}
