import SystemIO
import VaultAccess
import VaultCore

/// `gemvault mcp wrap`: each plaintext secret in a local server's `env` moves into the vault,
/// and the entry runs through `gemvault exec --secret VAR=NAME -- <its command>`. The file is
/// edited by byte ranges, so every other byte (order, comments, indentation) stays.
public struct MCPWrapPlan: Sendable {
    public struct Move: Sendable {
        public let server: String
        /// Where the server's entry is (`mcpServers`, `projects › PATH › mcpServers`).
        public let section: String
        public let variable: String
        public let secretName: String
        public let value: SecretBytes
    }

    public let snapshot: MCPConfigSnapshot
    public let rewritten: [UInt8]
    public let moves: [Move]
    /// Servers left as they are, and why.
    public let skipped: [(server: String, reason: String)]

    public var changes: Bool { rewritten != snapshot.bytes }

    /// The plan for `snapshot`: every server, or only those named in `only`. `gemvault` is the
    /// command the entries will run; `name` names the one secret moved, when given.
    /// `taken` is what the vault's secrets note of their users, by name: a default name another
    /// server's secret holds gets a number (`mcp.github.TOKEN.2`), so no wrap takes over another's.
    public static func make(_ snapshot: MCPConfigSnapshot, only: [String], gemvault: String, name: String?,
                            taken: [String: String] = [:]) -> MCPWrapPlan {
        var taken = taken
        var edits: [(range: Range<Int>, text: String)] = []
        var moves: [Move] = []
        var skipped: [(server: String, reason: String)] = []
        let twice = Dictionary(grouping: snapshot.servers, by: { [$0.section, $0.name] }).filter { $0.value.count > 1 }.keys
        for server in snapshot.servers where only.isEmpty || only.contains(server.name) {
            if twice.contains([server.section, server.name]) {
                skipped.append((server.name, "it is written twice in \(server.section) (each client takes one of them its own way), so its secrets have no one owner; keep one entry and wrap again"))
                continue
            }
            let secretPositions = server.environment.indices.filter { server.environment[$0].value.text.flatMap(SecretShape.of) != nil }
            let secrets = secretPositions.map { server.environment[$0] }
            let secretHeaders = server.headers.filter { member in member.value.text.flatMap(SecretShape.of) != nil }
            if !secretHeaders.isEmpty || (server.isRemote && !secrets.isEmpty) {
                skipped.append((server.name, "a remote server's headers are sent by the MCP client itself, so no wrapped command can supply them; move them with the client's own secret input, or keep the file private"))
            }
            guard !secrets.isEmpty, !server.isRemote else { continue }
            if let odd = secrets.first(where: { !SecretBinding.isVariableName($0.key) || SecretBinding.isReadByTheLoader($0.key) }) {
                skipped.append((server.name, "'\(odd.key)' is not a variable 'gemvault exec --secret' may set (a name of letters, digits and '_', not one the dynamic loader reads), so the wrapped server could not start"))
                continue
            }
            guard let command = server.entry["command"], command.text != nil else {
                skipped.append((server.name, "its command is not a plain string"))
                continue
            }
            // A variable written twice: the last one is what the client used.
            let bindings = secrets.enumerated().filter { index, member in !secrets[(index + 1)...].contains { $0.key == member.key } }.map { _, member in
                (member, name ?? freeName(defaultName(server: server.name, variable: member.key), for: usedBy(server.name, section: server.section, snapshot), in: &taken))
            }
            moves += bindings.map { Move(server: server.name, section: server.section, variable: $0.0.key, secretName: $0.1, value: SecretBytes(utf8: $0.0.value.text!)) }
            let secretArguments = bindings.flatMap { ["--secret", "\($0.0.key)=\($0.1)"] }.map(JSONText.string)
            edits += commandEdits(server, command: command, secretArguments: secretArguments, gemvault: gemvault, bytes: snapshot.bytes)
            edits += removals(of: Set(secretPositions), in: server.environment, bytes: snapshot.bytes)
        }
        var bytes = snapshot.bytes
        for edit in edits.sorted(by: { $0.range.lowerBound > $1.range.lowerBound }) {
            bytes.replaceSubrange(edit.range, with: Array(edit.text.utf8))
        }
        return MCPWrapPlan(snapshot: snapshot, rewritten: bytes, moves: moves, skipped: skipped)
    }

    /// What a moved secret notes of the server that uses it.
    public static func usedBy(_ server: String, section: String, _ snapshot: MCPConfigSnapshot) -> String {
        let place = section == "mcpServers" || section == "servers" || section == "context_servers" ? "" : " in \(section)"
        return String(String("\(snapshot.file.client.rawValue) server '\(server)'\(place) (\(snapshot.file.path))".utf8.prefix(ToolSecret.maxUsedByBytes)) ?? "")
    }

    /// `base`, or `base.2`, `base.3`… when another user's secret holds it; the name is then taken.
    static func freeName(_ base: String, for user: String, in taken: inout [String: String]) -> String {
        var candidate = base, number = 1
        while let holder = taken[candidate], holder != user {
            number += 1
            candidate = "\(base.prefix(120)).\(number)"
        }
        taken[candidate] = user
        return candidate
    }

    /// `mcp.<server>.<VAR>`, the server's name made a valid vault name.
    public static func defaultName(server: String, variable: String) -> String {
        let safe = String(server.map { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" || $0 == ".") ? $0 : "-" })
        return String("mcp.\(safe).\(variable)".prefix(128))
    }

    /// The command becomes gemvault and the arguments `exec --secret … -- <command> <args>`;
    /// an entry already wrapped gets the new `--secret`s after its `exec`.
    static func commandEdits(_ server: MCPServer, command: JSONCValue, secretArguments: [String], gemvault: String,
                             bytes: [UInt8]) -> [(range: Range<Int>, text: String)] {
        let arguments = server.entry["args"]
        if server.isWrapped, let exec = arguments?.elements?.first(where: { $0.text == "exec" }) {
            return [(exec.span.upperBound..<exec.span.upperBound, ", " + secretArguments.joined(separator: ", "))]
        }
        let original = [String(decoding: bytes[command.span], as: UTF8.self)]
            + (arguments?.elements ?? []).map { String(decoding: bytes[$0.span], as: UTF8.self) }
        let list = "[" + ([JSONText.string("exec")] + secretArguments + [JSONText.string("--")] + original).joined(separator: ", ") + "]"
        var edits: [(range: Range<Int>, text: String)] = [(command.span, JSONText.string(gemvault))]
        if let arguments, arguments.elements != nil {
            edits.append((arguments.span, list))
        } else if let member = server.entry.members?.last(where: { $0.key == "command" }) {
            edits.append((member.span.upperBound..<member.span.upperBound, ", \"args\": " + list))
        }
        return edits
    }

    /// Byte ranges that remove the members at `positions` with their commas: each one up to
    /// the next member; a run at the end from the last kept member's end; all of them with the
    /// trailing comma (JSONC) after the last.
    static func removals(of positions: Set<Int>, in members: [JSONMember], bytes: [UInt8]) -> [(range: Range<Int>, text: String)] {
        guard let last = members.indices.last, !positions.isEmpty else { return [] }
        let lastKept = members.indices.last { !positions.contains($0) }
        var ranges: [(range: Range<Int>, text: String)] = []
        for index in members.indices where positions.contains(index) && index < (lastKept ?? -1) {
            ranges.append((members[index].span.lowerBound..<members[index + 1].span.lowerBound, ""))
        }
        if lastKept != last {
            var end = members[last].span.upperBound
            if lastKept == nil {
                var after = end
                while after < bytes.count, [0x20, 0x09, 0x0a, 0x0d].contains(bytes[after]) { after += 1 }
                if after < bytes.count, bytes[after] == UInt8(ascii: ",") { end = after + 1 }
            }
            let start = lastKept.map { members[$0].span.upperBound } ?? members[0].span.lowerBound
            ranges.append((start..<end, ""))
        }
        return ranges
    }
}

/// Where `mcp wrap` keeps the files it replaced (they hold the plaintext), and the files it wrote.
public struct MCPBackups: Sendable {
    public let folder: String

    public init(stateHome: String) { folder = stateHome + "/gemvault/mcp-backups" }

    static func stem(_ path: String) -> String { Sodium.fingerprint(path) }

    /// Keeps the original (0600, in a 0700 folder) and what replaced it; returns the original's path.
    func keep(_ plan: MCPWrapPlan) throws(TrustedOpenError) -> String {
        let folder = try TrustedFolder.create(self.folder)
        let stem = Self.stem(plan.snapshot.file.path)
        do {
            try folder.replace(stem + ".path", with: Array(plan.snapshot.file.path.utf8), tempPrefix: ".tmp-")
            try folder.replace(stem + ".orig", with: plan.snapshot.bytes, tempPrefix: ".tmp-")
            try folder.replace(stem + ".wrapped", with: plan.rewritten, tempPrefix: ".tmp-")
        } catch {
            throw .failed(error)
        }
        return folder.path(of: stem + ".orig")
    }

    /// The original and the wrapped bytes kept for `path`, when there are.
    func kept(for path: String) -> (original: [UInt8], wrapped: [UInt8])? {
        guard let folder = try? TrustedFolder.open(self.folder) else { return nil }
        let stem = Self.stem(path)
        func read(_ name: String) -> [UInt8]? {
            guard let file = try? TrustedFile.open(name, in: folder, requirement: .secret, flags: OpenFlags.readOnly) else { return nil }
            return try? file.readFromStart(limit: 16 << 20)
        }
        guard let original = read(stem + ".orig"), let wrapped = read(stem + ".wrapped") else { return nil }
        return (original, wrapped)
    }

    func forget(_ path: String) {
        guard let folder = try? TrustedFolder.open(self.folder) else { return }
        for suffix in [".orig", ".wrapped", ".path"] { folder.remove(Self.stem(path) + suffix) }
    }
}

public enum MCPWrapError: Error, Equatable {
    /// The file changed between the read and the write: nothing was written.
    case changedSinceRead(path: String)
    case writeFailed(path: String, reason: String)
    /// `unwrap`: no backup kept for the file.
    case noBackup(path: String)
    /// `unwrap`: the file was edited after `wrap` wrote it; restoring would lose that.
    case editedSinceWrap(path: String)
}

extension MCPWrapPlan {
    /// Stores the secrets, keeps the backup, then writes the file atomically unless it changed
    /// since it was read. Returns the backup's path.
    public func apply(vault: VaultAccess, backups: MCPBackups, now: Int64) throws -> String {
        for move in moves {
            try vault.apply(.secret(.set(name: move.secretName, value: move.value, now: now, usedBy: Self.usedBy(move.server, section: move.section, snapshot))))
        }
        let backup = try backups.keep(self)
        try Self.replace(snapshot.file.path, expected: snapshot.bytes, with: rewritten)
        return backup
    }

    /// Writes `bytes` over `path` atomically, refused when the file is no longer `expected`.
    static func replace(_ path: String, expected: [UInt8], with bytes: [UInt8]) throws(MCPWrapError) {
        let (folderPath, name) = TrustedFolder.parent(of: path)
        guard let folder = try? TrustedFolder.open(folderPath),
              let file = try? TrustedFile.open(name, in: folder, requirement: .configuration, flags: OpenFlags.readOnly),
              (try? file.readFromStart(limit: 16 << 20)) == expected else { throw .changedSinceRead(path: path) }
        do {
            try folder.replace(name, with: bytes, tempPrefix: "." + name + ".gemvault-")
        } catch {
            throw .writeFailed(path: path, reason: error.reason)
        }
    }
}

public enum MCPUnwrap {
    /// Puts back the file `wrap` replaced, when the file is still what `wrap` wrote (or `force`).
    public static func restore(_ path: String, backups: MCPBackups, force: Bool) throws(MCPWrapError) {
        guard let kept = backups.kept(for: path) else { throw .noBackup(path: path) }
        guard let current = try? MCPConfigSnapshot.read(MCPConfigFile(path: path, client: .other)) else { throw .noBackup(path: path) }
        guard force || current.bytes == kept.wrapped else { throw .editedSinceWrap(path: path) }
        try MCPWrapPlan.replace(path, expected: current.bytes, with: kept.original)
        backups.forget(path)
    }
}
