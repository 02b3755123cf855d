import KeyResolution
import Testing

/// Where a key is filed in the spending ledger: named from where the key came.
@Suite struct LedgerNameTests {
    @Test func aKeyIsFiledUnderItsVaultNameElseItsSource() {
        #expect(KeySource.vault(path: "/v", name: "work").ledgerName == "work")
        #expect(KeySource.environment(variable: "GEMINI_API_KEY").ledgerName == "$GEMINI_API_KEY")
        #expect(KeySource.keyFile(path: "/k").ledgerName == "file:/k")
        #expect(KeySource.systemdCredential(path: "/run/credentials/x/gemini-api-key").ledgerName == "systemd:gemini-api-key")
        #expect(KeySource.googleIdentity(principal: "sa@p.iam", chain: "x").ledgerName == "google:sa@p.iam")
    }
}
