import GemvaultTesting
import Settings
import Testing
import VaultCore
@testable import KeyResolution

/// The rotation reminder (moved out of the CLI): a vault key older than rotation_days is named
/// once a day, and a young key, or a key from elsewhere, never.
@Suite struct RotationReminderTests {
    static let day: Int64 = 86400
    static let now: Int64 = 1_800_000_000

    static func settings(rotationDays: String) throws -> Settings {
        try Settings.resolve(SettingLayers(environment: ["GEMVAULT_ROTATION_DAYS": rotationDays]))
    }

    static func said(_ reminder: RotationReminder, _ key: ResolvedKey, _ settings: Settings, now: Int64 = now) -> [String] {
        var warnings: [String] = []
        reminder.remind(key: key, settings: settings, now: now, warn: { warnings.append($0) })
        return warnings
    }

    @Test func anOldVaultKeyIsNamedOnceADay() throws {
        let folder = TemporaryFolder("reminder")
        let reminder = RotationReminder(vaultPath: folder.appending("vault.gv"), stateHome: folder.appending("state"))
        let old = ResolvedKey(secret: SecretBytes(utf8: "AQ.k"), source: .vault(path: "vault.gv", name: "work"), updated: Self.now - 100 * Self.day)
        let settings = try Self.settings(rotationDays: "90")
        let first = Self.said(reminder, old, settings)
        #expect(first == ["key 'work' is 100 days old (rotation_days is 90); replace it with 'gemvault key rotate work' (or 'gemvault key rotate --create work': Docs/rotation.md)"])
        #expect(Self.said(reminder, old, settings, now: Self.now + 60).isEmpty)
        #expect(Self.said(reminder, old, settings, now: Self.now + Self.day).count == 1)
    }

    @Test func aYoungKeyAKeyFromElsewhereAndNoLimitSayNothing() throws {
        let folder = TemporaryFolder("reminder-quiet")
        let reminder = RotationReminder(vaultPath: folder.appending("vault.gv"), stateHome: folder.appending("state"))
        let young = ResolvedKey(secret: SecretBytes(utf8: "AQ.k"), source: .vault(path: "vault.gv", name: "work"), updated: Self.now - 10 * Self.day)
        #expect(Self.said(reminder, young, try Self.settings(rotationDays: "90")).isEmpty)
        let old = ResolvedKey(secret: SecretBytes(utf8: "AQ.k"), source: .vault(path: "vault.gv", name: "work"), updated: Self.now - 400 * Self.day)
        #expect(Self.said(reminder, old, try Self.settings(rotationDays: "0")).isEmpty)
        let environment = ResolvedKey(secret: SecretBytes(utf8: "AQ.k"), source: .environment(variable: "GEMINI_API_KEY"), updated: Self.now - 400 * Self.day)
        #expect(Self.said(reminder, environment, try Self.settings(rotationDays: "90")).isEmpty)
    }
}
