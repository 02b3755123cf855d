import SystemIO

/// What `doctor` reports about secrets for other tools: plaintext secrets in MCP clients'
/// config files (with the `mcp wrap` command that moves each), such files readable by other
/// accounts, and secrets in `.env` files under the current folder.
public enum ToolSecretsDoctor {
    public static let checks = ["mcp-configs", "dotenv-secrets"]

    public struct Finding: Sendable, Equatable {
        public let check: String
        public let message: String
        public let fix: String
    }

    public static func findings(files: [MCPConfigFile], workingFolder: String) -> [Finding] {
        files.flatMap(configFindings) + dotenvFindings(under: workingFolder)
    }

    static func configFindings(_ file: MCPConfigFile) -> [Finding] {
        guard let snapshot = try? MCPConfigSnapshot.read(file) else { return [] }
        var found: [Finding] = []
        if snapshot.readableByOthers {
            found.append(Finding(check: "mcp-configs", message: "\(file.path) (\(file.client.rawValue)'s MCP servers) is readable by other accounts (mode \(String(snapshot.permissions, radix: 8)))",
                                 fix: "chmod 600 \(file.path)"))
        }
        for finding in snapshot.findings {
            let what = "\(file.path): \(finding.shape.rawValue) in plain text in \(finding.kind) \(finding.variable) of MCP server '\(finding.server)' (\(finding.masked))"
            let fix = finding.remote
                ? "a remote server's header cannot be wrapped: use \(file.client.rawValue)'s own secret input for it, and keep the file private (chmod 600 \(file.path))"
                : "gemvault mcp wrap \(ShellQuote.quote(finding.server)) --config \(ShellQuote.quote(file.path))"
            found.append(Finding(check: "mcp-configs", message: what, fix: fix))
        }
        return found
    }

    /// `.env`, `.env.*` and `.envrc` files under `folder` (three levels, not node_modules or
    /// .git): each `NAME=value` line whose value looks like a secret.
    static func dotenvFindings(under folder: String) -> [Finding] {
        var found: [Finding] = []
        var queue: [(String, Int)] = [(folder, 0)]
        var visited = 0
        while !queue.isEmpty, visited < 500 {
            let (directory, depth) = queue.removeFirst()
            visited += 1
            for entry in FolderListing.entries(directory) ?? [] {
                let path = directory == "/" ? "/" + entry.name : directory + "/" + entry.name
                if entry.isDirectory {
                    if depth < 3, entry.name != "node_modules", entry.name != ".git" { queue.append((path, depth + 1)) }
                    continue
                }
                guard entry.name == ".env" || entry.name.hasPrefix(".env.") || entry.name == ".envrc",
                      let text = PlainFile.readText(path, limit: 65536, followLinks: false, realFilesOnly: true) else { continue }
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    guard let (variable, value) = assignment(line), let shape = SecretShape.of(value) else { continue }
                    let name = variable.lowercased().replacingAll("_", with: "-")
                    found.append(Finding(check: "dotenv-secrets", message: "\(path):\(number + 1) sets \(variable) to a \(shape.rawValue) in plain text",
                                         fix: "gemvault secret set \(name) --from-env \(variable) (with the value exported once), delete the line, and run the tool with 'gemvault exec --secret \(variable)=\(name) -- …'"))
                }
            }
        }
        return found
    }

    /// `NAME=value`, `export NAME=value`, the value unquoted.
    static func assignment(_ line: Substring) -> (String, String)? {
        var text = line.drop { $0 == " " || $0 == "\t" }
        if text.hasPrefix("export ") { text = text.dropFirst(7).drop { $0 == " " } }
        guard !text.hasPrefix("#"), let equals = text.firstIndex(of: "=") else { return nil }
        let variable = String(text[..<equals])
        var value = String(text[text.index(after: equals)...])
        if value.hasSuffix("\r") { value.removeLast() }
        if value.count >= 2, let first = value.first, first == "\"" || first == "'", value.last == first { value = String(value.dropFirst().dropLast()) }
        guard SecretBinding.isVariableName(variable), !value.isEmpty else { return nil }
        return (variable, value)
    }
}
