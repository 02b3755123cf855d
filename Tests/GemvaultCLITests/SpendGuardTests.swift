import KeyResolution
import Spending
import Testing
@testable import GemvaultCLI

/// The spend guard's rules: money as shown, a key's ledger name, the unusual-day rule.
@Suite struct SpendGuardTests {
    @Test func moneyShowsCentsOrFourPlacesBelowTenCents() {
        #expect(SpendGuard.money(2, currency: "USD") == "$2.00")
        #expect(SpendGuard.money(0.0101, currency: "USD") == "$0.0101")
        #expect(SpendGuard.money(0, currency: "USD") == "$0.00")
        #expect(SpendGuard.money(1234.567, currency: "EUR") == "1234.57 EUR")
        #expect(SpendGuard.money(0.00004, currency: "USD") == "$0.0000")
    }

    @Test func aKeyIsFiledUnderItsVaultNameElseItsSource() {
        #expect(SpendGuard.ledgerName(.vault(path: "/v", name: "work")) == "work")
        #expect(SpendGuard.ledgerName(.environment(variable: "GEMINI_API_KEY")) == "$GEMINI_API_KEY")
        #expect(SpendGuard.ledgerName(.keyFile(path: "/k")) == "file:/k")
        #expect(SpendGuard.ledgerName(.systemdCredential(path: "/run/credentials/x/gemini-api-key")) == "systemd:gemini-api-key")
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
}
