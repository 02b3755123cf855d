import SystemIO
import VaultCore

/// What a command needs from an unlocked session, in one answer (`AgentClient.sessionAnswer`).
public struct SessionAnswer {
    /// The vault's own settings.
    public let settings: [String: String]
    /// The key looked up (the vault's `key` setting, when asked for and set), and its value and
    /// dates; nil when the vault has none by that name.
    public let name: String
    public let key: StoredKey?
    /// The keys that open saved conversations, current first; nil from an agent before them.
    public let conversationKeys: [SecretBytes]?
}

/// A chat's watch on its session: one connection the agent keeps open (`watch`). Before each
/// turn the chat looks at it without waiting: the agent closed it (the session locked), or
/// wrote that the vault changed, or nothing happened. The turn itself is one byte written,
/// never answered: the session counts it as a use, as it did the request a turn used to make.
public final class SessionWatch {
    public enum Event: Equatable {
        /// Nothing since the last look.
        case unchanged
        /// The vault changed (its settings, its keys): what the session answered is old.
        case changed
        /// The agent closed the watch: the session locked (or the agent dropped the watch).
        case closed
    }

    let connection: FileDescriptor

    init(connection: FileDescriptor) {
        connection.setNonBlocking()
        self.connection = connection
    }

    /// What happened since the last look, without waiting.
    public func look() -> Event {
        var changed = false
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let read = buffer.withUnsafeMutableBytes { bytes in Result { () throws(SystemError) in try connection.readAvailable(into: bytes) } }
            switch read {
            case .success(nil): return changed ? .changed : .unchanged
            case .success(let count?) where count > 0: changed = true
            default: return .closed
            }
        }
    }

    /// A turn of the chat: a use of the session. False when the agent is gone.
    @discardableResult
    public func turn() -> Bool {
        let written = [UInt8(0x54)].withUnsafeBytes { bytes in Result { () throws(SystemError) in try connection.writeSome(bytes) } }
        if case .success(let count?) = written, count == 1 { return true }
        return false
    }
}
