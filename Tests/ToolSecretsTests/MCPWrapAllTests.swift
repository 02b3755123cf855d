import Foundation
import Testing
@testable import ToolSecrets

/// `mcp scan`'s and `wrap`'s walk over several files (moved out of the CLI): a named file must be
/// there and read; two files' servers never get the same secret name.
@Suite final class MCPWrapAllTests {
    let folder = NSTemporaryDirectory() + "gv-mcp-all-" + UUID().uuidString

    deinit { try? FileManager.default.removeItem(atPath: folder) }

    func write(_ name: String, _ text: String) throws -> MCPConfigFile {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let path = folder + "/" + name
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, 0o600)
        return MCPConfigFile(path: path, client: .other)
    }

    @Test func aNamedFileMustBeThereAndReadOthersAreSkipped() throws {
        let good = try write("good.json", #"{"mcpServers": {}}"#)
        let bad = try write("bad.json", "{ not json")
        let absent = MCPConfigFile(path: folder + "/absent.json", client: .other)
        var skipped: [MCPConfigSnapshot.ReadError] = []
        let found = try MCPConfigSnapshot.readAll([good, bad, absent], named: false, skipped: { skipped.append($0) })
        #expect(found.map(\.file.path) == [good.path])
        #expect(skipped.count == 1)
        #expect(throws: MCPConfigSnapshot.ReadError.missing(path: absent.path)) { try MCPConfigSnapshot.readAll([absent], named: true, skipped: { _ in }) }
    }

    @Test func twoFilesWithTheSameServerGetTwoSecretNames() throws {
        let text = #"{"mcpServers": {"github": {"command": "github-mcp", "env": {"GITHUB_TOKEN": "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB"}}}}"#
        let snapshots = try MCPConfigSnapshot.readAll([try write("a.json", text), try write("b.json", text)], named: false, skipped: { _ in })
        let plans = MCPWrapPlan.makeAll(snapshots, only: [], gemvault: "/usr/bin/gemvault", name: nil, taken: [:])
        let names = plans.flatMap { $0.moves.map(\.secretName) }
        #expect(names.count == 2 && Set(names).count == 2)
    }
}
