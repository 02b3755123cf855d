import Glibc
import SystemIO
import Testing
@testable import ToolSecrets
import VaultCore

@Suite struct SecretBindingTests {
    @Test func bindingsAreVariableEqualsName() {
        #expect(SecretBinding(parsing: "GITHUB_TOKEN=mcp.github.GITHUB_TOKEN", asFile: false)
                == SecretBinding(variable: "GITHUB_TOKEN", name: "mcp.github.GITHUB_TOKEN", asFile: false))
        for bad in ["NOEQUALS", "=name", "VAR=", "1VAR=name", "VA R=name", "VAR=bad/name", "VAR=-dash"] {
            #expect(SecretBinding(parsing: bad, asFile: false) == nil, "\(bad)")
        }
    }

    @Test func theRuntimeFolderIsTheVariableElseTheLoginManagersNeverTmp() throws {
        #expect(try SecretHandOut.runtimeFolder(environment: ["XDG_RUNTIME_DIR": "/run/user/42"]) == "/run/user/42")
        let fallback = try? SecretHandOut.runtimeFolder(environment: ["XDG_RUNTIME_DIR": "relative"])
        #expect(fallback == nil || fallback == "/run/user/\(CurrentUser.id)")
    }
}

@Suite struct ScratchFolderTests {
    @Test func filesArePrivateAndGoneAfterRemove() throws {
        let parent = "/tmp/gemvault-scratch-test-\(ProcessIdentity.current)"
        _ = try TrustedFolder.create(parent)
        defer { rmdir(parent) }
        let folder = try ScratchFolder.create(in: parent, prefix: "gemvault-exec")
        let path = try [UInt8]("s3cret".utf8).withUnsafeBytes { bytes throws(SystemError) in try folder.write("TOKEN", bytes) }
        #expect(FileStatus.of(link: path)?.permissions == 0o600 && FileStatus.of(link: folder.path)?.permissions == 0o700)
        #expect(PlainFile.readText(path) == "s3cret")
        #expect(throws: SystemError.self) { try [UInt8]("x".utf8).withUnsafeBytes { bytes throws(SystemError) in try folder.write("TOKEN", bytes) } }
        folder.remove()
        #expect(FileStatus.of(link: path) == nil && FileStatus.of(link: folder.path) == nil)
    }
}

@Suite struct ToolSecretsDoctorTests {
    @Test func dotenvLinesAreReadAsAssignments() {
        #expect(ToolSecretsDoctor.assignment("export TOKEN='ghp_abc'") ?? ("", "") == ("TOKEN", "ghp_abc"))
        #expect(ToolSecretsDoctor.assignment("  KEY=\"v\"\r") ?? ("", "") == ("KEY", "v"))
        for line in ["# KEY=value", "KEY=", "not an assignment", "1KEY=x"] { #expect(ToolSecretsDoctor.assignment(Substring(line)) == nil) }
        #expect(ShellQuote.quote("github") == "github" && ShellQuote.quote("my server") == "'my server'")
        #expect(ShellQuote.quote("it's") == "'it'\\''s'" && ShellQuote.quote("~/x") == "'~/x'" && ShellQuote.quote("") == "''")
    }
}
