import GoogleHTTP
import Testing

@Suite struct RetryPolicyTests {
    private let gemini = RetryPolicy(maxAttempts: 5, retryOn: [.noAnswer, .rateLimit, .transientServerErrors],
                                     backoff: .exponential(initial: 1, max: 30, jitter: false), maxServerDelay: 120)

    @Test func retryInfoIsTakenAsAsked() throws {
        let envelope = GoogleStatus.decode(try fixture("rate-limit-per-minute.json"))
        #expect(gemini.decision(attempt: 1, .answer(429, envelope, retryAfter: nil)) == .retry(after: 38))
        // RetryInfo wins over the header; the header counts when RetryInfo is absent.
        #expect(gemini.decision(attempt: 1, .answer(429, envelope, retryAfter: 5)) == .retry(after: 38))
        #expect(gemini.decision(attempt: 1, .answer(503, nil, retryAfter: 7)) == .retry(after: 7))
    }

    @Test func aDelayBeyondTheLimitEndsTheRetries() {
        #expect(gemini.decision(attempt: 1, .status(429, serverDelay: 121, dailyQuota: false)) == .stop)
        #expect(gemini.decision(attempt: 1, .status(429, serverDelay: 120, dailyQuota: false)) == .retry(after: 120))
    }

    @Test func aDailyQuotaIsNeverRetried() throws {
        let envelope = GoogleStatus.decode(try fixture("quota-per-day.json"))
        #expect(gemini.decision(attempt: 1, .answer(429, envelope, retryAfter: nil)) == .stop)
    }

    @Test func noRetryOn4xxOtherThan429() {
        for code in [400, 401, 403, 404, 409, 412, 499] {
            #expect(gemini.decision(attempt: 1, .status(code, serverDelay: 1, dailyQuota: false)) == .stop, "\(code)")
        }
        #expect(gemini.decision(attempt: 1, .final) == .stop)
    }

    @Test func serverErrorsAsChosen() {
        for code in [500, 502, 503, 504] { #expect(gemini.decision(attempt: 1, .status(code, serverDelay: nil, dailyQuota: false)) == .retry(after: 1)) }
        for code in [501, 505, 599] { #expect(gemini.decision(attempt: 1, .status(code, serverDelay: nil, dailyQuota: false)) == .stop) }
        let every = RetryPolicy(maxAttempts: 3, retryOn: [.serverErrors], backoff: .linear(step: 1))
        #expect(every.decision(attempt: 1, .status(501, serverDelay: nil, dailyQuota: false)) == .retry(after: 1))
        #expect(every.decision(attempt: 1, .status(429, serverDelay: nil, dailyQuota: false)) == .stop)
        #expect(every.decision(attempt: 1, .noAnswer) == .stop)
    }

    @Test func backoffDoublesToItsCapAndLinearGrowsByItsStep() {
        #expect((1...7).map { gemini.backoffDelay(attempt: $0) } == [1, 2, 4, 8, 16, 30, 30])
        #expect(RetryPolicy(maxAttempts: 3, retryOn: [], backoff: .linear(step: 1)).backoffDelay(attempt: 2) == 2)
        let jittered = RetryPolicy(maxAttempts: 3, retryOn: [], backoff: .exponential(initial: 4, max: 30, jitter: true))
        for _ in 0..<50 { #expect((3...5).contains(jittered.backoffDelay(attempt: 1))) }
    }

    @Test func attemptsAreBounded() {
        struct Failed: Error {}
        var calls = 0
        var waits: [Double] = []
        #expect(throws: Failed.self) {
            try gemini.run({ (_: Int) throws(Failed) -> RetryPolicy.Step<Int, Failed> in
                calls += 1
                return .failed(Failed(), .noAnswer)
            }, wait: { (delay: Double, _: Int, _: Failed) throws(Failed) in waits.append(delay) })
        }
        #expect(calls == 5 && waits == [1, 2, 4, 8])
    }

    @Test func theRunEndsWithTheValueAndAWaitMayStopIt() throws {
        struct Stop: Error {}
        var calls = 0
        let value = try gemini.run({ (attempt: Int) throws(Stop) -> RetryPolicy.Step<Int, Stop> in
            calls += 1
            return attempt < 3 ? .failed(Stop(), .status(503, serverDelay: nil, dailyQuota: false)) : .done(attempt)
        }, wait: { (_: Double, _: Int, _: Stop) throws(Stop) in })
        #expect(value == 3 && calls == 3)
        #expect(throws: Stop.self) {
            try gemini.run({ (_: Int) throws(Stop) -> RetryPolicy.Step<Int, Stop> in .failed(Stop(), .noAnswer) },
                           wait: { (_: Double, _: Int, _: Stop) throws(Stop) in throw Stop() })
        }
    }
}
