import Settings
import SystemIO
import Testing
@testable import Spending

/// Prices: the built-in table and its periods, a model's name with a version suffix and a
/// service tier, search queries past the month's allowance, the `prices` setting and files.
@Suite struct PriceTableTests {
    static let lastIntroductoryDay = UsageDay(year: 2026, month: 12, day: 31)
    static let newYear = UsageDay(year: 2027, month: 1, day: 1)

    @Test func aModelIsPricedByTheLongestNameItStartsWith() throws {
        let table = PriceTable.builtIn
        #expect(table.price(of: "gemini-2.5-flash-lite-001") == ModelPrice(input: 0.10, output: 0.40, cached: 0.01))
        #expect(table.price(of: "models/gemini-2.5-flash") == ModelPrice(input: 0.30, output: 2.50, cached: 0.03))
        #expect(table.price(of: "gemini-3.1-pro-preview")?.output == 12.00)
        #expect(table.price(of: "gemini-2.5-flashy") == nil && table.price(of: "echo") == nil)
    }

    @Test func theDefaultModelAndEveryBuiltInModelHaveAPriceTodayAndOnNewYear2027() throws {
        let today = UsageDay(seconds: Clock.now())
        for model in PriceTable.builtIn.modelNames + [defaultModel] {
            #expect(PriceTable.builtIn.price(of: model, on: today) != nil, "\(model) has no price today")
            #expect(PriceTable.builtIn.price(of: model, on: Self.newYear) != nil, "\(model) has no price on 2027-01-01")
            #expect(PriceTable.builtIn.period(of: model, on: today)?.source.isEmpty == false, "\(model) names no source")
        }
    }

    @Test func flashIsIntroductoryThroughDecember31AndStandardFromJanuary1() throws {
        for model in ["gemini-3.8-flash", "gemini-3.7-flash", "gemini-3.6-flash", "gemini-flash-latest"] {
            #expect(PriceTable.builtIn.price(of: model, on: Self.lastIntroductoryDay) == ModelPrice(input: 0.75, output: 3.75, cached: 0.075, search: 14))
            #expect(PriceTable.builtIn.price(of: model, on: Self.newYear) == ModelPrice(input: 1.50, output: 7.50, cached: 0.15, search: 14))
        }
        #expect(PriceTable.builtIn.price(of: "gemini-3.5-flash-lite", on: Self.newYear)?.input == 0.30)
        let period = try #require(PriceTable.builtIn.period(of: "gemini-3.8-flash", on: Self.lastIntroductoryDay))
        #expect(period.through == Self.lastIntroductoryDay && period.from == nil)
    }

    @Test func argonAndCarbonDoubledOnDecember1() throws {
        for model in ["gemini-4-argon", "gemini-4-carbon"] {
            #expect(PriceTable.builtIn.price(of: model, on: UsageDay(year: 2026, month: 11, day: 30))?.input == 2.00)
            #expect(PriceTable.builtIn.price(of: model, on: UsageDay(year: 2026, month: 12, day: 1)) == ModelPrice(input: 4.00, output: 20.00, cached: 0.20, search: 14))
        }
    }

    @Test func aServiceTierScalesTheTokenPrices() throws {
        let day = Self.newYear
        #expect(PriceTable.builtIn.price(of: "gemini-3.8-flash:flex", on: day) == ModelPrice(input: 0.75, output: 3.75, cached: 0.075, search: 14))
        #expect(PriceTable.builtIn.price(of: "gemini-3.8-flash:batch", on: day)?.output == 3.75)
        #expect(abs(try #require(PriceTable.builtIn.price(of: "gemini-3.8-flash:priority", on: day)).input - 2.70) < 1e-12)
        #expect(ServiceTier(header: "Priority") == .priority && ServiceTier(header: "SERVICE_TIER_FLEX") == .flex)
        #expect(ServiceTier(header: nil) == .standard && ServiceTier(header: "unspecified") == .standard && ServiceTier(header: "gold") == .standard)
        #expect(ServiceTier.flex.ledgerModel("m") == "m:flex" && ServiceTier.standard.ledgerModel("m") == "m")
        #expect(ServiceTier.split("m:priority") == ("m", .priority) && ServiceTier.split("a:b") == ("a:b", .standard))
    }

    @Test func thinkingAndToolUseAreBilledAndCachedTokensAtTheirRate() throws {
        let table = PriceTable(currency: "USD", origin: "test", models: ["m": ModelPrice(input: 1, output: 10, cached: 0.5)])
        let counts = UsageCounts(requests: 1, prompt: 1_000_000, cached: 200_000, toolUse: 100_000, output: 300_000, thoughts: 200_000)
        // 800k uncached + 100k tool use at 1, 200k cached at 0.5, 500k output (answer and thinking) at 10.
        #expect(abs(try #require(table.cost(counts, model: "m")) - (0.9 + 0.1 + 5.0)) < 1e-9)
        #expect(table.cost(counts, model: "other") == nil)
    }

    @Test func searchQueriesCostOnlyPastTheMonthsFreeOnes() throws {
        var table = PriceTable.builtIn
        table.searchFreeQueries = 10
        let day = Self.newYear
        #expect(table.searchCost(4, model: "gemini-3.8-flash", on: day, usedBefore: 0) == 0)
        #expect(abs(try #require(table.searchCost(4, model: "gemini-3.8-flash", on: day, usedBefore: 8)) - 2 * 0.014) < 1e-12)
        #expect(abs(try #require(table.searchCost(4, model: "gemini-3.8-flash", on: day, usedBefore: 50)) - 4 * 0.014) < 1e-12)
        #expect(table.searchCost(4, model: "gemini-2.5-flash", on: day, usedBefore: 50) == nil)
        // In a summary: 6 queries on the 1st, 6 on the 2nd of a month with 10 free: 2 are billed, on the 2nd.
        var summary = UsageSummary()
        for date in [1, 2] {
            summary.add(UsageLedger.Entry(key: "k", model: "gemini-3.8-flash", day: UsageDay(year: 2027, month: 1, day: date),
                                          counts: UsageCounts(requests: 1, searchQueries: 6)))
        }
        #expect(summary.searchCosts(prices: table)["k"] == [UsageDay(year: 2027, month: 1, day: 2): 2 * 0.014])
        #expect(summary.searchQueries(key: "k", month: UsageDay(year: 2027, month: 1, day: 20)) == 12)
        let costs = summary.dailyCosts(prices: table).costs["k"] ?? [:]
        #expect(abs((costs[UsageDay(year: 2027, month: 1, day: 2)] ?? 0) - 0.028) < 1e-12)
    }

    @Test func aRowIsPricedAtItsOwnDaysPeriod() throws {
        var summary = UsageSummary()
        let million = UsageCounts(requests: 1, prompt: 1_000_000)
        summary.add(UsageLedger.Entry(key: "k", model: "gemini-3.8-flash", day: Self.lastIntroductoryDay, counts: million))
        summary.add(UsageLedger.Entry(key: "k", model: "gemini-3.8-flash", day: Self.newYear, counts: million))
        let costs = summary.dailyCosts(prices: .builtIn).costs["k"]
        #expect(costs == [Self.lastIntroductoryDay: 0.75, Self.newYear: 1.50])
    }

    @Test func theSettingReplacesNamedModelsAndKeepsTheRestInDollars() throws {
        let table = try PriceTable.parse(setting: "gemini-2.5-flash=0.2/2, my-model = 1/4/0.25", origin: "the prices setting")
        #expect(table.price(of: "gemini-2.5-flash") == ModelPrice(input: 0.2, output: 2))
        #expect(table.price(of: "my-model") == ModelPrice(input: 1, output: 4, cached: 0.25))
        #expect(table.price(of: "gemini-2.5-pro") == PriceTable.builtIn.price(of: "gemini-2.5-pro"))
        let euros = try PriceTable.parse(setting: "currency=eur,gemini-2.5-flash=0.3/2.3", origin: "the prices setting")
        #expect(euros.currency == "EUR" && euros.price(of: "gemini-2.5-pro") == nil)
        for bad in ["gemini=1", "gemini=a/b", "x=1/-2", "currency=€€", "=1/2", "m=1/2/3/4/5", "m=1/2@2027-02-30..", "m=1/2@2027-01-01",
                    "m=1/2@..2027-01-31,m=2/3@2027-01-01..", "m=1/2@2027-02-01..2027-01-01"] {
            #expect(throws: PriceTable.ParseError.self) { try PriceTable.parse(setting: bad, origin: "x") }
        }
    }

    @Test func theSettingGivesPeriods() throws {
        let table = try PriceTable.parse(setting: "m=1/2@..2026-12-31, m=3/4/0.3/10@2027-01-01..", origin: "the prices setting")
        #expect(table.price(of: "m", on: Self.lastIntroductoryDay) == ModelPrice(input: 1, output: 2))
        #expect(table.price(of: "m", on: Self.newYear) == ModelPrice(input: 3, output: 4, cached: 0.3, search: 10))
        #expect(table.period(of: "m", on: Self.newYear)?.source == "the prices setting")
        let gap = try PriceTable.parse(setting: "m=1/2@2026-01-01..2026-01-31", origin: "x")
        #expect(gap.price(of: "m", on: UsageDay(year: 2026, month: 2, day: 1)) == nil)
    }

    @Test func aPricesFileIsJSONWithOnePriceOrPeriods() throws {
        let table = try PriceTable.parse(json: Array(#"{"currency":"EUR","models":{"m":{"input":1,"output":2}}}"#.utf8), origin: "file")
        #expect(table.currency == "EUR" && table.price(of: "m") == ModelPrice(input: 1, output: 2, cached: 0.1))
        let periods = try PriceTable.parse(json: Array(#"{"models":{"m":[{"input":1,"output":2,"to":"2026-12-31"},{"input":3,"output":4,"search":14,"from":"2027-01-01"}]}}"#.utf8), origin: "file")
        #expect(periods.price(of: "m", on: Self.newYear) == ModelPrice(input: 3, output: 4, search: 14))
        #expect(periods.price(of: "m", on: Self.lastIntroductoryDay)?.input == 1)
        #expect(throws: PriceTable.ParseError.self) { try PriceTable.parse(json: Array("{".utf8), origin: "file") }
        #expect(throws: PriceTable.ParseError.self) { try PriceTable.parse(json: Array(#"{"models":{"m":{"input":-1,"output":2}}}"#.utf8), origin: "file") }
        #expect(throws: PriceTable.ParseError.self) { try PriceTable.parse(json: Array(#"{"models":{"m":[{"input":1,"output":2,"from":"soon"}]}}"#.utf8), origin: "file") }
    }

    @Test func daysAreCivilDatesInUTC() {
        #expect(UsageDay(seconds: 0).text == "1970-01-01")
        #expect(UsageDay(seconds: 1_796_111_103).text == "2026-12-01")
        #expect(UsageDay(seconds: 951_782_400).text == "2000-02-29")
        #expect(UsageDay(seconds: 1_796_111_103).monthStart.text == "2026-12-01")
        #expect(UsageDay(seconds: 1_798_000_000).monthStart.text == "2026-12-23".prefix(8) + "01" && UsageDay(seconds: 1_798_000_000).text == "2026-12-23")
        #expect(UsageDay(seconds: -1).text == "1969-12-31")
        for text in ["1970-01-01", "2000-02-29", "2026-12-31", "2027-01-01", "1969-12-31"] { #expect(UsageDay(text: text)?.text == text) }
        #expect(UsageDay(text: "2027-01-01") == UsageDay(seconds: 1_798_761_600))
        for bad in ["2027-02-29", "2027-13-01", "27-01-01", "2027-1-1", "x"] { #expect(UsageDay(text: bad) == nil) }
    }
}
