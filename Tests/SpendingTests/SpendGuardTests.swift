import Conversations
import GemvaultTesting
import Settings
import SystemIO
import Testing
import VaultCore
@testable import Spending

/// The vault as a spend check sees it: its settings and conversation keys, or locked (nil).
final class FakeBudgetVault: BudgetVault {
    var settings: [String: String]?
    let conversationKeys = [SecretBytes.random(count: 32)]
    var exists: Bool { true }

    init(settings: [String: String]?) { self.settings = settings }

    func settingsAndConversationKeys() -> (settings: [String: String], conversationKeys: [SecretBytes])? {
        settings.map { ($0, conversationKeys) }
    }

    func sessionKey(_ name: String) -> SecretBytes? { nil }
}

/// What the check said, kept for the test.
final class HeardReporter: SpendReporter {
    var notes: [String] = []
    var warnings: [String] = []
    func note(_ text: String) { notes.append(text) }
    func warning(_ text: String) { warnings.append(text) }
    func describe(_ error: any Error) -> (message: String, interrupted: Bool) { ("\(error)", false) }
}

struct NotAsked: Error {}

/// A provider that counts every prompt as `tokens`; it is never asked for a reply.
final class CountingProvider: ChatProvider {
    var tokens: Int
    init(tokens: Int) { self.tokens = tokens }
    var displayName: String { "Counting" }
    var capabilities: ProviderCapabilities { ProviderCapabilities() }
    func checkModelName(_ name: String) throws {}
    func stream(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply { throw NotAsked() }
    func reply(to request: ChatRequest, model: String, handlers: StreamHandlers) throws -> ChatReply { throw NotAsked() }
    func countTokens(_ request: ChatRequest, model: String, handlers: StreamHandlers) throws -> Int { tokens }
    func chatModels(handlers: StreamHandlers) throws -> [ChatModel] { [] }
    func modelFacts(_ name: String, handlers: StreamHandlers) throws -> ChatModel { ChatModel(name: name, outputTokenLimit: 100) }
}

/// The spend guard's rules: money as shown, the unusual-day rule, and the budget checked
/// before a request with the settings, the key and the vault given as values.
@Suite struct SpendGuardTests {
    @Test func moneyShowsCentsOrFourPlacesBelowTenCents() {
        #expect(SpendGuard.money(2, currency: "USD") == "$2.00")
        #expect(SpendGuard.money(0.0101, currency: "USD") == "$0.0101")
        #expect(SpendGuard.money(0, currency: "USD") == "$0.00")
        #expect(SpendGuard.money(1234.567, currency: "EUR") == "1234.57 EUR")
        #expect(SpendGuard.money(0.00004, currency: "USD") == "$0.0000")
    }

    @Test func aDayIsUnusualPastThreeTimesTheMedianOfTheThirtyBefore() {
        var daily: [UsageDay: Double] = [:]
        // Two days of history are not enough to judge.
        daily[UsageDay(number: 100)] = 1
        daily[UsageDay(number: 101)] = 1
        daily[UsageDay(number: 102)] = 9
        #expect(SpendGuard.unusualDays(daily, from: UsageDay(number: 0)).isEmpty)
        daily[UsageDay(number: 103)] = 1
        daily[UsageDay(number: 104)] = 4
        // Day 104: the median of 1, 1, 9, 1 is 1, and 4 > 3.
        #expect(SpendGuard.unusualDays(daily, from: UsageDay(number: 0)) == [UsageDay(number: 104)])
        #expect(SpendGuard.usualDay(daily, before: UsageDay(number: 104)) == 1)
        // Days more than 30 back do not count.
        #expect(SpendGuard.usualDay(daily, before: UsageDay(number: 140)) == nil)
        #expect(SpendGuard.unusualDays(daily, from: UsageDay(number: 105)).isEmpty)
    }

    let folder = TemporaryFolder("spend")
    let reporter = HeardReporter()
    /// One dollar per million prompt tokens, two per million reply tokens.
    let request = ChatRequest(messages: [ChatMessage(role: .user, parts: [.text("hi")])], options: GenerationOptions(maxOutputTokens: 10))

    private func guardFor(vault: FakeBudgetVault, fromVault: Bool = true, overBudget: Bool = false) throws -> SpendGuard {
        let history = HistoryStore(stateDirectory: folder.path, vaultPath: folder.appending("vault"))
        _ = try TrustedFolder.create(history.folder)
        let settings = try Settings.resolve(SettingLayers(environment: ["GEMVAULT_PRICES": "test-model=1/2"]))
        return try SpendGuard(keyName: "work", fromVault: fromVault, key: SecretBytes(utf8: "AQ.test-key"), settings: settings, vault: vault,
                              history: history, stateHome: folder.path, cacheHome: folder.path, overBudget: overBudget, reporter: reporter)
    }

    @Test func aRequestThatWouldPassTheKeysBudgetIsRefusedAndOneNearItIsWarnedOf() throws {
        let spending = try guardFor(vault: FakeBudgetVault(settings: ["budget_daily.work": "0.5"]))
        expectError(SpendingError.self, { try spending.check(request, model: "test-model", provider: CountingProvider(tokens: 1_000_000)) }, where: {
            guard case .refused(let message, let hint) = $0 else { return false }
            return message.hasPrefix("not sent: this request could take key 'work' past its daily budget: spent $0.00 of $0.50 today (UTC)")
                && hint == "lower the reply allowance (--max-output-tokens), or raise the budget ('gemvault key budget work --daily AMOUNT'); or pass --over-budget to send it anyway"
        })
        try spending.check(request, model: "test-model", provider: CountingProvider(tokens: 450_000))
        #expect(reporter.warnings.contains { $0.hasPrefix("key 'work' is at 90% of its daily budget") })
        try spending.check(request, model: "test-model", provider: CountingProvider(tokens: 1000))
        #expect(reporter.warnings.count == 1)
    }

    @Test func overBudgetSendsAnywayAndSaysWhy() throws {
        let spending = try guardFor(vault: FakeBudgetVault(settings: ["budget_daily.work": "0.5"]), overBudget: true)
        try spending.check(request, model: "test-model", provider: CountingProvider(tokens: 1_000_000))
        #expect(reporter.warnings.first?.hasPrefix("sent anyway (--over-budget): this request could take key 'work' past its daily budget") == true)
    }

    /// A key from elsewhere, while the vault that keeps a budget for every key is locked: the
    /// check cannot read the budget, so the request is refused (fail closed).
    @Test func aBudgetALockedVaultKeepsForEveryKeyFailsClosed() throws {
        let history = HistoryStore(stateDirectory: folder.path, vaultPath: folder.appending("vault"))
        _ = try TrustedFolder.create(history.folder)
        SpendGuard.markVaultWideBudget(["budget_daily": "1"], BudgetMarks(history: history))
        let spending = try guardFor(vault: FakeBudgetVault(settings: nil), fromVault: false)
        expectError(SpendingError.self, { try spending.check(request, model: "test-model", provider: CountingProvider(tokens: 1)) }, where: {
            $0 == .refused("not sent: the vault keeps a budget for every key (budget_daily or budget_monthly), which cannot be read while it is locked",
                           hint: "unlock a session ('gemvault unlock') so the budget is checked; or pass --over-budget to send it anyway")
        })
    }

    @Test func anUnusablePricesSettingIsAUsageError() throws {
        let settings = try Settings.resolve(SettingLayers(environment: ["GEMVAULT_PRICES": folder.appending("missing.json")]))
        #expect(throws: SpendingError.unusablePrices("the prices file \(folder.appending("missing.json")) does not exist", hint: "fix the 'prices' setting")) {
            try SpendGuard.prices(settings)
        }
    }
}
