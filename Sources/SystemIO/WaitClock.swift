/// The clock that waits between attempts and measures how long a wait has lasted: real time,
/// time that passes faster (the end-to-end suite, through `TestHooks`), or in unit tests time
/// that moves only when slept.
public struct WaitClock: Sendable {
    /// Seconds from an arbitrary start; never goes back.
    public let now: @Sendable () -> Double
    /// Lets `seconds` pass on this clock.
    public let sleep: @Sendable (_ seconds: Double) -> Void

    public init(now: @escaping @Sendable () -> Double, sleep: @escaping @Sendable (_ seconds: Double) -> Void) {
        self.now = now
        self.sleep = sleep
    }

    /// The monotonic clock and real sleeps.
    public static let real = WaitClock(now: Clock.monotonicSeconds, sleep: Clock.sleep)

    /// Real time `factor` times faster: a wait of `factor` seconds takes one.
    public static func faster(by factor: Double) -> WaitClock {
        WaitClock(now: { Clock.monotonicSeconds() * factor }, sleep: { Clock.sleep($0 / factor) })
    }

    /// What the commands wait with: real time, unless a debug build's test hook speeds it up.
    public static let standard: WaitClock = TestHooks.waitSpeedup.map { faster(by: $0) } ?? real
}
