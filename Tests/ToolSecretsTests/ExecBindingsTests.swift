import Testing
@testable import ToolSecrets

/// exec's rules for the variables it sets (moved out of the CLI): VAR=NAME each once, and never
/// a variable the dynamic loader or the C library reads.
@Suite struct ExecBindingsTests {
    @Test func theKeyVariableIsGeminiAPIKeyUnlessAnotherNameIsGiven() throws {
        #expect(try SecretBinding.keyVariable(nil) == "GEMINI_API_KEY")
        #expect(try SecretBinding.keyVariable("GOOGLE_API_KEY") == "GOOGLE_API_KEY")
        #expect(throws: ExecBindingError.notAVariable(text: "NOT A NAME")) { try SecretBinding.keyVariable("NOT A NAME") }
        #expect(throws: ExecBindingError.keyReadByTheLoader(variable: "LD_PRELOAD")) { try SecretBinding.keyVariable("LD_PRELOAD") }
        #expect(throws: ExecBindingError.keyReadByTheLoader(variable: "TMPDIR")) { try SecretBinding.keyVariable("TMPDIR") }
    }

    @Test func bindingsAreCheckedInOrderAndNoVariableTwice() throws {
        let two = try SecretBinding.bindings([("TOKEN=github", false, "--secret"), ("PEM=tls", true, "--secret-file")])
        #expect(two == [SecretBinding(variable: "TOKEN", name: "github", asFile: false), SecretBinding(variable: "PEM", name: "tls", asFile: true)])
        #expect(throws: ExecBindingError.notABinding(option: "--secret-file", text: "no-equals")) {
            try SecretBinding.bindings([("no-equals", true, "--secret-file")])
        }
        #expect(throws: ExecBindingError.readByTheLoader(option: "--secret", variable: "GCONV_PATH")) {
            try SecretBinding.bindings([("GCONV_PATH=x", false, "--secret")])
        }
        #expect(throws: ExecBindingError.givenTwice(variable: "TOKEN")) {
            try SecretBinding.bindings([("TOKEN=a", false, "--secret"), ("TOKEN=b", true, "--secret-file")])
        }
    }
}
