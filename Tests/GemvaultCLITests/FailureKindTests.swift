import Conversations
import GeminiClient
import Testing
@testable import GemvaultCLI

/// A provider's failure kind becomes an exit code in one place, and `ask --json` keeps the
/// provider's own reason, or names the exit code's when there is none.
@Suite struct FailureKindTests {
    @Test func eachKindHasOneExitCode() {
        #expect(ExitCode(ChatErrorKind.refused.outcome) == .apiRefused && ExitCode(ChatErrorKind.network.outcome) == .network)
        #expect(ExitCode(ChatErrorKind.interrupted.outcome) == .interrupted)
        let (code, message, hint) = ErrorReport.describe(GeminiError(category: .network, message: "no data", hint: "wait", cause: .timeout))
        #expect(code == .network && message == "no data" && hint == "wait")
    }

    @Test func askJSONKeepsTheProvidersReasonAndNamesTheCodeOtherwise() {
        let timeout = ChatCommand.AskError(GeminiError(category: .network, message: "no data", cause: .timeout))
        #expect(timeout.exitCode == 7 && timeout.reason == "timeout")
        let stopped = ChatCommand.AskError(ReplyInterrupted(message: "interrupted"))
        #expect(stopped.exitCode == 130 && stopped.reason == "interrupted" && stopped.message == "interrupted")
        let reasons = [ExitCode.noKey, .wrongSecret, .damaged, .usage, .interrupted, .network, .apiRefused, .failure, .readerClosed].map(\.reason)
        #expect(reasons == ["no-key", "wrong-secret", "vault-damaged", "usage", "interrupted", "network", "refused", "failure", "failure"])
        #expect(ChatCommand.AskError(CommandFailure(.noKey, "none")).reason == "no-key")
    }
}
