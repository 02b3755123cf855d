import Rendering
import Settings
import Spending
import SystemIO
import TerminalIO

let priceCommands: [CommandSpec] = [
    CommandSpec(path: ["prices"], arguments: "", argumentRange: 0...0,
                summary: "the price table in use: each model's periods, where each price comes from and when it stops",
                options: [.json],
                details: """
                The 'prices' setting's table (entries or a JSON file), else the built-in one: US dollars per million tokens, paid tier, \
                Standard service tier, with the source and date of each row. A turn is priced at the period of its own UTC day, as the \
                model that ran (the reply's modelVersion). Flex and Batch cost half, Priority 1.8 times; Google Search queries past \
                search_free_queries a month cost the SEARCH price per 1,000. Vault settings are read from an unlocked session. Docs/usage.md.
                """,
                run: PriceCommand.prices),
]

enum PriceCommand {
    struct Row: Encodable {
        let model: String
        @Nullable var from: String?
        /// The last day the price holds; null: until further notice.
        @Nullable var to: String?
        let input: Double
        let output: Double
        let cached: Double
        @Nullable var searchPer1000: Double?
        /// GA, preview, released, retired or alias, when gemvault knows the model.
        @Nullable var stage: String?
        /// For a retired id or an alias: the model that serves its requests.
        @Nullable var servedBy: String?
        let source: String
    }

    struct Report: Encodable {
        let currency: String
        let prices: String
        let searchFreeQueries: Int
        let tiers: [String: Double]
        let rows: [Row]
    }

    static func prices(_ call: Invocation) throws {
        let context = call.context
        let vaultSettings = try? context.vault.sessionSettings()
        let settings = try context.keyResolver(call).settings(vaultSettings: vaultSettings)
        let table = try SpendGuard.prices(settings)
        let report = Report(currency: table.currency, prices: table.origin, searchFreeQueries: table.searchFreeQueries,
                            tiers: Dictionary(uniqueKeysWithValues: ServiceTier.allCases.map { ($0.rawValue, $0.factor) }), rows: rows(table))
        if call.flag(.json) { return try Output.json(report, schema: .prices) }
        try Console.out(text(report, columns: Output.windowColumns()))
    }

    static func rows(_ table: PriceTable) -> [Row] {
        table.modelNames.flatMap { name in
            let facts = ProviderChoice.current.facts(name)
            return (table.periods[name] ?? []).map { period in
                Row(model: name, from: period.from?.text, to: period.through?.text, input: period.price.input, output: period.price.output,
                    cached: period.price.cached, searchPer1000: period.price.search, stage: facts?.stage.rawValue,
                    servedBy: facts?.servedBy, source: period.source)
            }
        }
    }

    static func text(_ report: Report, columns: Int?) -> String {
        func amount(_ value: Double?) -> String { value.map { SpendGuard.money($0, currency: report.currency) } ?? "-" }
        var table = [["MODEL", "FROM", "UNTIL", "INPUT", "OUTPUT", "CACHED", "SEARCH/1K", "STAGE", "SOURCE"]]
        for row in report.rows {
            let stage = row.servedBy.map { "\(row.stage ?? "retired") → \($0)" } ?? row.stage ?? "-"
            table.append([row.model, row.from ?? "-", row.to ?? "-", amount(row.input), amount(row.output), amount(row.cached),
                          amount(row.searchPer1000), stage, row.source].map(EscapeNeutralizer.neutralize))
        }
        var text = Output.table(table, columns: columns) + "\n"
        text += DisplayWidth.wrapped("Prices per million tokens in \(report.currency), from \(report.prices); UNTIL is the last UTC day a price holds. "
            + "Flex and Batch: half; Priority: 1.8 times. Search queries: \(report.searchFreeQueries) free a month per key (search_free_queries), then SEARCH/1K. "
            + "Estimates: Google's bill is the reference.", width: columns) + "\n"
        return text
    }
}
