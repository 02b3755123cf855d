/// What one `ask --schema` check may spend: a count of steps (schema nodes visited, pattern
/// threads advanced) and a deadline, so no schema and no reply can hold the CPU for long.
final class CheckBudget {
    /// The check stopped: the reply is neither matched nor refuted.
    struct Exhausted: Error, Equatable {
        let steps: Int
        let seconds: Double
    }

    private var remaining: Int
    private let steps: Int
    private let deadline: ContinuousClock.Instant
    private let seconds: Double
    private var untilClockCheck = 4_096

    init(steps: Int, seconds: Double) {
        remaining = steps
        self.steps = steps
        self.seconds = seconds
        deadline = .now + .milliseconds(Int64(seconds * 1_000))
    }

    func charge(_ cost: Int = 1) throws(Exhausted) {
        remaining -= cost
        untilClockCheck -= cost
        if remaining < 0 { throw Exhausted(steps: steps, seconds: seconds) }
        if untilClockCheck <= 0 {
            untilClockCheck = 4_096
            if ContinuousClock.now >= deadline { throw Exhausted(steps: steps, seconds: seconds) }
        }
    }
}
