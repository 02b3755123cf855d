import GoogleHTTP
import Synchronization
import SystemIO
import Testing

@Suite struct PollPolicyTests {
    /// Time that passes only when slept, and remembers each sleep.
    final class VirtualTime: Sendable {
        private let state = Mutex((now: 0.0, slept: [Double]()))
        var slept: [Double] { state.withLock { $0.slept } }
        var clock: WaitClock {
            WaitClock(now: { self.state.withLock { $0.now } },
                      sleep: { seconds in self.state.withLock { $0.now += seconds; $0.slept.append(seconds) } })
        }
    }

    struct GaveUp: Error, Equatable { let elapsed: Double }

    @Test func waitsGrowUntilTheNextWouldEndPastTheLimit() {
        let time = VirtualTime()
        let policy = PollPolicy(backoff: .exponential(initial: 0.5, max: 8, jitter: false), limit: 120, clock: time.clock)
        var attempts = 0
        var heard: [Double] = []
        #expect(throws: GaveUp(elapsed: 119.5)) {
            try policy.run({ (_: Int, _: Double) throws(GaveUp) -> Int? in
                attempts += 1
                return nil
            }, waiting: { (delay: Double, _: Double) throws(GaveUp) in heard.append(delay) }, gaveUp: { GaveUp(elapsed: $0) })
        }
        let expected = [0.5, 1, 2, 4] + Array(repeating: 8.0, count: 14)
        #expect(time.slept == expected && heard == expected)
        #expect(attempts == expected.count + 1)
    }

    @Test func anAnswerEndsTheWaitAndEachAttemptKnowsItsTime() throws {
        let time = VirtualTime()
        let policy = PollPolicy(backoff: .exponential(initial: 1, max: 15, jitter: false), limit: 60, clock: time.clock)
        var seen: [(Int, Double)] = []
        let answer = try policy.run({ (number: Int, elapsed: Double) throws(GaveUp) -> String? in
            seen.append((number, elapsed))
            return number == 4 ? "done" : nil
        }, gaveUp: { GaveUp(elapsed: $0) })
        #expect(answer == "done")
        #expect(seen.map(\.0) == [1, 2, 3, 4] && seen.map(\.1) == [0, 1, 3, 7])
        #expect(time.slept == [1, 2, 4])
    }

    @Test func aFasterClockWaitsTheSameStepsInLessRealTime() {
        let faster = WaitClock.faster(by: 1000)
        let start = faster.now()
        faster.sleep(20)  // 20 ms of real time
        #expect(faster.now() - start >= 20)
    }
}
