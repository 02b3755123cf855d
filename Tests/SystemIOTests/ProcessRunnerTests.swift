import Glibc
import SystemIO
import Testing

/// The one helper runner: stdin fed, stdout bounded, a deadline that stops the helper.
@Suite struct ProcessRunnerTests {
    private let path = ["PATH": "/usr/bin:/bin"]

    func run(_ arguments: [String], input: String? = nil, room: Int = 64, seconds: Double = 5,
             stop: ProcessRunner.Stop = .killGroup) throws -> (ProcessRunner.Outcome, String) {
        let output = UnsafeMutableRawBufferPointer.allocate(byteCount: room, alignment: 1)
        defer { output.deallocate() }
        let bytes = Array((input ?? "").utf8)
        let outcome = try bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws -> ProcessRunner.Outcome in
            try ProcessRunner.run(arguments, environment: path, input: input == nil ? nil : raw, output: output,
                                  deadline: Deadline(after: seconds), stop: stop)
        }
        return (outcome, String(decoding: UnsafeRawBufferPointer(rebasing: output[0..<outcome.outputCount]), as: UTF8.self))
    }

    @Test func stdinIsFedAndStdoutAndStderrAreKept() throws {
        let (outcome, printed) = try run(["sh", "-c", "tr a-z A-Z; echo said >&2"], input: "key\n")
        #expect(outcome.ending == .finished(.exited(0)) && printed == "KEY\n" && outcome.inputTaken)
        #expect(String(decoding: outcome.errors, as: UTF8.self) == "said\n")
    }

    @Test func withoutInputStdinIsEmpty() throws {
        let (outcome, printed) = try run(["sh", "-c", "cat; echo end"])
        #expect(outcome.ending == .finished(.exited(0)) && printed == "end\n")
    }

    @Test func theExitStatusAndASignalAreTold() throws {
        #expect(try run(["sh", "-c", "exit 3"]).0.ending == .finished(.exited(3)))
        #expect(try run(["sh", "-c", "kill -TERM $$"]).0.ending == .finished(.signaled(SIGTERM)))
    }

    @Test func theDeadlineStopsTheHelperAndItsChildren() throws {
        // The grandchild holds stdout open: only stopping the whole group ends the wait.
        let (outcome, printed) = try run(["sh", "-c", "echo started; sleep 30 & sleep 30"], seconds: 0.3)
        #expect(outcome.ending == .timedOut && printed == "started\n")
        let gentle = try run(["sh", "-c", "sleep 30"], seconds: 0.2, stop: .terminate(grace: 5))
        #expect(gentle.0.ending == .timedOut)
    }

    @Test func outputPastTheBufferStopsTheHelper() throws {
        let (outcome, printed) = try run(["sh", "-c", "head -c 100 /dev/zero | tr '\\0' x; sleep 30"], room: 64)
        #expect(outcome.ending == .outputTooLarge && printed == String(repeating: "x", count: 64))
        let exact = try run(["sh", "-c", "printf 12345678"], room: 8)
        #expect(exact.0.ending == .finished(.exited(0)) && exact.1 == "12345678")
    }

    /// gemvault ignores SIGPIPE (`ProcessHardening`), so a helper that closes its stdin is EPIPE.
    @Test func aHelperThatClosesItsStdinIsToldAndAMissingOneThrows() throws {
        signal(SIGPIPE, SIG_IGN)
        // More than a pipe holds: the write is still going when the helper closes its end.
        let (outcome, printed) = try run(["sh", "-c", "exec 0<&-; echo closed"], input: String(repeating: "k", count: 256 << 10))
        #expect(outcome.ending == .finished(.exited(0)) && !outcome.inputTaken && printed == "closed\n")
        #expect(throws: ProcessRunner.Failure.self) { try run(["/nonexistent/helper"]) }
    }
}

/// `readExactly`: a whole buffer, or why not.
@Suite struct ReadExactlyTests {
    func pair() -> (FileDescriptor, FileDescriptor) {
        var fds: [Int32] = [0, 0]
        _ = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds)
        let reader = FileDescriptor(owning: fds[0], path: "reader")
        reader.setNonBlocking()
        return (reader, FileDescriptor(owning: fds[1], path: "writer"))
    }

    @Test func pieceByPieceFillsTheBuffer() throws {
        let (reader, writer) = pair()
        try writer.writeAll("abc")
        try writer.writeAll("defg")
        var buffer = [UInt8](repeating: 0, count: 6)
        try buffer.withUnsafeMutableBytes { raw in
            try reader.readExactly(raw, deadline: Deadline(after: 5))
        }
        #expect(buffer == Array("abcdef".utf8))
    }

    @Test func aPeerThatLeavesPartWayIsAShortRead() throws {
        var (reader, writer): (FileDescriptor, FileDescriptor?) = pair()
        try writer!.writeAll("ab")
        writer = nil
        var buffer = [UInt8](repeating: 0, count: 4)
        #expect(throws: FileDescriptor.ExactReadFailure.closed(received: 2)) {
            try buffer.withUnsafeMutableBytes { raw in try reader.readExactly(raw, deadline: Deadline(after: 5)) }
        }
        _ = reader
    }

    @Test func aPeerThatStopsSendingCostsTheDeadline() throws {
        let (reader, writer) = pair()
        try writer.writeAll("ab")
        var buffer = [UInt8](repeating: 0, count: 4)
        #expect(throws: FileDescriptor.ExactReadFailure.timedOut) {
            try buffer.withUnsafeMutableBytes { raw in try reader.readExactly(raw, deadline: Deadline(after: 0.2)) }
        }
        let slow = WaitClock(now: { 100 }, sleep: { _ in })
        #expect(Deadline(after: 5, clock: slow).remaining == 5 && !Deadline(after: 5, clock: slow).hasPassed)
        #expect(Deadline(after: 0, clock: slow).hasPassed && Deadline(after: 3, clock: slow).slice(atMost: 1) == 1)
    }
}
