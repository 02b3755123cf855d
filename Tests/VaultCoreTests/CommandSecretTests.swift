import SystemIO
import Testing
import VaultCore

@Suite struct CommandSecretTests {
    private let path = ["PATH": "/usr/bin:/bin"]

    @Test func theKeyIsTheTrimmedLine() throws {
        let key = try KeyCommand.secret("printf ' AIzaSyFromCommand \\n'", timeout: 5, environment: path)
        #expect(key.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } == "AIzaSyFromCommand")
    }

    @Test func nothingOrASecondLineIsNoKey() {
        #expect(throws: KeyCommand.Failure(program: "true", detail: "printed nothing on stdout", stderr: "")) {
            try KeyCommand.secret("true", timeout: 5, environment: path)
        }
        #expect {
            try KeyCommand.secret("printf 'AQ.key\\nX-Injected: yes\\n'", timeout: 5, environment: path, setting: "token_command")
        } throws: { error in
            (error as? KeyCommand.Failure)?.detail.hasPrefix("printed more than one line") == true && (error as? KeyCommand.Failure)?.program == "printf"
        }
    }
}
