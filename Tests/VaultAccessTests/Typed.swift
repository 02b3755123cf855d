import GemvaultTesting
import VaultAccess
import VaultCore

/// The passphrase as a script gives it, counted, with the notes it was told.
final class Typed: UnlockUI, @unchecked Sendable {
    var asked = 0
    var notes: [String] = []
    var canAsk: Bool { true }
    func ask(_ request: SecretRequest) throws -> SecretBytes? {
        guard request.attempt == 1, request.source == .passphraseOptions else { return nil }
        asked += 1
        return SecretBytes(utf8: TestVault.passphrase)
    }
    func note(_ text: String) { notes.append(text) }
}
