import SystemIO

/// The chats watching the session (`watch`): each connection stays open after its answer, is
/// told of a change to the vault with one byte, and is closed when the session locks, so a
/// chat learns of a lock or a change without a round trip per turn. A byte a chat writes is a
/// turn: a use of the session, as a request would have been.
final class SessionWatchers {
    /// Beyond it, the oldest watch is closed; its chat asks `status` once and watches again.
    static let limit = 16

    private(set) var descriptors: [FileDescriptor] = []

    func add(_ descriptor: FileDescriptor) {
        if descriptors.count >= Self.limit { descriptors.removeFirst() }
        descriptors.append(descriptor)
    }

    /// Reads what the ready watchers wrote; true when any wrote (a chat turn). One that left,
    /// or wrote more than a chat ever does at once, is closed.
    func takeTurns(ready: [FileDescriptor]) -> Bool {
        var turned = false
        var buffer = [UInt8](repeating: 0, count: 64)
        for descriptor in ready {
            let read = buffer.withUnsafeMutableBytes { bytes in Result { () throws(SystemError) in try descriptor.readAvailable(into: bytes) } }
            switch read {
            case .success(nil): continue
            case .success(let count?) where count > 0 && count < buffer.count: turned = true
            default: descriptors.removeAll { $0 === descriptor }
            }
        }
        return turned
    }

    /// Tells every watcher the vault changed; one whose socket takes nothing more is closed
    /// (its chat then asks again).
    func tellChanged() {
        let byte = [AgentProtocol.watchChanged]
        descriptors.removeAll { descriptor in
            let written = byte.withUnsafeBytes { bytes in Result { () throws(SystemError) in try descriptor.writeSome(bytes) } }
            guard case .success(let count?) = written, count == 1 else { return true }
            return false
        }
    }

    /// The session locked: every watch closes now, before any answer to the lock is sent.
    func closeAll() { descriptors = [] }
}
