import SystemIO

/// The one rule for trying a Google request again: which failures, how often, and how long to
/// wait. A delay the server asks for (google.rpc.RetryInfo, else the Retry-After header) is
/// taken as asked, and one longer than `maxServerDelay` ends the retries; otherwise the wait
/// grows by `backoff`. 4xx answers other than 429 are never tried again, nor a daily quota.
public struct RetryPolicy: Sendable, Equatable {
    /// The failures worth another try.
    public struct RetryOn: OptionSet, Sendable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// No HTTP answer: refused, reset, DNS, TLS.
        public static let noAnswer = RetryOn(rawValue: 1)
        /// 429, unless the quota that ran out is a daily one.
        public static let rateLimit = RetryOn(rawValue: 2)
        /// 500, 502, 503 and 504.
        public static let transientServerErrors = RetryOn(rawValue: 4)
        /// Every 5xx.
        public static let serverErrors = RetryOn(rawValue: 8)
    }

    public enum Backoff: Sendable, Equatable {
        /// `initial` doubling per attempt up to `max`, spread ±25 % when `jitter`.
        case exponential(initial: Double, max: Double, jitter: Bool)
        /// `step` × the attempt's number.
        case linear(step: Double)

        /// The wait after attempt number `attempt` (from 1).
        public func delay(attempt: Int) -> Double {
            switch self {
            case .linear(let step):
                return step * Double(attempt)
            case .exponential(let initial, let most, let jitter):
                let delay = min(most, initial * Double(1 << min(attempt - 1, 16)))
                return jitter ? delay * Double.random(in: 0.75...1.25) : delay
            }
        }
    }

    /// What went wrong with one attempt.
    public enum Failure: Sendable, Equatable {
        case noAnswer
        /// An HTTP error answer; `serverDelay` is what RetryInfo or Retry-After asked for.
        case status(Int, serverDelay: Double?, dailyQuota: Bool)
        /// Something another attempt will not mend (a refusal, a timeout, text already shown).
        case final
    }

    public enum Decision: Sendable, Equatable {
        case retry(after: Double)
        case stop
    }

    public var maxAttempts: Int
    public var retryOn: RetryOn
    public var backoff: Backoff
    public var maxServerDelay: Double

    /// Server-asked delays (RetryInfo, Retry-After) longer than this are not waited for.
    public static let longestServerDelay = 120.0

    public init(maxAttempts: Int, retryOn: RetryOn, backoff: Backoff, maxServerDelay: Double = longestServerDelay) {
        self.maxAttempts = maxAttempts
        self.retryOn = retryOn
        self.backoff = backoff
        self.maxServerDelay = maxServerDelay
    }

    /// After attempt number `attempt` (from 1) failed with `failure`.
    public func decision(attempt: Int, _ failure: Failure) -> Decision {
        guard attempt < maxAttempts else { return .stop }
        switch failure {
        case .final:
            return .stop
        case .noAnswer:
            return retryOn.contains(.noAnswer) ? .retry(after: backoffDelay(attempt: attempt)) : .stop
        case .status(let code, let serverDelay, let dailyQuota):
            guard isRetryable(code, dailyQuota: dailyQuota) else { return .stop }
            guard let serverDelay else { return .retry(after: backoffDelay(attempt: attempt)) }
            return serverDelay <= maxServerDelay ? .retry(after: max(0, serverDelay)) : .stop
        }
    }

    func isRetryable(_ code: Int, dailyQuota: Bool) -> Bool {
        if code == 429 { return retryOn.contains(.rateLimit) && !dailyQuota }
        if retryOn.contains(.serverErrors), (500...599).contains(code) { return true }
        return retryOn.contains(.transientServerErrors) && [500, 502, 503, 504].contains(code)
    }

    /// The wait after attempt `attempt` when the server asked for none.
    public func backoffDelay(attempt: Int) -> Double { backoff.delay(attempt: attempt) }

    /// One attempt's result.
    public enum Step<Value, Failed: Error> {
        case done(Value)
        case failed(Failed, Failure)
    }

    /// Runs `attempt` (given its number, from 1) until it is done or the policy stops; `wait`
    /// sleeps between attempts and may throw to stop (an interrupt).
    public func run<Value, Failed: Error>(_ attempt: (Int) throws(Failed) -> Step<Value, Failed>,
                                          wait: (_ delay: Double, _ attempt: Int, _ error: Failed) throws(Failed) -> Void) throws(Failed) -> Value {
        var number = 1
        while true {
            switch try attempt(number) {
            case .done(let value):
                return value
            case .failed(let error, let failure):
                guard case .retry(let delay) = decision(attempt: number, failure) else { throw error }
                try wait(delay, number, error)
                number += 1
            }
        }
    }
}

extension RetryPolicy.Failure {
    /// An HTTP error answer as the policy weighs it: the server's delay and a daily quota
    /// read from the envelope, else the Retry-After header.
    public static func answer(_ status: Int, _ envelope: GoogleStatus?, retryAfter: Double?) -> Self {
        .status(status, serverDelay: envelope?.retryDelay ?? retryAfter, dailyQuota: envelope?.isDailyQuota ?? false)
    }
}

/// The one rule for waiting until something at Google is done (an operation, a new key being
/// accepted): attempts at intervals that grow by `backoff`, measured and slept on `clock`, and
/// no wait that would end past `limit` seconds.
public struct PollPolicy: Sendable {
    public var backoff: RetryPolicy.Backoff
    public var limit: Double
    public var clock: WaitClock

    public init(backoff: RetryPolicy.Backoff, limit: Double, clock: WaitClock = .standard) {
        self.backoff = backoff
        self.limit = limit
        self.clock = clock
    }

    /// Runs `attempt` (given its number, from 1, and the seconds since the first) until it
    /// answers. Before each wait `waiting` hears its length and the seconds passed; when the
    /// next wait would end past the limit, `gaveUp(seconds passed)` is thrown.
    public func run<Value, Failed: Error>(_ attempt: (_ number: Int, _ elapsed: Double) throws(Failed) -> Value?,
                                          waiting: (_ delay: Double, _ elapsed: Double) throws(Failed) -> Void = { _, _ in },
                                          gaveUp: (_ elapsed: Double) -> Failed) throws(Failed) -> Value {
        let start = clock.now()
        var number = 1
        while true {
            if let value = try attempt(number, clock.now() - start) { return value }
            let delay = backoff.delay(attempt: number)
            let elapsed = clock.now() - start
            guard elapsed + delay < limit else { throw gaveUp(elapsed) }
            try waiting(delay, elapsed)
            clock.sleep(delay)
            number += 1
        }
    }
}
