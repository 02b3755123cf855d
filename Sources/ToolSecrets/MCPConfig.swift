import SystemIO
import VaultCore

/// The MCP clients whose config files gemvault knows, by their documented locations and formats.
public enum MCPClient: String, Sendable, CaseIterable {
    case claudeCode = "Claude Code"
    case geminiCLI = "gemini-cli"
    case vsCode = "VS Code"
    case cursor = "Cursor"
    case zed = "Zed"
    /// A file named with --config: its sections are recognised by their names.
    case other = "config file"
}

public struct MCPConfigFile: Sendable, Equatable {
    public let path: String
    public let client: MCPClient

    public init(path: String, client: MCPClient) {
        self.path = path
        self.client = client
    }

    /// Where each client keeps its servers: the user's files, then the current folder's.
    public static func known(home: String, configHome: String, workingFolder: String) -> [MCPConfigFile] {
        [MCPConfigFile(path: home + "/.claude.json", client: .claudeCode),
         MCPConfigFile(path: workingFolder + "/.mcp.json", client: .claudeCode),
         MCPConfigFile(path: home + "/.gemini/settings.json", client: .geminiCLI),
         MCPConfigFile(path: workingFolder + "/.gemini/settings.json", client: .geminiCLI),
         MCPConfigFile(path: configHome + "/Code/User/mcp.json", client: .vsCode),
         MCPConfigFile(path: workingFolder + "/.vscode/mcp.json", client: .vsCode),
         MCPConfigFile(path: home + "/.cursor/mcp.json", client: .cursor),
         MCPConfigFile(path: workingFolder + "/.cursor/mcp.json", client: .cursor),
         MCPConfigFile(path: configHome + "/zed/settings.json", client: .zed)]
            .reduce(into: []) { files, file in if !files.contains(where: { $0.path == file.path }) { files.append(file) } }
    }
}

/// One server entry of a config file.
public struct MCPServer: Sendable {
    public let name: String
    /// Where the entry is, for messages: `mcpServers`, `projects › /src/app › mcpServers`.
    public let section: String
    public let entry: JSONCValue

    public var command: String? { entry["command"]?.text }
    /// A remote server: the client itself sends its headers, so no command can be wrapped.
    public var isRemote: Bool { entry["command"] == nil && (entry["url"] != nil || entry["httpUrl"] != nil || entry["serverUrl"] != nil) }
    /// Zed's older form keeps `path`, `args` and `env` inside `command`: its env is read too.
    public var environment: [JSONMember] { entry["env"]?.members ?? entry["command"]?["env"]?.members ?? [] }
    public var headers: [JSONMember] { entry["headers"]?.members ?? [] }

    /// Already runs through `gemvault exec`.
    public var isWrapped: Bool {
        guard let command, command == "gemvault" || command.hasSuffix("/gemvault") else { return false }
        return entry["args"]?.elements?.contains { $0.text == "exec" } ?? false
    }

    /// The servers of a parsed file: the sections each client documents (`mcpServers`,
    /// VS Code's `servers`, Zed's `context_servers`) and Claude Code's per-project ones.
    public static func all(in root: JSONCValue) -> [MCPServer] {
        var found: [MCPServer] = []
        for section in ["mcpServers", "servers", "context_servers"] {
            for member in root[section]?.members ?? [] where member.value.members != nil {
                found.append(MCPServer(name: member.key, section: section, entry: member.value))
            }
        }
        for project in root["projects"]?.members ?? [] {
            for member in project.value["mcpServers"]?.members ?? [] where member.value.members != nil {
                found.append(MCPServer(name: member.key, section: "projects › \(project.key) › mcpServers", entry: member.value))
            }
        }
        return found
    }
}

/// A value in a config file that looks like a secret.
public struct MCPFinding: Sendable {
    public let file: MCPConfigFile
    public let server: String
    public let section: String
    /// `env` or `headers`.
    public let kind: String
    public let variable: String
    public let shape: SecretShape
    public let masked: String
    /// A remote server's header: reported, never moved.
    public let remote: Bool
}

/// A config file read once: its bytes (kept to notice a change before writing), its tree, its mode.
public struct MCPConfigSnapshot: Sendable {
    public let file: MCPConfigFile
    public let bytes: [UInt8]
    public let root: JSONCValue
    public let permissions: UInt32

    public var readableByOthers: Bool { permissions & 0o044 != 0 }
    public var servers: [MCPServer] { MCPServer.all(in: root) }

    public enum ReadError: Error, Equatable {
        case unreadable(path: String, reason: String)
        case malformed(path: String, reason: String)
        /// A file named on purpose (`--config`) is not there.
        case missing(path: String)
    }

    /// Reads the file, or nil when it does not exist. The file must be the user's and not
    /// writable by others; it may be readable (that is reported).
    public static func read(_ file: MCPConfigFile) throws(ReadError) -> MCPConfigSnapshot? {
        let (folderPath, name) = TrustedFolder.parent(of: file.path)
        let descriptor: FileDescriptor
        do throws(TrustedOpenError) {
            guard let folder = try TrustedFolder.open(folderPath),
                  let opened = try TrustedFile.open(name, in: folder, requirement: .configuration, flags: OpenFlags.readOnly) else { return nil }
            descriptor = opened
        } catch {
            switch error {
            case .refused(let failure): throw .unreadable(path: file.path, reason: failure.message)
            case .failed(let failure): throw .unreadable(path: file.path, reason: failure.reason)
            }
        }
        let bytes: [UInt8]
        do { bytes = try descriptor.readFromStart(limit: 16 << 20) } catch { throw .unreadable(path: file.path, reason: error.reason) }
        let root: JSONCValue
        do { root = try JSONCParser.parse(bytes) } catch { throw .malformed(path: file.path, reason: "\(error.reason) at byte \(error.offset)") }
        let permissions = (try? descriptor.status().permissions) ?? 0o600
        return MCPConfigSnapshot(file: file, bytes: bytes, root: root, permissions: permissions)
    }

    /// Every environment value and header that looks like a secret.
    public var findings: [MCPFinding] {
        servers.flatMap { server in
            [("env", server.environment), ("headers", server.headers)].flatMap { kind, members in
                members.compactMap { member -> MCPFinding? in
                    guard let value = member.value.text, let shape = SecretShape.of(value) else { return nil }
                    return MCPFinding(file: file, server: server.name, section: server.section, kind: kind, variable: member.key, shape: shape,
                                      masked: SecretBytes(utf8: value).masked, remote: kind == "headers" || server.isRemote)
                }
            }
        }
    }
}
