import Conversations
import FoundationEssentials
import GeminiClient
import KeyResolution
import Rendering
import Settings
import Spending
import SystemIO
import TerminalIO
import VaultCore

/// What a key spends, for `ask` and `chat`: each reply's usage goes into the ledger, and
/// before a request the key's budgets are checked against the ledger and an estimate.
final class SpendGuard {
    let keyName: String
    /// Whether the key has a name in the vault, where `key budget` keeps its own budgets.
    private let keyIsInVault: Bool
    let prices: PriceTable
    private let ledger: UsageLedger
    private let context: Context
    private let budget: Budget
    /// The keys that open the ledger, when the vault was open to this command without a prompt.
    private let ledgerKeys: HistoryKeys?
    private let overBudget: Bool
    /// Said once per command: a budget that could not be checked, an unusual day.
    private var warned: Set<String> = []
    /// The key's search queries this month, once the ledger was read; counted on with each reply.
    private var searchQueriesThisMonth: Int?
    /// This conversation's spending, for the chat's status line.
    private(set) var conversationTokens = 0
    private(set) var conversationCost = 0.0

    /// A reply without a stated limit is estimated at this many output tokens.
    static let defaultReplyEstimate = 8192
    /// A grounded request is estimated at this many search queries (Google does not say ahead).
    static let searchQueriesEstimate = 5
    static let warningShare = 0.8
    /// Before a request the summary is written back only once this many records were merged:
    /// its fsync would otherwise cost every turn a millisecond or two.
    static let recordsBeforeSaving = 64
    /// A day's spending this many times the key's usual one is worth a warning.
    static let unusualFactor = 3.0

    struct Budget: Equatable {
        var daily: Double?
        var monthly: Double?
        var isSet: Bool { daily != nil || monthly != nil }
    }

    init(context: Context, settings: Settings, keySource: KeySource, overBudget: Bool) throws {
        self.context = context
        self.keyName = UsageLedger.storedName(Self.ledgerName(keySource))
        self.keyIsInVault = if case .vault = keySource { true } else { false }
        self.prices = try Self.prices(settings)
        self.ledger = UsageLedger(history: context.history)
        self.overBudget = overBudget
        // Asked once per command (two questions to a session): the budgets and the ledger's keys.
        let vault = try? context.vault.settingsAndConversationKeysWithoutPrompt()
        budget = Self.budget(for: keyName, settings: settings, vaultSettings: vault?.settings ?? [:])
        ledgerKeys = vault.flatMap { try? HistoryKeys(seeds: $0.conversationKeys) }
    }

    /// The name a key has in the ledger: its vault name, else where it came from.
    static func ledgerName(_ source: KeySource) -> String {
        switch source {
        case .vault(_, let name): name
        case .environment(let variable): "$" + variable
        case .keyFile(let path), .keyFileFlag(let path): "file:" + path
        case .systemdCredential(let path): "systemd:" + (path.split(separator: "/").last.map(String.init) ?? path)
        case .keyCommand: "key_command"
        case .secretManager(let secret, _): secret
        }
    }

    /// The vault settings that hold one key's own budgets (`key budget`).
    static func budgetSettingNames(_ key: String) -> (daily: String, monthly: String) {
        (Setting.budgetDaily.name + "." + key, Setting.budgetMonthly.name + "." + key)
    }

    static func budget(for key: String, settings: Settings, vaultSettings: [String: String]) -> Budget {
        let names = budgetSettingNames(key)
        return Budget(daily: vaultSettings[names.daily].flatMap(Double.init) ?? settings[.budgetDaily],
                      monthly: vaultSettings[names.monthly].flatMap(Double.init) ?? settings[.budgetMonthly])
    }

    /// The `prices` setting's table: entries, or a JSON file named by its path; the built-in one
    /// otherwise; with the `search_free_queries` allowance.
    static func prices(_ settings: Settings) throws -> PriceTable {
        var table = try pricesWithoutAllowance(settings)
        table.searchFreeQueries = settings[.searchFreeQueries]
        return table
    }

    private static func pricesWithoutAllowance(_ settings: Settings) throws -> PriceTable {
        guard let value = settings[.prices] else { return .builtIn }
        let origin = "the prices setting"
        do {
            if value.hasPrefix("/") || value.hasPrefix("~") {
                let path = ProcessIdentity.expandingTilde(value)
                guard let file = try TrustedFile.open(path, requirement: .configuration) else {
                    throw CommandFailure(.usage, "the prices file \(path) does not exist", hint: "fix the 'prices' setting")
                }
                return try PriceTable.parse(json: try file.readAll(limit: 1 << 20), origin: "prices file \(path)")
            }
            return try PriceTable.parse(setting: value, origin: origin)
        } catch let error as PriceTable.ParseError {
            guard case .invalid(let reason) = error else { throw error }
            throw CommandFailure(.usage, "the 'prices' setting cannot be used: \(reason)", hint: "see 'gemvault help config' or Docs/usage.md")
        }
    }

    // MARK: Before a request

    /// Refuses (exit 6) a request that would take the key past a budget, unless --over-budget;
    /// warns at 80 % and on a day far above the key's usual. Needs the vault without a prompt
    /// (the one this command opened, or a session); counts the prompt's tokens only under a budget.
    func check(_ request: ChatRequest, model: String, provider: any ChatProvider) throws {
        guard let keys = ledgerKeys else {
            if budget.isSet { warnOnce("the budget of key '\(keyName)' was not checked: the usage ledger opens only with the vault (unlock a session with 'gemvault unlock')") }
            return
        }
        let now = Clock.now()
        let summary: UsageSummary
        do {
            let (read, notes) = try ledger.read(with: keys, now: now, saveFrom: Self.recordsBeforeSaving)
            notes.forEach { warnOnce($0) }
            summary = read
        } catch {
            // A ledger that cannot be read (refused, a full disk) is reported; it stops no request.
            warnOnce("the usage ledger could not be read (\(error))\(budget.isSet ? ": the budget of key '\(keyName)' was not checked" : "")")
            return
        }
        let today = UsageDay(seconds: now)
        searchQueriesThisMonth = summary.searchQueries(key: keyName, month: today)
        let daily = summary.dailyCosts(prices: prices).costs[keyName] ?? [:]
        warnIfUnusual(daily, today: today)
        guard budget.isSet else { return }
        guard let price = prices.price(of: model) else {
            warnOnce("the budget of key '\(keyName)' was not checked: there is no price for model '\(model)' (add one with the 'prices' setting)")
            return
        }
        let spentToday = daily[today] ?? 0
        let spentMonth = daily.filter { $0.key >= today.monthStart && $0.key <= today }.values.reduce(0, +)
        let promptTokens = try provider.countTokens(request, model: model, handlers: StreamHandlers())
        let replyTokens = request.options.maxOutputTokens ?? Self.defaultReplyEstimate
        let estimate = (Double(promptTokens) * price.input + Double(replyTokens) * price.output) / 1_000_000
            + (request.options.tools.search ? prices.searchCost(Self.searchQueriesEstimate, model: model, on: today, usedBefore: searchQueriesThisMonth ?? 0) ?? 0 : 0)
        for (limit, spent, period, flag) in [(budget.daily, spentToday, "daily", "--daily"), (budget.monthly, spentMonth, "monthly", "--monthly")] {
            guard let limit else { continue }
            let figures = "spent \(money(spent)) of \(money(limit)) \(period == "daily" ? "today (UTC)" : "this month (UTC)"); this request may cost up to \(money(estimate)) (\(promptTokens) prompt tokens counted, \(replyTokens) reply tokens allowed)"
            if spent + estimate > limit {
                if overBudget {
                    Console.warning("past the \(period) budget of key '\(keyName)' (--over-budget): \(figures)")
                    continue
                }
                throw CommandFailure(.apiRefused, "not sent: this request could take key '\(keyName)' past its \(period) budget: \(figures)",
                                     hint: "pass --over-budget to send it anyway, or raise the budget (" + (keyIsInVault ? "'gemvault key budget \(keyName) \(flag) AMOUNT'" : "the \(period == "daily" ? "budget_daily" : "budget_monthly") setting") + ")")
            }
            if spent + estimate >= limit * Self.warningShare {
                warnOnce("key '\(keyName)' is at \(Int((100 * (spent + estimate) / max(limit, 1e-9)).rounded()))% of its \(period) budget: \(figures)")
            }
        }
    }

    /// A day more than 3× the median of the key's other days with spending in the last 30.
    private func warnIfUnusual(_ daily: [UsageDay: Double], today: UsageDay) {
        guard let median = Self.usualDay(daily, before: today), let spent = daily[today], spent > Self.unusualFactor * median else { return }
        warnOnce("key '\(keyName)' spent \(money(spent)) today, more than \(Int(Self.unusualFactor))× its usual day (\(money(median)), the median of the last 30 days): check what uses it")
    }

    /// The median of the days with spending among the 30 before `day`; nil with fewer than 3.
    static func usualDay(_ daily: [UsageDay: Double], before day: UsageDay) -> Double? {
        median(daily.filter { $0.key < day && $0.key.number >= day.number - 30 && $0.value > 0 }.values.sorted())
    }

    /// The days of `daily` from `first` on that spent more than 3× their usual day, in order
    /// (one pass over the days, each looking back 30 days).
    static func unusualDays(_ daily: [UsageDay: Double], from first: UsageDay) -> [UsageDay] {
        let days = daily.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        var found: [UsageDay] = []
        var windowStart = 0
        for (index, (day, spent)) in days.enumerated() where day >= first {
            while days[windowStart].key.number < day.number - 30 { windowStart += 1 }
            if let usual = median(days[windowStart..<index].map(\.value).sorted()), spent > unusualFactor * usual { found.append(day) }
        }
        return found
    }

    private static func median(_ sorted: [Double]) -> Double? {
        guard sorted.count >= 3 else { return nil }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    // MARK: After a reply

    /// The model a reply is priced and filed as: its modelVersion (the model that ran), else the
    /// one asked for, with the service tier that served it (`gemini-3.8-flash:flex`). A reply
    /// from another model than the one asked for is said once.
    func servedModel(_ reply: ChatReply, requested: String) -> String {
        var model = requested
        if let version = reply.modelVersion?.trimmedWhitespace, !version.isEmpty {
            let served = version.hasPrefix("models/") ? String(version.dropFirst(7)) : version
            if ModelCatalog.isRouted(requested: requested, served: served) {
                noteOnce(EscapeNeutralizer.neutralize(ModelCatalog.routingNotice(requested: requested, served: served)))
            }
            model = served
        }
        return ServiceTier(header: reply.serviceTier).ledgerModel(model)
    }

    /// Records `reply` as the model that ran, with its search queries; returns its estimated cost.
    @discardableResult
    func record(_ reply: ChatReply, requested: String) -> Double? {
        record(reply.usage, model: servedModel(reply, requested: requested), searchQueries: reply.searchQueryCount)
    }

    /// Adds the reply's usage to the ledger (sealed, no unlock needed) and to this
    /// conversation's count; returns its estimated cost when the model has a price: its tokens
    /// at today's period, and its search queries past the month's free ones (all of them when
    /// the ledger could not be read to count the month's).
    @discardableResult
    func record(_ usage: TokenUsage?, model: String, searchQueries: Int = 0) -> Double? {
        guard let usage else { return nil }
        let counts = UsageCounts(usage, searchQueries: searchQueries)
        let today = UsageDay(seconds: Clock.now())
        let searchCost = prices.searchCost(counts.searchQueries, model: model, on: today, usedBefore: searchQueriesThisMonth ?? Int.max / 2)
        searchQueriesThisMonth = searchQueriesThisMonth.map { $0 + counts.searchQueries }
        let cost = prices.cost(counts, model: model, on: today).map { $0 + (searchCost ?? 0) }
        conversationTokens = min(conversationTokens + counts.total, UsageCounts.limit)
        conversationCost += cost ?? 0
        do {
            guard let recipient = try context.history.recipient()?.publicKey else {
                // Without a vault there is no ledger to keep, and nothing worth a word.
                if context.vault.exists { warnOnce("this reply's usage is not in the ledger: the vault was never opened here ('gemvault unlock' once)") }
                return cost
            }
            try ledger.append(UsageLedger.Entry(key: keyName, model: model, day: UsageDay(seconds: Clock.now()), counts: counts), recipient: recipient)
        } catch {
            warnOnce("this reply's usage is not in the ledger: \(error)")
        }
        return cost
    }

    func money(_ amount: Double) -> String { Self.money(amount, currency: prices.currency) }

    /// `$0.0123` for dollars, `1.50 EUR` for another currency: cents, or four places below a cent.
    static func money(_ amount: Double, currency: String) -> String {
        guard amount.isFinite, abs(amount) < 1e12 else { return "\(amount) \(currency)" }
        let places = amount != 0 && abs(amount) < 0.1 ? 4 : 2
        let scale = places == 4 ? 10_000.0 : 100.0
        let units = Int((abs(amount) * scale).rounded())
        let whole = units / Int(scale), fraction = String(units % Int(scale))
        let text = (amount < 0 ? "-" : "") + "\(whole)." + String(repeating: "0", count: places - fraction.count) + fraction
        return currency == "USD" ? "$" + text : text + " " + currency
    }

    private func noteOnce(_ message: String) {
        guard warned.insert(message).inserted else { return }
        Console.note(message)
    }

    private func warnOnce(_ message: String) {
        guard warned.insert(message).inserted else { return }
        Console.warning(message)
    }
}
