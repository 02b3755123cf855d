import Conversations
import GemvaultTesting
import SystemIO
import VaultCore
@testable import Spending

extension TemporaryFolder {
    /// A ledger in this folder's history, with the keys that open it.
    func ledger() throws -> (UsageLedger, HistoryKeys) {
        let keys = try HistoryKeys(seeds: [SecretBytes.random(count: 32)])
        let store = HistoryStore(stateDirectory: path, vaultPath: path + "/vault")
        _ = try TrustedFolder.create(store.folder)
        return (UsageLedger(history: store), keys)
    }
}
