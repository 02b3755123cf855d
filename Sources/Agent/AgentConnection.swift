import SystemIO
import VaultCore

/// One client: its request as the bytes come, then its answer as the client takes it.
final class AgentConnection {
    let descriptor: FileDescriptor
    var request = FrameAssembler(kind: .request)
    /// The answer's frame once it is made, and how much of it the client has taken.
    var answer: SecretBytes?
    var answerSent = 0
    /// When the connection is dropped if it has not moved on by then.
    var deadline: Double
    /// When bytes last moved either way: the idlest connection makes room when all are taken.
    var lastProgress: Double
    /// A `watch`: once its answer is taken, the connection stays open as a watcher.
    var becomesWatcher = false
    private(set) var isFinished = false

    init(descriptor: FileDescriptor, now: Double, firstByteWait: Double) {
        self.descriptor = descriptor
        self.deadline = now + firstByteWait
        self.lastProgress = now
    }

    var interest: Poller.Interest { answer == nil ? .read : .write }

    /// Done with: its secrets go now, its socket closes once the loop lets go of it.
    func finish() {
        isFinished = true
        answer = nil
        request = FrameAssembler(kind: .request)
    }
}
