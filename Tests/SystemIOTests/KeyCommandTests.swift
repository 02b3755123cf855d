import SystemIO
import Testing

@Suite struct KeyCommandTests {
    private let path = ["PATH": "/usr/bin:/bin"]

    @Test func splittingHonoursQuotesWithoutExpanding() {
        #expect(KeyCommand.split(#"op read "op://a b/c" --x='y z' $HOME"#) == ["op", "read", "op://a b/c", "--x=y z", "$HOME"])
        #expect(KeyCommand.split(#"a\ b c"#) == ["a b", "c"])
        #expect(KeyCommand.split("unbalanced 'quote") == nil && KeyCommand.split("   ") == nil)
    }

    @Test func runCapturesStdoutIntoTheCallersMemoryAndReportsFailures() throws {
        var output = [UInt8](repeating: 0, count: KeyCommand.outputLimit)
        let (count, stderr) = try output.withUnsafeMutableBytes { raw in
            try KeyCommand.run("sh -c 'printf \" AIzaSyFromCommand \\n\"; echo note >&2'", timeout: 5, environment: path, setting: "key_command", into: raw)
        }
        #expect(String(decoding: output[0..<count], as: UTF8.self) == " AIzaSyFromCommand \n" && stderr == "note")
        #expect(throws: KeyCommand.Failure(program: "sh", detail: "exited with status 4", stderr: "nope")) {
            try output.withUnsafeMutableBytes { raw in
                try KeyCommand.run("sh -c 'echo nope >&2; exit 4'", timeout: 5, environment: path, setting: "key_command", into: raw)
            }
        }
        #expect(throws: KeyCommand.Failure(program: "sleep", detail: "timed out after 0 s (key_command_timeout)", stderr: "")) {
            try output.withUnsafeMutableBytes { raw in try KeyCommand.run("sleep 5", timeout: 0.3, environment: path, setting: "key_command", into: raw) }
        }
        #expect(throws: KeyCommand.Failure(program: "token_command", detail: "cannot be parsed (unbalanced quote?)", stderr: "")) {
            try output.withUnsafeMutableBytes { raw in try KeyCommand.run("a 'b", timeout: 1, environment: path, setting: "token_command", into: raw) }
        }
    }

    @Test func moreThanTheLimitIsRefused() {
        var output = [UInt8](repeating: 0, count: KeyCommand.outputLimit)
        #expect(throws: KeyCommand.Failure(program: "head", detail: "printed more than 8192 bytes", stderr: "")) {
            try output.withUnsafeMutableBytes { raw in
                try KeyCommand.run("head -c 9000 /dev/zero", timeout: 5, environment: path, setting: "key_command", into: raw)
            }
        }
    }

    @Test func theCommandSeesNoAPIKey() throws {
        var output = [UInt8](repeating: 0, count: KeyCommand.outputLimit)
        let (count, _) = try output.withUnsafeMutableBytes { raw in
            try KeyCommand.run("sh -c 'echo ${GEMINI_API_KEY:-none}${GOOGLE_API_KEY:-none}${SSLKEYLOGFILE:-none}'", timeout: 5,
                               environment: path.merging(["GEMINI_API_KEY": "k", "GOOGLE_API_KEY": "k", "SSLKEYLOGFILE": "/tmp/x"]) { a, _ in a },
                               setting: "key_command", into: raw)
        }
        #expect(String(decoding: output[0..<count], as: UTF8.self) == "nonenonenone\n")
    }
}
