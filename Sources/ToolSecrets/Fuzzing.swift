import VaultCore

/// The fuzz harness `mcp-config`: a config file another program wrote, parsed, scanned and
/// planned for wrapping. Returns the property an input broke, or nil.
public enum MCPConfigFuzzing {
    public static func check(_ bytes: [UInt8]) -> String? {
        guard let root = try? JSONCParser.parse(bytes) else { return nil }
        if let broken = spansBroken(root, count: bytes.count) { return broken }
        let snapshot = MCPConfigSnapshot(file: MCPConfigFile(path: "/fuzz/mcp.json", client: .other), bytes: bytes, root: root, permissions: 0o600)
        _ = snapshot.findings
        let plan = MCPWrapPlan.make(snapshot, only: [], gemvault: "/usr/bin/gemvault", name: nil)
        guard plan.changes else { return plan.moves.isEmpty ? nil : "secrets were planned to move but the file would not change" }
        guard let rewritten = try? JSONCParser.parse(plan.rewritten) else { return "the wrapped file does not parse" }
        let again = MCPConfigSnapshot(file: snapshot.file, bytes: plan.rewritten, root: rewritten, permissions: 0o600)
        if MCPWrapPlan.make(again, only: [], gemvault: "/usr/bin/gemvault", name: nil).changes { return "wrapping is not idempotent" }
        return nil
    }

    /// Every value's span lies in the file, inside its parent's.
    static func spansBroken(_ value: JSONCValue, count: Int) -> String? {
        guard value.span.lowerBound >= 0, value.span.upperBound <= count, !value.span.isEmpty else { return "a span falls outside the file" }
        let children = (value.members?.map(\.value) ?? []) + (value.elements ?? [])
        for child in children {
            guard value.span.contains(child.span.lowerBound), child.span.upperBound <= value.span.upperBound else { return "a child's span leaves its parent's" }
            if let broken = spansBroken(child, count: count) { return broken }
        }
        return nil
    }
}
