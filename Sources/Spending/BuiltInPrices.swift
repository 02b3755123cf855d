/// Google's list prices, paid tier, Standard service tier, prompts up to 200,000 tokens, in US
/// dollars per million tokens, each with its source and the date it was read (the copies
/// gathered in gemini-prices-2026-12.md; Docs/usage.md lists them). Output includes thinking;
/// tool-use prompt tokens are billed as input.
extension PriceTable {
    /// When the table was last checked against its sources.
    public static let builtInDate = "2026-12-07"

    /// Gemini 3 and 4: a thousand Google Search queries past the month's free 5,000.
    static let searchPerThousand = 14.0

    public static let builtIn = PriceTable(currency: "USD", origin: "built-in prices of \(builtInDate)", periods: builtInPeriods)

    /// A UTC day by its date.
    static func day(_ year: Int, _ month: Int, _ day: Int) -> UsageDay { UsageDay(year: year, month: month, day: day) }

    private static let pricingPage = "ai.google.dev/gemini-api/docs/pricing"

    /// 3.x Flash: introductory through 2026-12-31, standard from 2027-01-01 ("$0.75 through
    /// December 31, 2026. $1.50 starting January 1, 2027.").
    private static func introductoryFlash(_ source: String) -> [PricePeriod] {
        [PricePeriod(ModelPrice(input: 0.75, output: 3.75, cached: 0.075, search: searchPerThousand), through: day(2026, 12, 31), source: source),
         PricePeriod(ModelPrice(input: 1.50, output: 7.50, cached: 0.15, search: searchPerThousand), from: day(2027, 1, 1), source: source)]
    }

    /// Gemini 4 Argon and Carbon: $2/$10 through 2026-11-30, $4/$20 from 2026-12-01 (secondary copies only).
    private static func steppedGemini4(_ source: String) -> [PricePeriod] {
        [PricePeriod(ModelPrice(input: 2.00, output: 10.00, cached: 0.10, search: searchPerThousand), through: day(2026, 11, 30), source: source),
         PricePeriod(ModelPrice(input: 4.00, output: 20.00, cached: 0.20, search: searchPerThousand), from: day(2026, 12, 1), source: source)]
    }

    private static func always(_ input: Double, _ output: Double, cached: Double, search: Double? = searchPerThousand, _ source: String) -> [PricePeriod] {
        [PricePeriod(ModelPrice(input: input, output: output, cached: cached, search: search), source: source)]
    }

    static let builtInPeriods: [String: [PricePeriod]] = [
        "gemini-4-argon": steppedGemini4("secondary: litellm discussion #46238, TokenMeter v0.13.1 (2026-10-13), cedr v0.16.1 (2026-12-01)"),
        "gemini-4-carbon": steppedGemini4("secondary: apidog.com and docs.laozhang.ai (2026-11-11), cedr v0.16.1 (2026-12-01)"),
        "gemini-4-neon": always(3.00, 15.00, cached: 0.15, "secondary: TokenMeter v0.17.0, docs.laozhang.ai (2026-11-22)"),
        "gemini-4-hydrogen": always(1.50, 7.50, cached: 0.075, "secondary: TokenMeter v0.17.0, cedr v0.11.1 (2026-11-12), docs.sim.ai (2026-11-20)"),
        "gemini-3.8-flash": introductoryFlash("\(pricingPage) as transcribed 2026-10-07 and 2026-09-14"),
        "gemini-3.7-flash": introductoryFlash("\(pricingPage) as transcribed 2026-09-14; Vertex pricing page (2026-09-07)"),
        "gemini-3.6-flash": introductoryFlash("model-price README of 2026-09-24; Vertex pricing page (2026-09-07)"),
        // The alias resolves to 3.8 Flash (seen 2026-09-11); a reply's modelVersion names the model that ran.
        "gemini-flash-latest": introductoryFlash("as gemini-3.8-flash, which the alias resolves to (2026-09-11)"),
        "gemini-3.5-flash-lite": always(0.30, 2.50, cached: 0.03, "\(pricingPage) as transcribed 2026-10-07 and 2026-09-14"),
        "gemini-3.5-flash": always(1.50, 9.00, cached: 0.15, "\(pricingPage) as transcribed 2026-10-07 and 2026-09-14"),
        "gemini-3.1-flash-lite": always(0.25, 1.50, cached: 0.025, "model-price README of 2026-09-24; research report of 2026-09-07"),
        "gemini-3.1-pro": always(2.00, 12.00, cached: 0.20, "\(pricingPage) as transcribed 2026-10-07 and 2026-09-20"),
        "gemini-3-flash": always(0.50, 3.00, cached: 0.05, "\(pricingPage) as quoted 2026-07-04; research report of 2026-09-07"),
        "gemini-3-pro": always(2.00, 12.00, cached: 0.20, "\(pricingPage) before its shutdown on 2026-03-09"),
        // Gemini 2.5 grounding is billed per grounded prompt past 1,500 a day: not in this table.
        "gemini-2.5-pro": always(1.25, 10.00, cached: 0.125, search: nil, "\(pricingPage) as transcribed 2026-10-07"),
        "gemini-2.5-flash": always(0.30, 2.50, cached: 0.03, search: nil, "\(pricingPage) as transcribed 2026-10-07 and 2026-09-24"),
        "gemini-2.5-flash-lite": always(0.10, 0.40, cached: 0.01, search: nil, "\(pricingPage) as transcribed 2026-10-07 and 2026-09-24"),
    ]
}
