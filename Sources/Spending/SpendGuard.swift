import Conversations
import Settings
import SystemIO
import VaultCore

/// What a spend check asks of the vault, never with a prompt: supplied by the command.
public protocol BudgetVault {
    /// Whether there is a vault at all.
    var exists: Bool { get }
    /// The vault's settings and conversation keys when it is open or a session answers; nil while it is locked.
    func settingsAndConversationKeys() -> (settings: [String: String], conversationKeys: [SecretBytes])?
    /// The vault's key `name`, through a session only; nil without one or without the key.
    func sessionKey(_ name: String) -> SecretBytes?
}

/// How a spend check speaks: the command shows its notes and warnings, and words an error
/// (a failed token count) as it would word it alone.
public protocol SpendReporter {
    func note(_ text: String)
    func warning(_ text: String)
    /// The error's message, and whether it was an interruption (which stops the command).
    func describe(_ error: any Error) -> (message: String, interrupted: Bool)
}

/// A request a budget stopped (exit 6), or a `prices` setting that cannot be used (exit 64).
public enum SpendingError: Error, Equatable, Sendable {
    case refused(String, hint: String)
    case unusablePrices(String, hint: String)
}

/// What a key spends, for `ask` and `chat`: each reply's usage goes into the ledger and the
/// key's meter, and before a request the key's budgets are checked against them and an
/// estimate. Under a budget it fails closed: a request that cannot be checked (no price, a
/// ledger or meter that cannot be read, no estimate, a budget locked in the vault) is refused.
public final class SpendGuard {
    /// The key's name in the ledger: its vault name (also when it came from elsewhere and the
    /// vault holds the same key under a budget), else where it came from.
    public private(set) var keyName: String
    private let isFromVault: Bool
    /// The key is a Google identity's token (`auth` = `google`), filed as `google:PRINCIPAL`.
    private let isGoogleIdentity: Bool
    private let key: SecretBytes
    public let prices: PriceTable
    private let ledger: UsageLedger
    private let vault: any BudgetVault
    private let history: HistoryStore
    private let cacheHome: String
    private let reporter: any SpendReporter
    private let settings: Settings
    private let meter: KeyMeter?
    private let marks: BudgetMarks
    private let overBudget: Bool
    /// The chat's /over-budget: the next request goes past the check once.
    public var overBudgetOnce = false
    /// How to send a refused request anyway, said with each refusal.
    public var overBudgetAdvice = "pass --over-budget to send it anyway"
    /// Said once per command: what could not be checked, an unusual day.
    private var warned: Set<String> = []
    /// The vault keys already compared with this one (name: the same key).
    private var compared: [String: Bool] = [:]
    /// The key's search queries this month, once the ledger was read; counted on with each reply.
    private var searchQueriesThisMonth: Int?
    /// This conversation's spending, for the chat's status line.
    public private(set) var conversationTokens = 0
    public private(set) var conversationCost = 0.0

    static let warningShare = 0.8
    /// Before a request the summary is written back only once this many records were merged:
    /// its fsync would otherwise cost every turn a millisecond or two.
    static let recordsBeforeSaving = 64
    /// A day's spending this many times the key's usual one is worth a warning.
    static let unusualFactor = 3.0
    /// A grounded request is estimated at this many search queries (Google does not say ahead).
    static let searchQueriesEstimate = 5

    public struct Budget: Equatable, Sendable {
        public var daily: Double?
        public var monthly: Double?
        public var isSet: Bool { daily != nil || monthly != nil }
    }

    /// What a check found out about the key's budget.
    struct Lookup {
        var budget: Budget
        /// The vault's keys that open the ledger, when the vault is open without a prompt.
        var ledgerKeys: HistoryKeys?
        /// Why a budget the vault keeps for this key could not be read.
        var locked: String?
        var inVault: Bool
    }

    /// `keyName` is the key's name in the ledger (its vault name, else where it came from);
    /// `stateHome` holds the key's meter and `cacheHome` the models' output limits.
    public init(keyName: String, fromVault: Bool, key: SecretBytes, settings: Settings, vault: any BudgetVault, history: HistoryStore,
                stateHome: String, cacheHome: String, overBudget: Bool, reporter: any SpendReporter) throws {
        self.settings = settings
        isFromVault = fromVault
        isGoogleIdentity = keyName.hasPrefix("google:")
        self.key = key
        self.keyName = UsageLedger.storedName(keyName)
        prices = try Self.prices(settings)
        ledger = UsageLedger(history: history)
        meter = try? KeyMeter(stateDirectory: stateHome, key: key)
        marks = BudgetMarks(history: history)
        self.vault = vault
        self.history = history
        self.cacheHome = cacheHome
        self.reporter = reporter
        self.overBudget = overBudget
    }

    /// The vault settings that hold one key's own budgets (`key budget`).
    public static func budgetSettingNames(_ key: String) -> (daily: String, monthly: String) {
        // A Google identity's name (google:SA@P.iam…) in the letters a setting name takes.
        let key = key.hasPrefix("google:") ? "google." + key.dropFirst(7).replacing("@", with: "_at_").replacing("/", with: ".") : key
        return (Setting.budgetDaily.name + "." + key, Setting.budgetMonthly.name + "." + key)
    }

    public static func budget(for key: String, settings: Settings, vaultSettings: [String: String]) -> Budget {
        let names = budgetSettingNames(key)
        return Budget(daily: vaultSettings[names.daily].flatMap(Double.init) ?? settings[.budgetDaily],
                      monthly: vaultSettings[names.monthly].flatMap(Double.init) ?? settings[.budgetMonthly])
    }

    /// The names of the vault's keys with a budget of their own.
    public static func budgetedNames(_ vaultSettings: [String: String]) -> Set<String> {
        let prefixes = [Setting.budgetDaily.name + ".", Setting.budgetMonthly.name + "."]
        return Set(vaultSettings.keys.compactMap { name in prefixes.first(where: name.hasPrefix).map { String(name.dropFirst($0.count)) } })
    }

    /// The `prices` setting's table: entries, or a JSON file named by its path; the built-in one
    /// otherwise; with the `search_free_queries` allowance.
    public static func prices(_ settings: Settings) throws -> PriceTable {
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
                    throw SpendingError.unusablePrices("the prices file \(path) does not exist", hint: "fix the 'prices' setting")
                }
                return try PriceTable.parse(json: try file.readAll(limit: 1 << 20), origin: "prices file \(path)")
            }
            return try PriceTable.parse(setting: value, origin: origin)
        } catch let error as PriceTable.ParseError {
            guard case .invalid(let reason) = error else { throw error }
            throw SpendingError.unusablePrices("the 'prices' setting cannot be used: \(reason)", hint: "see 'gemvault help config' or Docs/usage.md")
        }
    }

    // MARK: The budget, looked up before each request

    /// The key's budget as it is now (a budget raised in another terminal counts at the next
    /// request): the vault's own for the key's name, when the key came from the vault or the
    /// vault holds the same key under a budget; else the budget_daily and budget_monthly settings.
    func lookUp() -> Lookup {
        let vault = vault.settingsAndConversationKeys()
        let ledgerKeys = vault.flatMap { try? HistoryKeys(seeds: $0.conversationKeys) }
        guard let vaultSettings = vault?.settings else {
            // The vault is locked: a budget it keeps for this very key, or for every key (its marks say so), cannot be read.
            var locked: String?
            if !isFromVault && marks.contains(BudgetMarks.everyKey) {
                locked = "the vault keeps a budget for every key (budget_daily or budget_monthly), which cannot be read while it is locked"
            } else if !isFromVault, let meter, marks.contains(meter.id) {
                locked = "this key has a budget kept in the vault, which cannot be read while it is locked"
            }
            return Lookup(budget: Self.budget(for: keyName, settings: settings, vaultSettings: [:]), ledgerKeys: nil, locked: locked, inVault: isFromVault)
        }
        Self.markVaultWideBudget(vaultSettings, marks)
        if !isFromVault, let name = matchingVaultKey(Self.budgetedNames(vaultSettings)) { keyName = name }
        // A Google identity's budget is the vault's, under its ledger name (`key budget google:…`).
        let inVault = isFromVault || isGoogleIdentity || compared[keyName] == true
        let budget = Self.budget(for: keyName, settings: settings, vaultSettings: inVault ? vaultSettings : [:])
        if inVault, let meter, budget.isSet != marks.contains(meter.id) { try? marks.set(meter.id, budgeted: budget.isSet) }
        return Lookup(budget: budget, ledgerKeys: ledgerKeys, locked: nil, inVault: inVault)
    }

    /// After `name` changed in the vault: a budget setting notes again whether the vault's own
    /// settings hold a budget for every key.
    public static func vaultSettingChanged(_ name: String, _ marks: BudgetMarks, vaultSettings: () throws -> [String: String]) rethrows {
        if name.hasPrefix("budget_") { markVaultWideBudget(try vaultSettings(), marks) }
    }

    /// Notes whether the vault's own settings hold a budget for every key.
    public static func markVaultWideBudget(_ vaultSettings: [String: String], _ marks: BudgetMarks) {
        let wide = vaultSettings[Setting.budgetDaily.name] != nil || vaultSettings[Setting.budgetMonthly.name] != nil
        if wide != marks.contains(BudgetMarks.everyKey) { try? marks.set(BudgetMarks.everyKey, budgeted: wide) }
    }

    /// The budgeted vault key that is this key (compared by value, in constant time, through
    /// the session only: a check never asks for the passphrase).
    private func matchingVaultKey(_ names: Set<String>) -> String? {
        for name in names.sorted() {
            if compared[name] == nil {
                compared[name] = vault.sessionKey(name)?.isEqual(to: key) ?? false
            }
            if compared[name] == true { return name }
        }
        return nil
    }

    // MARK: Before a request

    /// Refuses (exit 6) a request that would take the key past a budget, or that cannot be
    /// checked under one, unless --over-budget; warns at 80 % and on a day far above the key's usual.
    public func check(_ request: ChatRequest, model: String, provider: any ChatProvider) throws {
        let now = Clock.now()
        let today = UsageDay(seconds: now)
        let lookup = lookUp()
        if let locked = lookup.locked {
            return try refuse(locked, fix: "unlock a session ('gemvault unlock') so the budget is checked")
        }
        let ledgerDaily: [UsageDay: Double]
        do {
            ledgerDaily = try readLedger(lookup.ledgerKeys, now: now)
        } catch {
            guard lookup.budget.isSet else {
                warnOnce("the usage ledger could not be read (\(error))")
                return
            }
            return try refuse("the usage ledger could not be read (\(error)), so the budget of key '\(keyName)' cannot be checked",
                              fix: "make the ledger readable again")
        }
        warnIfUnusual(ledgerDaily, today: today)
        guard lookup.budget.isSet else { return }
        guard let price = prices.price(of: model) else {
            return try refuse("there is no price for model '\(model)', so the budget of key '\(keyName)' cannot be checked",
                              fix: "add the model's price with the 'prices' setting (gemvault config set prices '\(model)=INPUT/OUTPUT'), or use a priced model")
        }
        let spent: (today: Double, month: Double)
        do {
            spent = try self.spent(ledgerDaily, today: today)
        } catch {
            return try refuse("\(error), so the budget of key '\(keyName)' cannot be checked",
                              fix: meter.map { "remove \($0.path) to start the key's count again from nothing" } ?? "")
        }
        let estimate: Estimate
        do {
            estimate = try self.estimate(request, model: model, price: price, provider: provider)
        } catch {
            let (message, interrupted) = reporter.describe(error)
            if interrupted { throw error }
            return try refuse("the cost of this request could not be estimated (counting its tokens failed: \(message)), so the budget of key '\(keyName)' cannot be checked",
                              fix: "try again once Google answers")
        }
        try compare(estimate, spent: spent, budget: lookup.budget, inVault: lookup.inVault)
    }

    /// The request's cost at most: its counted prompt, and the reply allowance at the output price.
    struct Estimate {
        var promptTokens: Int
        var reply: ReplyAllowance
        var cost: Double
    }

    private func estimate(_ request: ChatRequest, model: String, price: ModelPrice, provider: any ChatProvider) throws -> Estimate {
        let promptTokens = try provider.countTokens(request, model: model, handlers: StreamHandlers())
        let limit = request.options.maxOutputTokens != nil ? nil : ModelLimits(cacheDirectory: cacheHome).outputLimit(model, now: Clock.now()) {
            try provider.modelFacts(model, handlers: StreamHandlers()).outputTokenLimit
        }
        let reply = ReplyAllowance(options: request.options, outputLimit: limit, estimate: settings[.budgetReplyEstimate])
        let search = request.options.tools.search
            ? prices.searchCost(Self.searchQueriesEstimate, model: model, on: UsageDay(seconds: Clock.now()), usedBefore: searchQueriesThisMonth ?? 0) ?? 0 : 0
        return Estimate(promptTokens: promptTokens, reply: reply,
                        cost: (Double(promptTokens) * price.input + Double(reply.tokens) * price.output) / 1_000_000 + search)
    }

    private func compare(_ estimate: Estimate, spent: (today: Double, month: Double), budget: Budget, inVault: Bool) throws {
        for (limit, spent, period, flag) in [(budget.daily, spent.today, "daily", "--daily"), (budget.monthly, spent.month, "monthly", "--monthly")] {
            guard let limit else { continue }
            let figures = "spent \(money(spent)) of \(money(limit)) \(period == "daily" ? "today (UTC)" : "this month (UTC)"); this request may cost up to \(money(estimate.cost)) (\(estimate.promptTokens) prompt tokens counted, \(estimate.reply.tokens) reply tokens allowed: \(estimate.reply.origin))"
            if spent + estimate.cost > limit {
                let raise = inVault ? "'gemvault key budget \(keyName) \(flag) AMOUNT'" : "the \(period == "daily" ? "budget_daily" : "budget_monthly") setting"
                try refuse("this request could take key '\(keyName)' past its \(period) budget: \(figures)",
                           fix: "lower the reply allowance (--max-output-tokens), or raise the budget (\(raise))")
                continue
            }
            if spent + estimate.cost >= limit * Self.warningShare {
                warnOnce("key '\(keyName)' is at \(Int((100 * (spent + estimate.cost) / max(limit, 1e-9)).rounded()))% of its \(period) budget: \(figures)")
            }
        }
    }

    /// Refuses with `reason` and `fix`, or with --over-budget (or the chat's /over-budget) says it once and goes on.
    private func refuse(_ reason: String, fix: String) throws {
        if overBudget || overBudgetOnce {
            warnOnce("sent anyway (--over-budget): \(reason)")
            return
        }
        throw SpendingError.refused("not sent: \(reason)", hint: (fix.isEmpty ? "" : fix + "; or ") + overBudgetAdvice)
    }

    /// What the key spent by day in the vault's ledger (nothing without the vault).
    private func readLedger(_ keys: HistoryKeys?, now: Int64) throws -> [UsageDay: Double] {
        guard let keys else { return [:] }
        let (summary, notes) = try ledger.read(with: keys, now: now, saveFrom: Self.recordsBeforeSaving)
        notes.forEach { warnOnce($0) }
        searchQueriesThisMonth = summary.searchQueries(key: keyName, month: UsageDay(seconds: now))
        return summary.dailyCosts(prices: prices).costs[keyName] ?? [:]
    }

    /// Today's and this month's spending: the larger of the ledger's (the key's name, all its
    /// values) and the meter's (this value, from anywhere).
    private func spent(_ ledgerDaily: [UsageDay: Double], today: UsageDay) throws -> (today: Double, month: Double) {
        let ledgerMonth = ledgerDaily.filter { $0.key >= today.monthStart && $0.key <= today }.values.reduce(0, +)
        guard let meter else { return (ledgerDaily[today] ?? 0, ledgerMonth) }
        let metered = KeyMeter.spent(try meter.read(), on: today, prices: prices)
        return (max(ledgerDaily[today] ?? 0, metered.today), max(ledgerMonth, metered.month))
    }

    /// The chat's /budget: today's and this month's spending and the limits.
    public func report() -> String {
        let lookup = lookUp()
        let today = UsageDay(seconds: Clock.now())
        let ledgerDaily = (try? readLedger(lookup.ledgerKeys, now: Clock.now())) ?? [:]
        let spent: (today: Double, month: Double) = (try? self.spent(ledgerDaily, today: today)) ?? (0, 0)
        func limit(_ amount: Double?) -> String { amount.map { " of " + money($0) } ?? " (no budget)" }
        var text = "key '\(keyName)': today \(money(spent.today))\(limit(lookup.budget.daily)), this month \(money(spent.month))\(limit(lookup.budget.monthly)) (UTC)"
        if let locked = lookup.locked { text += "; \(locked)" }
        return text
    }

    // MARK: After a reply

    /// Adds the reply's usage to the ledger (sealed, no unlock needed), to the key's meter and
    /// to this conversation's count; returns its estimated cost when the model has a price: its
    /// tokens at today's period, and its search queries past the month's free ones (all of them
    /// when the ledger could not be read to count the month's).
    @discardableResult
    public func record(_ usage: TokenUsage?, model: String, searchQueries: Int = 0) -> Double? {
        guard let usage else { return nil }
        let counts = UsageCounts(usage, searchQueries: searchQueries)
        let day = UsageDay(seconds: Clock.now())
        let searchCost = prices.searchCost(counts.searchQueries, model: model, on: day, usedBefore: searchQueriesThisMonth ?? Int.max / 2)
        searchQueriesThisMonth = searchQueriesThisMonth.map { $0 + counts.searchQueries }
        let cost = prices.cost(counts, model: model, on: day).map { $0 + (searchCost ?? 0) }
        conversationTokens = min(conversationTokens + counts.total, UsageCounts.limit)
        conversationCost += cost ?? 0
        do { try meter?.add(model: model, day: day, counts: counts) } catch { warnOnce("this reply's usage is not in the key's meter: \(error)") }
        do {
            guard let recipient = try history.recipient()?.publicKey else {
                // Without a vault there is no ledger to keep, and nothing worth a word.
                if vault.exists { warnOnce("this reply's usage is not in the ledger: the vault was never opened here ('gemvault unlock' once)") }
                return cost
            }
            try ledger.append(UsageLedger.Entry(key: keyName, model: model, day: day, counts: counts), recipient: recipient)
        } catch {
            warnOnce("this reply's usage is not in the ledger: \(error)")
        }
        return cost
    }

    public func warnOnce(_ message: String) {
        guard warned.insert(message).inserted else { return }
        reporter.warning(message)
    }

    public func noteOnce(_ message: String) {
        guard warned.insert(message).inserted else { return }
        reporter.note(message)
    }
}
