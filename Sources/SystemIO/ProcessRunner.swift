import Glibc

/// The one way gemvault runs a helper program to its end (`key_command`, `token_command`,
/// systemd-creds, tmux): its stdin fed from memory (or /dev/null), its stdout into the caller's
/// buffer up to that buffer's size, its stderr kept up to a bound, all within one deadline.
/// A helper that runs past the deadline or prints more than the buffer holds is stopped.
public enum ProcessRunner {
    /// How a helper is stopped early.
    public enum Stop: Equatable, Sendable {
        /// SIGKILL to its process group (the helper is given one of its own).
        case killGroup
        /// SIGTERM to it alone, SIGKILL after `grace` seconds: sudo passes SIGTERM on to the root
        /// program it runs, which gemvault may not signal itself. It stays in the caller's
        /// process group (sudo, in the terminal's foreground group, may read the password).
        case terminate(grace: Double)
    }

    public enum Ending: Equatable, Sendable {
        case finished(ChildProcess.Termination)
        /// Stopped at the deadline.
        case timedOut
        /// Stopped because its stdout passed the buffer.
        case outputTooLarge
    }

    /// Why a helper did not run.
    public enum Failure: Error, Equatable, Sendable {
        /// It could not be started (not found, not executable, no pipes).
        case start(SystemError)
        /// Its stdin could not be written, for another reason than its closing it.
        case input(SystemError)

        public var system: SystemError {
            switch self {
            case .start(let error), .input(let error): error
            }
        }
    }

    public struct Outcome: Equatable, Sendable {
        public let ending: Ending
        /// Bytes of stdout in the caller's buffer.
        public let outputCount: Int
        /// What it wrote to stderr (at most about `errorLimit` bytes).
        public let errors: [UInt8]
        /// False when it closed its stdin before taking all of `input` (EPIPE).
        public let inputTaken: Bool
    }

    /// Runs `arguments` (searched in PATH, no shell). `input`, when given, is written whole before
    /// anything is read (it must be smaller than a pipe's buffer, as a key is); stdin is then
    /// closed. A helper that closes its stdin first is EPIPE, as gemvault ignores SIGPIPE.
    public static func run(_ arguments: [String], environment: [String: String], input: UnsafeRawBufferPointer? = nil,
                           output: UnsafeMutableRawBufferPointer, errorLimit: Int = 4096, keepErrors: Bool = true,
                           deadline: Deadline, stop: Stop = .killGroup) throws(Failure) -> Outcome {
        let child: ChildProcess
        do {
            child = try ProcessSpawner.spawn(arguments, environment: environment, input: input == nil ? .null : .pipe, output: .pipe,
                                             errors: keepErrors ? .pipe : .null, ownProcessGroup: stop == .killGroup)
        } catch {
            throw .start(error)
        }
        var inputTaken = true
        if let input {
            do throws(SystemError) {
                try child.standardInput!.writeAll(input)
            } catch where error.code == EPIPE {
                inputTaken = false
            } catch {
                halt(child, stop)
                throw .input(error)
            }
            child.closeStandardInput()
        }
        var collected = Collected(output: output, errorLimit: errorLimit)
        let ending = collected.drain(child, deadline: deadline)
        if let ending {
            halt(child, stop)
            return Outcome(ending: ending, outputCount: collected.outputCount, errors: collected.errors, inputTaken: inputTaken)
        }
        return Outcome(ending: .finished(child.wait()), outputCount: collected.outputCount, errors: collected.errors, inputTaken: inputTaken)
    }

    /// Stops the child and reaps it.
    static func halt(_ child: ChildProcess, _ stop: Stop) {
        switch stop {
        case .killGroup:
            child.signalGroup(SIGKILL)
        case .terminate(let grace):
            child.signal(SIGTERM)
            let until = Deadline(after: grace)
            while !until.hasPassed {
                if child.endedYet() != nil { return }
                usleep(20_000)
            }
            child.signal(SIGKILL)
        }
        _ = child.wait()
    }

    /// The child's stdout and stderr as they arrive.
    private struct Collected {
        let output: UnsafeMutableRawBufferPointer
        let errorLimit: Int
        var outputCount = 0
        var errors: [UInt8] = []

        init(output: UnsafeMutableRawBufferPointer, errorLimit: Int) {
            self.output = output
            self.errorLimit = errorLimit
        }

        /// Reads until both streams end (nil) or the run must stop (why).
        mutating func drain(_ child: ChildProcess, deadline: Deadline) -> Ending? {
            var streams = [child.standardOutput, child.standardError].compactMap { $0 }
            var chunk = [UInt8](repeating: 0, count: 4096)
            while !streams.isEmpty {
                guard !deadline.hasPassed else { return .timedOut }
                for stream in Poller.readable(streams, timeout: deadline.slice(atMost: 1)) {
                    if stream === child.standardOutput {
                        // A full buffer reads into the chunk: any byte more is too much.
                        let room = UnsafeMutableRawBufferPointer(rebasing: output[outputCount...])
                        let count = room.isEmpty ? chunk.withUnsafeMutableBytes { (try? stream.read(into: $0)) ?? 0 } : (try? stream.read(into: room)) ?? 0
                        if count > 0 && room.isEmpty { return .outputTooLarge }
                        if count <= 0 { streams.removeAll { $0 === stream } } else { outputCount += count }
                    } else {
                        let count = chunk.withUnsafeMutableBytes { (try? stream.read(into: $0)) ?? 0 }
                        if count <= 0 { streams.removeAll { $0 === stream } } else if errors.count < errorLimit { errors += chunk[0..<count] }
                    }
                }
            }
            return nil
        }
    }
}
