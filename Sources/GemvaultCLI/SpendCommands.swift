import Conversations
import Rendering
import Settings
import Spending
import SystemIO
import TerminalIO
import VaultCore

let spendCommands: [CommandSpec] = [
    CommandSpec(path: ["key", "usage"], arguments: "[NAME]", argumentRange: 0...1,
                summary: "tokens and estimated cost by key, model and day, from the usage ledger",
                options: [.days, .json],
                details: """
                Every reply of chat and ask adds its tokens (prompt, cached, tool use, answer, thinking) to an encrypted ledger; this reads it with the vault (a session or the passphrase). Costs come from the price table (the 'prices' setting, else the built-in one, dated): an estimate, not Google's bill. A key used elsewhere (a leaked copy) spends nothing here. Docs/usage.md.
                """,
                run: SpendCommand.usage),
    CommandSpec(path: ["key", "budget"], arguments: "NAME", argumentRange: 1...1,
                summary: "show or set what a key may spend a day and a month",
                options: [.daily, .monthly],
                details: """
                Budgets are in the price table's currency and count UTC days and months. Before each request, chat and ask add an estimate (countTokens of the whole request; for the reply max_output_tokens, else the model's output limit capped by budget_reply_estimate, 8192; plus a thinking budget) to what the key spent: past a budget the request is refused with exit 6 (--over-budget sends it anyway); at 80% a warning. Under a budget a request that cannot be checked (a model without a price, a ledger that cannot be read, no estimate) is refused too. A key's own budget wins over the budget_daily and budget_monthly settings, and covers the same key reached through the environment, a key file or key_command. Docs/usage.md.
                """,
                run: SpendCommand.budget),
]

enum SpendCommand {
    typealias Report = UsageReport

    static func usage(_ call: Invocation) throws {
        let days: Int
        if let text = call.value(.days) {
            guard let number = Int(text), (1...3660).contains(number) else { throw UsageError("--days takes a number of days from 1 to 3660, not '\(text)'", command: call.command) }
            days = number
        } else {
            days = 30
        }
        let context = call.context
        let vaultSettings = try context.vault.settings()
        let settings = try context.keyResolver(call).settings(vaultSettings: vaultSettings)
        let prices = try SpendGuard.prices(settings)
        let keys = try context.historyKeys()
        let (summary, notes) = try UsageLedger(history: context.history).read(with: keys, now: Clock.now())
        notes.forEach { Console.warning($0) }
        let report = UsageReport(summary, notes: notes, prices: prices, settings: settings, vaultSettings: vaultSettings, days: days,
                                 key: call.positionals.first.map(UsageLedger.storedName), now: Clock.now())
        if call.flag(.json) { return try Output.json(report, schema: .keyUsage) }
        try Console.out(text(report, columns: Output.windowColumns()))
    }

    /// The report; on a terminal `columns` wide, the table and its lines fitted to the window.
    static func text(_ report: Report, columns: Int? = nil) -> String {
        func money(_ amount: Double?) -> String { amount.map { SpendGuard.money($0, currency: report.currency) } ?? "no price" }
        guard !report.rows.isEmpty || !report.keys.isEmpty else {
            return "no usage in the last \(report.days) day\(report.days == 1 ? "" : "s")\n"
        }
        var table = [["DAY", "KEY", "MODEL", "REQUESTS", "PROMPT", "CACHED", "TOOLS", "OUTPUT", "THINKING", "SEARCHES", "COST"]]
        for row in report.rows {
            table.append([row.day, row.key, row.model, "\(row.requests)", "\(row.promptTokens)", "\(row.cachedTokens)", "\(row.toolUseTokens)",
                          "\(row.outputTokens)", "\(row.thoughtsTokens)", "\(row.searchQueries)", money(row.cost)])
        }
        var text = Output.table(table.map { $0.map(EscapeNeutralizer.neutralize) }, columns: columns)
        text += "\n"
        for key in report.keys {
            let searches = key.searchQueries > 0 ? ", \(key.searchQueries) search quer\(key.searchQueries == 1 ? "y" : "ies")" : ""
            var line = "\(EscapeNeutralizer.neutralize(key.key)): \(key.tokens) tokens\(searches), \(money(key.cost)) in \(report.days) days; today \(money(key.spentToday))"
            if let daily = key.budgetDaily { line += " of \(money(daily))" }
            line += ", this month \(money(key.spentThisMonth))"
            if let monthly = key.budgetMonthly { line += " of \(money(monthly))" }
            if !key.unpriced.isEmpty { line += " (no price for \(key.unpriced.map(EscapeNeutralizer.neutralize).joined(separator: ", ")): not counted)" }
            text += DisplayWidth.wrapped(line, width: columns, indent: 2) + "\n"
            for day in key.unusualDays { text += "  \(day): more than 3× the key's usual day\n" }
        }
        return text + DisplayWidth.wrapped("Costs are estimates from \(report.prices) (\(report.currency)); Google's bill is the reference.", width: columns) + "\n"
    }

    static func budget(_ call: Invocation) throws {
        let name = call.positionals[0]
        let context = call.context
        let names = SpendGuard.budgetSettingNames(name)
        let changes = try [(call.value(.daily), names.daily, "--daily"), (call.value(.monthly), names.monthly, "--monthly")].compactMap { value, setting, flag -> (String, String?)? in
            guard let value else { return nil }
            if value == "none" { return (setting, nil) }
            guard let amount = Double(value), amount.isFinite, (0...1_000_000).contains(amount) else {
                throw UsageError("\(flag) takes an amount from 0 to 1000000 (in the price table's currency), or 'none', not '\(value)'", command: call.command)
            }
            return (setting, String(amount))
        }
        let identity = name.hasPrefix("google:") && name.count > 7
        guard try identity || context.vault.keySummaries().contains(where: { $0.name == name }) else {
            throw CommandFailure(.failure, "there is no key '\(name)' in the vault", hint: "'gemvault key list' shows the keys")
        }
        for (setting, value) in changes { try context.vault.apply(.setting(name: setting, value: value)) }
        let vaultSettings = try context.vault.settings()
        let settings = try context.keyResolver(call).settings(vaultSettings: vaultSettings)
        let budget = SpendGuard.budget(for: name, settings: settings, vaultSettings: vaultSettings)
        let prices = try SpendGuard.prices(settings)
        func shown(_ amount: Double?) -> String { amount.map { SpendGuard.money($0, currency: prices.currency) } ?? "none" }
        try Console.out("\(name): daily \(shown(budget.daily)), monthly \(shown(budget.monthly))\n")
        if !changes.isEmpty && !identity { markBudgeted(name, SpendGuard.budgetedNames(vaultSettings).contains(name), context) }
        if budget.isSet && prices.price(of: settings[.model]) == nil {
            Console.warning("the model '\(settings[.model])' has no price, so every request of key '\(name)' with it will be refused while the budget is set")
            Console.hint("add its price: gemvault config set prices '\(settings[.model])=INPUT/OUTPUT' (per million tokens), or choose a priced model")
        }
    }

    /// Notes (by its meter's id) whether the key has a budget kept in the vault, so that the
    /// same key reached while the vault is locked is refused rather than sent unchecked.
    private static func markBudgeted(_ name: String, _ budgeted: Bool, _ context: Context) {
        do {
            guard let stored = try context.vault.key(name, markUsed: false) else { return }
            try BudgetMarks(history: context.history).set(try KeyMeter(stateDirectory: context.paths.stateHome, key: stored.secret).id, budgeted: budgeted)
        } catch {
            Console.warning("the budget of key '\(name)' is kept, but not noted for when the vault is locked: \(error)")
        }
    }
}
