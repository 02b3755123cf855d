import Testing
@testable import Spending

/// Prices: the built-in table, a model's name with a version suffix, the `prices` setting.
@Suite struct PriceTableTests {
    @Test func aModelIsPricedByTheLongestNameItStartsWith() throws {
        let table = PriceTable.builtIn
        #expect(table.price(of: "gemini-2.5-flash-lite-001") == ModelPrice(input: 0.10, output: 0.40))
        #expect(table.price(of: "models/gemini-2.5-flash") == ModelPrice(input: 0.30, output: 2.50))
        #expect(table.price(of: "gemini-3.1-pro-preview")?.output == 12.00)
        #expect(table.price(of: "gemini-2.5-flashy") == nil && table.price(of: "echo") == nil)
    }

    @Test func thinkingAndToolUseAreBilledAndCachedTokensAtTheirRate() throws {
        let table = PriceTable(currency: "USD", origin: "test", models: ["m": ModelPrice(input: 1, output: 10, cached: 0.5)])
        let counts = UsageCounts(requests: 1, prompt: 1_000_000, cached: 200_000, toolUse: 100_000, output: 300_000, thoughts: 200_000)
        // 800k uncached + 100k tool use at 1, 200k cached at 0.5, 500k output (answer and thinking) at 10.
        #expect(abs(try #require(table.cost(counts, model: "m")) - (0.9 + 0.1 + 5.0)) < 1e-9)
        #expect(table.cost(counts, model: "other") == nil)
    }

    @Test func theSettingReplacesNamedModelsAndKeepsTheRestInDollars() throws {
        let table = try PriceTable.parse(setting: "gemini-2.5-flash=0.2/2, my-model = 1/4/0.25", origin: "the prices setting")
        #expect(table.price(of: "gemini-2.5-flash") == ModelPrice(input: 0.2, output: 2))
        #expect(table.price(of: "my-model") == ModelPrice(input: 1, output: 4, cached: 0.25))
        #expect(table.price(of: "gemini-2.5-pro") == PriceTable.builtIn.price(of: "gemini-2.5-pro"))
        let euros = try PriceTable.parse(setting: "currency=eur,gemini-2.5-flash=0.3/2.3", origin: "the prices setting")
        #expect(euros.currency == "EUR" && euros.price(of: "gemini-2.5-pro") == nil)
        for bad in ["gemini=1", "gemini=a/b", "x=1/-2", "currency=€€", "=1/2"] {
            #expect(throws: PriceTable.ParseError.self) { try PriceTable.parse(setting: bad, origin: "x") }
        }
    }

    @Test func aPricesFileIsJSON() throws {
        let table = try PriceTable.parse(json: Array(#"{"currency":"EUR","models":{"m":{"input":1,"output":2}}}"#.utf8), origin: "file")
        #expect(table.currency == "EUR" && table.price(of: "m") == ModelPrice(input: 1, output: 2, cached: 0.1))
        #expect(throws: PriceTable.ParseError.self) { try PriceTable.parse(json: Array("{".utf8), origin: "file") }
        #expect(throws: PriceTable.ParseError.self) { try PriceTable.parse(json: Array(#"{"models":{"m":{"input":-1,"output":2}}}"#.utf8), origin: "file") }
    }

    @Test func daysAreCivilDatesInUTC() {
        #expect(UsageDay(seconds: 0).text == "1970-01-01")
        #expect(UsageDay(seconds: 1_796_111_103).text == "2026-12-01")
        #expect(UsageDay(seconds: 951_782_400).text == "2000-02-29")
        #expect(UsageDay(seconds: 1_796_111_103).monthStart.text == "2026-12-01")
        #expect(UsageDay(seconds: 1_798_000_000).monthStart.text == "2026-12-01" && UsageDay(seconds: 1_798_000_000).text == "2026-12-23")
        #expect(UsageDay(seconds: -1).text == "1969-12-31")
    }
}
