import Glibc

/// A moment on a `WaitClock` that a wait must not pass: the one place a deadline is compared
/// with the time.
public struct Deadline: Sendable {
    public let clock: WaitClock
    /// The moment, in the clock's seconds.
    public let moment: Double

    /// `seconds` from now on `clock`.
    public init(after seconds: Double, clock: WaitClock = .real) {
        self.clock = clock
        self.moment = clock.now() + seconds
    }

    /// The moment `moment` (monotonic seconds, for callers that pass a deadline as a number).
    public init(at moment: Double, clock: WaitClock = .real) {
        self.clock = clock
        self.moment = moment
    }

    /// Seconds left; 0 once passed.
    public var remaining: Double { max(0, moment - clock.now()) }

    public var hasPassed: Bool { clock.now() >= moment }

    /// How long one wait may last: what is left, at most `longest` (a poll wakes up now and
    /// then to look at signals and the time).
    public func slice(atMost longest: Double) -> Double { min(remaining, longest) }
}

extension FileDescriptor {
    /// Why `readExactly` did not fill its buffer.
    public enum ExactReadFailure: Error, Equatable, Sendable {
        case timedOut
        /// The other side closed after `received` bytes.
        case closed(received: Int)
        case failed(SystemError)
    }

    /// Fills `buffer` from a non-blocking descriptor (a socket), waiting for more with poll
    /// until `deadline`: a peer that stops sending part way costs the deadline, not a hang.
    public func readExactly(_ buffer: UnsafeMutableRawBufferPointer, deadline: Deadline) throws(ExactReadFailure) {
        var received = 0
        while received < buffer.count {
            let attempt = Result { () throws(SystemError) in try readAvailable(into: UnsafeMutableRawBufferPointer(rebasing: buffer[received...])) }
            switch attempt {
            case .failure(let error): throw .failed(error)
            case .success(0?): throw .closed(received: received)
            case .success(let got?): received += got
            case .success(nil):
                guard !deadline.hasPassed else { throw .timedOut }
                _ = waitReadable(timeout: deadline.slice(atMost: 1))
            }
        }
    }
}
