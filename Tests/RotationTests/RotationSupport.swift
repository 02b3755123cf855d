import GemvaultTesting
import Rotation
import Synchronization
import VaultAccess
import VaultCore

/// What a rotation told its user, kept for the test to read; waits pass at once.
final class RecordingProgress: RotationProgress {
    private let said = Mutex<(notes: [String], warnings: [String], waits: [Double], changed: [String], reports: [RotationReport])>(([], [], [], [], []))

    var notes: [String] { said.withLock { $0.notes } }
    var warnings: [String] { said.withLock { $0.warnings } }
    var waits: [Double] { said.withLock { $0.waits } }
    var changed: [String] { said.withLock { $0.changed } }
    var reports: [RotationReport] { said.withLock { $0.reports } }

    func note(_ text: String) { said.withLock { $0.notes.append(text) } }
    func warning(_ text: String) { said.withLock { $0.warnings.append(text) } }
    func wait(_ seconds: Double, showing label: String) { said.withLock { $0.waits.append(seconds) } }
    func keyChanged(_ name: String) { said.withLock { $0.changed.append(name) } }
    func finished(_ report: RotationReport) throws { said.withLock { $0.reports.append(report) } }
}

/// The test vault's passphrase, as --passphrase-file would give it.
struct ScriptedPassphrase: UnlockUI {
    var canAsk: Bool { true }

    func ask(_ request: SecretRequest) throws -> SecretBytes? {
        guard request.attempt == 1, request.source != .terminalOnly else { return nil }
        return SecretBytes(utf8: TestVault.passphrase)
    }

    func note(_ text: String) {}
}
