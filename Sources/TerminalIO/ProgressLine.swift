import Dispatch
import Glibc
import Synchronization

/// A one-line activity indicator on stderr for waits the user cannot see, such as Argon2:
/// "⠹ unlocking… 1.4 s". It appears only after a short delay, so quick work shows nothing,
/// and only when stderr is a terminal and TERM is not dumb. `stop` erases it.
public final class ProgressLine: Sendable {
    private let label: String
    private let started = DispatchTime.now()
    private let state = Mutex<(timer: DispatchSourceTimer?, shown: Bool)>((nil, false))
    private static let frames = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"]

    /// Spinners and progress lines only where a person watches a capable terminal.
    public static var isWanted: Bool {
        guard Terminal.stderrIsTerminal else { return false }
        guard let term = getenv("TERM") else { return true }
        return String(cString: term) != "dumb"
    }

    /// Starts drawing after `delay` seconds, every 100 ms; nil when progress is not wanted.
    public static func start(_ label: String, delay: Double = 0.25) -> ProgressLine? {
        guard isWanted else { return nil }
        let line = ProgressLine(label: label)
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue.global(qos: .userInitiated))
        timer.schedule(deadline: .now() + delay, repeating: 0.1)
        timer.setEventHandler { [line] in line.draw() }
        line.state.withLock { $0.timer = timer }
        timer.resume()
        return line
    }

    private init(label: String) { self.label = label }

    private func draw() {
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds) / 1e9
        let frame = Self.frames[Int(elapsed * 10) % Self.frames.count]
        state.withLock { state in
            guard state.timer != nil else { return }
            Console.err("\r\u{1B}[2K\(frame) \(label) \(Self.format(elapsed))")
            state.shown = true
        }
    }

    /// Stops the timer and erases the line if it was drawn.
    public func stop() {
        state.withLock { state in
            state.timer?.cancel()
            state.timer = nil
            if state.shown { Console.err("\r\u{1B}[2K") }
            state.shown = false
        }
    }

    static func format(_ seconds: Double) -> String {
        seconds >= 10 ? "\(Int(seconds)) s" : "\((seconds * 10).rounded(.down) / 10) s"
    }
}
