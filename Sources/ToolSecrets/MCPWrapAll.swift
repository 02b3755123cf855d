import VaultAccess

extension MCPConfigSnapshot {
    /// The files of `files` that exist and parse. A `named` file (`--config`) must exist and be
    /// read; any other that cannot be read is passed to `skipped` and the rest go on.
    public static func readAll(_ files: [MCPConfigFile], named: Bool, skipped: (ReadError) -> Void) throws(ReadError) -> [MCPConfigSnapshot] {
        var found: [MCPConfigSnapshot] = []
        for file in files {
            do throws(ReadError) {
                if let snapshot = try read(file) { found.append(snapshot) } else if named { throw .missing(path: file.path) }
            } catch {
                guard !named else { throw error }
                skipped(error)
            }
        }
        return found
    }
}

/// `mcp wrap` over several files: one plan a file, no secret name given twice.
extension MCPWrapPlan {
    /// One plan a snapshot. `taken` (a secret's name, what uses it) grows with each plan's
    /// moves, so two files' servers never get the same secret.
    public static func makeAll(_ snapshots: [MCPConfigSnapshot], only: [String], gemvault: String, name: String?,
                               taken: [String: String]) -> [MCPWrapPlan] {
        var taken = taken
        return snapshots.map { snapshot in
            let plan = make(snapshot, only: only, gemvault: gemvault, name: name, taken: taken)
            for move in plan.moves { taken[move.secretName] = usedBy(move.server, section: move.section, snapshot) }
            return plan
        }
    }

    /// What the vault's secrets note of their users, by name; asked of the vault only when a
    /// local server has a secret to move.
    public static func takenNames(for snapshots: [MCPConfigSnapshot], in vault: VaultAccess) throws -> [String: String] {
        guard snapshots.contains(where: { $0.findings.contains { !$0.remote } }) else { return [:] }
        var taken: [String: String] = [:]
        for secret in try vault.toolSecretSummaries() { taken[secret.name] = secret.usedBy }
        return taken
    }
}
