import KeyResolution
import Spending
import Testing
@testable import GemvaultCLI

/// Where a key is filed in the ledger: the CLI names it from where the key came.
@Suite struct LedgerNameTests {
    @Test func aKeyIsFiledUnderItsVaultNameElseItsSource() {
        #expect(SpendGuard.ledgerName(.vault(path: "/v", name: "work")) == "work")
        #expect(SpendGuard.ledgerName(.environment(variable: "GEMINI_API_KEY")) == "$GEMINI_API_KEY")
        #expect(SpendGuard.ledgerName(.keyFile(path: "/k")) == "file:/k")
        #expect(SpendGuard.ledgerName(.systemdCredential(path: "/run/credentials/x/gemini-api-key")) == "systemd:gemini-api-key")
    }
}
