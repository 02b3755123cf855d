
/// The figures a spend check says: money, and a day far above the key's usual one.
extension SpendGuard {
    /// A day more than 3× the median of the key's other days with spending in the last 30.
    func warnIfUnusual(_ daily: [UsageDay: Double], today: UsageDay) {
        guard let median = Self.usualDay(daily, before: today), let spent = daily[today], spent > Self.unusualFactor * median else { return }
        warnOnce("key '\(keyName)' spent \(money(spent)) today, more than \(Int(Self.unusualFactor))× its usual day (\(money(median)), the median of the last 30 days): check what uses it")
    }

    /// The median of the days with spending among the 30 before `day`; nil with fewer than 3.
    public static func usualDay(_ daily: [UsageDay: Double], before day: UsageDay) -> Double? {
        median(daily.filter { $0.key < day && $0.key.number >= day.number - 30 && $0.value > 0 }.values.sorted())
    }

    /// The days of `daily` from `first` on that spent more than 3× their usual day, in order
    /// (one pass over the days, each looking back 30 days).
    public static func unusualDays(_ daily: [UsageDay: Double], from first: UsageDay) -> [UsageDay] {
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


    public func money(_ amount: Double) -> String { Self.money(amount, currency: prices.currency) }

    /// `$0.0123` for dollars, `1.50 EUR` for another currency: cents, or four places below a cent.
    public static func money(_ amount: Double, currency: String) -> String {
        guard amount.isFinite, abs(amount) < 1e12 else { return "\(amount) \(currency)" }
        let places = amount != 0 && abs(amount) < 0.1 ? 4 : 2
        let scale = places == 4 ? 10_000.0 : 100.0
        let units = Int((abs(amount) * scale).rounded())
        let whole = units / Int(scale), fraction = String(units % Int(scale))
        let text = (amount < 0 ? "-" : "") + "\(whole)." + String(repeating: "0", count: places - fraction.count) + fraction
        return currency == "USD" ? "$" + text : text + " " + currency
    }

}
