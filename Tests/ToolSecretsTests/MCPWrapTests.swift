import Glibc
import SystemIO
import Testing
@testable import ToolSecrets
import VaultCore

private func fixture(_ name: String) throws -> [UInt8] {
    let path = String(#filePath.dropLast("MCPWrapTests.swift".count)) + "Fixtures/" + name
    guard let file = try TrustedFile.open(path, requirement: .configuration) else { throw SystemError("open", path: path, code: ENOENT) }
    return try file.readFromStart(limit: 1 << 20)
}

private func snapshot(_ name: String, _ bytes: [UInt8]? = nil) throws -> MCPConfigSnapshot {
    let bytes = try bytes ?? fixture(name)
    return MCPConfigSnapshot(file: MCPConfigFile(path: "/config/" + name, client: .other), bytes: bytes, root: try JSONCParser.parse(bytes), permissions: 0o600)
}

/// The servers of a tree with their entries, for comparing two files' meaning.
private func entries(_ root: JSONCValue) -> [String: JSONCValue] {
    Dictionary(MCPServer.all(in: root).map { ($0.section + "/" + $0.name, $0.entry) }, uniquingKeysWith: { a, _ in a })
}

private func stripped(_ value: JSONCValue) -> String {
    switch value {
    case .object(let members, _): "{" + members.map { "\($0.key):" + stripped($0.value) }.joined(separator: ",") + "}"
    case .array(let elements, _): "[" + elements.map(stripped).joined(separator: ",") + "]"
    case .string(let text, _): "\"" + text + "\""
    case .scalar(let text, _): text
    }
}

@Suite struct MCPWrapTests {
    static let fixtures = ["claude.json", "gemini-settings.json", "vscode-mcp.json", "cursor-mcp.json", "zed-settings.json"]

    @Test(arguments: fixtures)
    func eachFormatIsWrappedAndOnlyTheWrappedEntriesChange(name: String) throws {
        let before = try snapshot(name)
        let plan = MCPWrapPlan.make(before, only: [], gemvault: "/usr/bin/gemvault", name: nil)
        #expect(!plan.moves.isEmpty && plan.changes)
        let after = try snapshot(name, plan.rewritten)
        let wrapped = Set(plan.moves.map(\.server))
        let old = entries(before.root), new = entries(after.root)
        #expect(Set(old.keys) == Set(new.keys))
        for (key, entry) in old {
            let server = String(key.split(separator: "/").last!)
            guard wrapped.contains(server) else { #expect(stripped(entry) == stripped(new[key]!), "\(key) changed"); continue }
            let moved = plan.moves.filter { $0.server == server }
            let result = try #require(new[key])
            #expect(result["command"]?.text == "/usr/bin/gemvault")
            let arguments = result["args"]?.elements?.compactMap(\.text) ?? []
            let expected = ["exec"] + moved.flatMap { ["--secret", "\($0.variable)=mcp.\(server).\($0.variable)"] } + ["--", entry["command"]!.text!]
                + (entry["args"]?.elements?.compactMap(\.text) ?? [])
            #expect(arguments == expected)
            let kept = Set(result["env"]?.members?.map(\.key) ?? [])
            #expect(kept == Set(entry["env"]?.members?.map(\.key) ?? []).subtracting(moved.map(\.variable)))
            for move in moved { move.value.withUnsafeBytes { #expect(!String(decoding: plan.rewritten, as: UTF8.self).contains(String(decoding: $0, as: UTF8.self))) } }
        }
        // What is outside the servers is byte for byte the same: the text before the first change and after the last.
        let prefix = zip(before.bytes, plan.rewritten).prefix { $0 == $1 }.count
        #expect(prefix > 0 && before.bytes.suffix(20) == plan.rewritten.suffix(20))
        // Idempotent: wrapping the result changes nothing.
        #expect(!MCPWrapPlan.make(after, only: [], gemvault: "/usr/bin/gemvault", name: nil).changes)
    }

    @Test func commentsAndTrailingCommasSurvive() throws {
        let plan = MCPWrapPlan.make(try snapshot("vscode-mcp.json"), only: [], gemvault: "/usr/bin/gemvault", name: nil)
        let text = String(decoding: plan.rewritten, as: UTF8.self)
        #expect(text.contains("// Servers for this workspace") && text.contains("/* pasted from the dashboard */"))
        #expect(text.contains("\"OPENAI_ORG\": \"org-research\", // not a secret") && text.contains("${input:perplexity-key}"))
    }

    @Test func remoteHeadersAreLeftWithAReason() throws {
        let plan = MCPWrapPlan.make(try snapshot("cursor-mcp.json"), only: [], gemvault: "/usr/bin/gemvault", name: nil)
        #expect(plan.skipped.map(\.server) == ["remote-tools"] && !plan.moves.contains { $0.server == "remote-tools" })
        #expect(String(decoding: plan.rewritten, as: UTF8.self).contains("Bearer eyJhbGciOiJIUzI1NiJ9"))
        #expect(plan.moves.map(\.variable).sorted() == ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"])
    }

    @Test func onlyTheNamedServersAreWrapped() throws {
        let plan = MCPWrapPlan.make(try snapshot("claude.json"), only: ["postgres"], gemvault: "/g", name: "db")
        #expect(plan.moves.map(\.secretName) == ["db"] && plan.moves.map(\.server) == ["postgres"])
        #expect(String(decoding: plan.rewritten, as: UTF8.self).contains("ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"))
    }

    @Test func zedsOlderFormIsReportedAndLeftWithAReason() throws {
        let text = #"{"context_servers": {"old": {"command": {"path": "node", "args": ["s.js"], "env": {"K": "sk-ant-api03-Xy7Kp2Lm9Qr4Tv8Wz1Bn5"}}}}}"#
        let old = try snapshot("zed.json", Array(text.utf8))
        #expect(old.findings.map(\.variable) == ["K"])
        let plan = MCPWrapPlan.make(old, only: [], gemvault: "/g", name: nil)
        #expect(!plan.changes && plan.moves.isEmpty && plan.skipped.map(\.server) == ["old"])
    }

    @Test func aNameAnotherServersSecretHoldsGetsANumber() throws {
        let text = """
            {"mcpServers": {"github": {"command": "a", "env": {"T": "ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe"}}},
             "projects": {"/p": {"mcpServers": {"github": {"command": "b", "env": {"T": "ghp_Other0000000000000000000000000000000"}}}}}}
            """
        let both = MCPWrapPlan.make(try snapshot("x.json", Array(text.utf8)), only: [], gemvault: "/g", name: nil)
        #expect(both.moves.map(\.secretName) == ["mcp.github.T", "mcp.github.T.2"])
        let elsewhere = MCPWrapPlan.make(try snapshot("x.json", Array(text.utf8)), only: [], gemvault: "/g", name: nil,
                                         taken: ["mcp.github.T": "Cursor server 'github' (/home/ada/.cursor/mcp.json)"])
        #expect(elsewhere.moves.map(\.secretName) == ["mcp.github.T.2", "mcp.github.T.3"])
        // Its own earlier secret (wrapped, unwrapped, wrapped again) keeps its name.
        let own = MCPWrapPlan.make(try snapshot("x.json", Array(text.utf8)), only: ["github"], gemvault: "/g", name: nil,
                                   taken: ["mcp.github.T": "config file server 'github' (/config/x.json)"])
        #expect(own.moves.first?.secretName == "mcp.github.T")
    }

    @Test func removalsTakeTheirCommasWhereverTheMemberIs() throws {
        for (source, expected) in [("{\"A\": \"1\", \"S\": \"x\", \"B\": \"2\"}", "{\"A\": \"1\", \"B\": \"2\"}"),
                                   ("{\"S\": \"x\", \"A\": \"1\"}", "{\"A\": \"1\"}"),
                                   ("{\"A\": \"1\", \"S\": \"x\"}", "{\"A\": \"1\"}"),
                                   ("{\"A\": \"1\", \"S\": \"x\", \"T\": \"y\",}", "{\"A\": \"1\",}"),
                                   ("{ \"S\": \"x\", \"T\": \"y\" }", "{  }"),
                                   ("{ /* c */ \"S\": \"x\", \"T\": \"y\", // t\n}", "{ /* c */  // t\n}"),
                                   ("{\"A\": \"1\", \"A\": \"2\", \"S\": \"x\"}", "{\"A\": \"1\", \"A\": \"2\"}")] {
            let root = try JSONCParser.parse(Array(source.utf8))
            var bytes = Array(source.utf8)
            let positions = Set(root.members!.indices.filter { ["S", "T"].contains(root.members![$0].key) })
            for edit in MCPWrapPlan.removals(of: positions, in: root.members!, bytes: Array(source.utf8)).sorted(by: { $0.range.lowerBound > $1.range.lowerBound }) {
                bytes.replaceSubrange(edit.range, with: Array(edit.text.utf8))
            }
            #expect(String(decoding: bytes, as: UTF8.self) == expected)
            #expect((try? JSONCParser.parse(bytes)) != nil)
        }
    }

    @Test func aFileChangedSinceItWasReadIsNotWritten() throws {
        let folder = "/tmp/gemvault-mcp-test-\(ProcessIdentity.current)"
        let trusted = try TrustedFolder.create(folder)
        defer { trusted.remove("mcp.json"); rmdir(folder) }
        try trusted.replace("mcp.json", with: try fixture("cursor-mcp.json"), tempPrefix: ".t-")
        let read = try #require(try MCPConfigSnapshot.read(MCPConfigFile(path: folder + "/mcp.json", client: .cursor)))
        let plan = MCPWrapPlan.make(read, only: [], gemvault: "/g", name: nil)
        try trusted.replace("mcp.json", with: Array("{\"mcpServers\": {}}".utf8), tempPrefix: ".t-")
        #expect(throws: MCPWrapError.changedSinceRead(path: folder + "/mcp.json")) {
            try MCPWrapPlan.replace(folder + "/mcp.json", expected: read.bytes, with: plan.rewritten)
        }
        #expect(PlainFile.readText(folder + "/mcp.json") == "{\"mcpServers\": {}}")
    }

    @Test func theDryRunDiffShowsValuesMasked() throws {
        let plan = MCPWrapPlan.make(try snapshot("gemini-settings.json"), only: [], gemvault: "/g", name: nil)
        #expect(plan.diff.contains("-        \"SLACK_BOT_TOKEN\": \"xoxb…StUv\",") && !plan.diff.contains("AbCdEfGhIjKl"))
    }
}

@Suite struct JSONCAndShapeTests {
    @Test func jsoncParsesCommentsTrailingCommasAndEscapesWithSpans() throws {
        let text = "// c\n{\"a\\u00e9\": [1, true, null, /* x */ \"s\\n\",], \"b\": {},}"
        let root = try JSONCParser.parse(Array(text.utf8))
        #expect(root.members?.map(\.key) == ["aé", "b"] && root["aé"]?.elements?.count == 4)
        let string = try #require(root["aé"]?.elements?.last)
        #expect(string.text == "s\n" && String(decoding: Array(text.utf8)[string.span], as: UTF8.self) == "\"s\\n\"")
        for bad in ["{", "{\"a\" 1}", "[1 2]", "{\"a\": tru}", "\"\u{1}\"", "{} x"] {
            #expect(throws: JSONCError.self) { try JSONCParser.parse(Array(bad.utf8)) }
        }
        #expect(JSONText.string("a\"b\\c\n") == "\"a\\\"b\\\\c\\n\"")
    }

    @Test func knownShapesAndRandomValuesAreSecretsAndOrdinaryValuesAreNot() {
        let secrets: [(String, SecretShape)] = [("ghp_R8x2Kq7LmN4pT9vW3yZ6bC1dF5gH0jS2aQe", .github), ("github_pat_11ABCDEFG0123456789_abcdef", .github),
            ("xoxb-2048-1234567890-AbCdEfGhIjKl", .slack), ("sk-ant-api03-Xy7Kp2Lm9Qr4Tv8Wz1", .anthropic), ("sk-proj-7hQm2Lx9Vb4Nc8Zr1Tw6", .openAI),
            ("AQ.Ab8RD3mo0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp", .googleAuth), ("AIzaSyD3mo0c3xT1mVw7yZk2PaH5sJd9fGuE4", .googleStandard),
            ("AKIAIOSFODNN7EXAMPLE", .aws), ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJl", .jwt),
            ("-----BEGIN OPENSSH PRIVATE KEY-----\nabc", .pem), ("Bearer Zq8vR2nX5tL9wK3mB7cY1dF4", .highEntropy),
            ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", .highEntropy)]
        for (value, shape) in secrets { #expect(SecretShape.of(value) == shape, "\(value)") }
        for plain in ["info", "eu-west-1", "T01234567", "${input:perplexity-key}", "$GITHUB_TOKEN", "https://mcp.example.com/sse?x=1234567890abcdef",
                      "/home/ada/projects/some-long-folder-name-2026", "org-research", "true", "postgresql://localhost/app"] {
            #expect(SecretShape.of(plain) == nil, "\(plain)")
        }
    }
}
