import Agent
import VaultCore

/// The session side of the door: whether an unlocked session holds the vault, requests through
/// it (its PIN asked after an idle lock), what it answered kept for the command, and a chat's
/// watch on it.
extension VaultAccess {
    /// Whether an unlocked session holds this vault; prompts only for a PIN. A session that answers
    /// with a rollback or an untrusted socket is an error.
    /// Asked anew each time (a chat stops when its session locks), until no session was found.
    /// An idle-locked session with a PIN asks for it (on a terminal) and opens again.
    public func sessionIsOpen() throws -> Bool {
        guard !noSession, exists, let agent else { return false }
        do throws(AgentError) {
            let status = try agent.status()
            let unlocked = status.unlocked || (status.pinTriesLeft.map { reopenWithPIN(agent, triesLeft: $0, of: status.pinTries ?? $0) } ?? false)
            if !unlocked { noSession = true }
            return unlocked
        } catch {
            return try sessionFailure(error)
        }
    }

    /// Runs a request through the session; nil when there is none to ask. The session is
    /// resolved once per command: after a request found none, no other is sent. A session
    /// locked while idle is opened again with its PIN first, when it has one.
    func throughSession<T>(_ request: (AgentClient) throws(AgentError) -> T) throws -> T? {
        guard !noSession, exists, let agent else { return nil }
        var reopened = false
        while true {
            do throws(AgentError) {
                let answer = try request(agent)
                answeredBySession = true
                return answer
            } catch {
                if case .lockedWithPIN(let left, let tries) = error, !reopened, reopenWithPIN(agent, triesLeft: left, of: tries) {
                    reopened = true
                    continue
                }
                _ = try sessionFailure(error)
                return nil
            }
        }
    }

    /// For a chat whose key came from the session: whether the session is still open, seen
    /// before each turn on one watch connection the agent closes at lock (no round trip per
    /// turn; the turn is written to it as a use). A change the agent tells of drops what was
    /// kept. A closed watch is opened again once (the agent may have dropped it); an
    /// idle-locked session with a PIN asks for it, as the session's path does.
    public func sessionStillOpen() -> Bool {
        if let watch = sessionWatch {
            let event = watch.look()
            if event != .closed {
                if event == .changed { kept = nil }
                watch.turn()
                return true
            }
            sessionWatch = nil
            kept = nil
        }
        return watchSession()
    }

    /// Opens the watch: the agent answers it only while the session is unlocked.
    private func watchSession() -> Bool {
        guard exists, let agent else { return false }
        if watchUnsupported { return (try? sessionIsOpen()) == true }
        var reopened = false
        while true {
            do throws(AgentError) {
                sessionWatch = try agent.watch()
                return true
            } catch {
                switch error {
                case .lockedWithPIN(let left, let tries) where !reopened:
                    guard reopenWithPIN(agent, triesLeft: left, of: tries) else { return false }
                    reopened = true
                case .failed:
                    // An agent from before watches (a session unlocked before an update): a
                    // status per turn, as then.
                    watchUnsupported = true
                    return (try? sessionIsOpen()) == true
                default:
                    return false
                }
            }
        }
    }

    /// Asks for the PIN of an idle-locked session until it opens, the user presses Enter,
    /// or the agent wiped the PIN; false sends the command on to the passphrase.
    func reopenWithPIN(_ agent: AgentClient, triesLeft: Int, of tries: Int) -> Bool {
        if pinDeclined { return false }
        // Wrong PINs add up over the PIN's life: ones the user did not type are worth knowing of.
        if triesLeft < tries {
            let wrong = tries - triesLeft
            ui.note("\(wrong) wrong PIN\(wrong == 1 ? " was" : "s were") typed since the PIN was set; \(triesLeft) \(triesLeft == 1 ? "try" : "tries") left")
        }
        var triesLeft = triesLeft
        while triesLeft > 0 {
            guard let pin = try? ui.ask(.pin) else {
                pinDeclined = true
                return false
            }
            switch Result(catching: { () throws(AgentError) in try agent.unlockWithPIN(pin) }) {
            case .success:
                return true
            case .failure(.wrongPIN(let left)):
                triesLeft = left
                ui.note(left > 0 ? "wrong PIN (\(left) \(left == 1 ? "try" : "tries") left)"
                                              : "wrong PIN; the agent wiped the PIN after too many wrong tries, so the passphrase is needed")
            case .failure(let error):
                ui.note("the PIN cannot open the session (\(error)); asking for the passphrase")
                pinDeclined = true
                return false
            }
        }
        return false
    }

    /// No session (not running, locked, or no longer opening the vault) means "ask the
    /// passphrase"; another user's socket folder is warned about and passed over.
    func sessionFailure(_ error: AgentError) throws -> Bool {
        switch error {
        case .notRunning, .locked, .lockedWithPIN, .wrongKey:
            noSession = true
            return false
        case .refused(let failure):
            noSession = true
            warn("the session is not used: \(failure.message)")
            return false
        default: throw error
        }
    }

    /// The session's answer for a command, in one round trip, or nil without a session; never
    /// prompts: the vault's settings and one key (`nameFromSettings`: the vault's `key`
    /// setting, when set, names the key instead of `name`), and the conversation keys, which
    /// are kept for the rest of the command (the history, the budget) with the settings.
    public func sessionSettingsAndKey(name: String, nameFromSettings: Bool, conversationKeys: Bool = false) throws
        -> (settings: [String: String], name: String, key: StoredKey?)? {
        let request = { (agent: AgentClient) throws(AgentError) in
            try agent.sessionAnswer(name: name, nameFromSettings: nameFromSettings, markUsed: true, conversationKeys: conversationKeys)
        }
        guard let answer = try throughSession(request) else {
            return nil
        }
        kept = KeptAnswer(settings: answer.settings, conversationKeys: answer.conversationKeys)
        return (answer.settings, answer.name, answer.key)
    }

    /// The vault's settings from an unlocked session, or nil without one; never prompts. Asked
    /// once per command, again after a change (`apply`, or the chat's watch saw one).
    public func sessionSettings() throws -> [String: String]? {
        if let settings = kept?.settings { return settings }
        guard let settings = try throughSession({ agent throws(AgentError) in try agent.settings() }) else { return nil }
        kept = KeptAnswer(settings: settings, conversationKeys: kept?.conversationKeys)
        return settings
    }

    /// The conversation keys from an unlocked session (kept like the settings), or nil without one.
    public func sessionConversationKeys() throws -> [SecretBytes]? {
        if let keys = kept?.conversationKeys { return keys }
        guard let keys = try throughSession({ agent throws(AgentError) in try agent.conversationKeys() }) else { return nil }
        kept = KeptAnswer(settings: kept?.settings, conversationKeys: keys)
        return keys
    }
}
