import SystemIO
import VaultCore

/// The PIN: set while the session is open, tried after an idle lock, counted and slowed down
/// here (the only place that can count), and forgotten on every event that ends it.
extension AgentServer {
    func pinOperation(_ operation: AgentProtocol.Operation, _ request: AgentMessage) -> AgentMessage {
        switch operation {
        case .setPIN: return setPIN(request)
        case .unlockWithPIN: return unlockWithPIN(request)
        default:
            let had = pinUnlock != nil
            forgetPIN()
            if had { log("the PIN was forgotten on request") }
            endIfNothingLeft()
            return AgentMessage(code: 0)
        }
    }

    func forgetPIN() {
        pinUnlock = nil
        pinDataKeyCheck = nil
        pinTriesLeft = 0
    }

    private func setPIN(_ request: AgentMessage) -> AgentMessage {
        guard let document else { return Self.error(.locked, "the session is locked: a PIN is set while it is unlocked") }
        guard let pin = request.secret(.pin), PINWrappedKey.isAllowed(pin) else {
            return Self.error(.badRequest, "a PIN has \(PINWrappedKey.lengths.lowerBound) to \(PINWrappedKey.lengths.upperBound) characters")
        }
        let tries = Int(min(max(request.number(.pinTries) ?? 3, 1), 10))
        do {
            pinUnlock = try PINWrappedKey(wrapping: document.sessionKey, pin: pin)
            pinDataKeyCheck = try document.dataKeyCheck()
        } catch {
            return Self.error(.failed, "\(error)")
        }
        pinTries = tries
        pinTriesLeft = tries
        lastActivity = Clock.bootSeconds()
        log("a PIN was set (\(tries) wrong tries wipe it); it opens the session again after an idle lock")
        return status()
    }

    private func unlockWithPIN(_ request: AgentMessage) -> AgentMessage {
        guard let wrapped = pinUnlock else { return Self.error(.locked, "no PIN is set for this session") }
        guard let pin = request.secret(.pin) else { return Self.error(.badRequest, "unlockWithPIN needs the PIN") }
        // Whoever asks, and however many clients at once, guesses come one per interval.
        let wait = lastPINAttempt + Limits.pinInterval - Clock.bootSeconds()
        if wait > 0 { Clock.sleep(wait) }
        defer { lastPINAttempt = Clock.bootSeconds() }
        let opened: VaultDocument.SessionKey?
        do { opened = try wrapped.open(pin: pin) } catch { return Self.error(.failed, "\(error)") }
        guard let sessionKey = opened else {
            pinTriesLeft -= 1
            var response = Self.error(.wrongPIN, pinTriesLeft > 0 ? "wrong PIN" : "wrong PIN; it was tried \(pinTries) times and is wiped")
            response.add(.pinTriesLeft, number: Int64(max(0, pinTriesLeft)))
            if pinTriesLeft <= 0 {
                log("\(pinTries) wrong PINs: the PIN-wrapped key was wiped; the passphrase is needed")
                forgetPIN()
                endIfNothingLeft()
            }
            return response
        }
        if document == nil {
            do {
                let vault = try file.readFile()
                let opened = try VaultDocument.open(vault, path: store.path, key: sessionKey)
                // A rekey keeps the passphrase slot's key: the PIN would open the new data key.
                guard let check = pinDataKeyCheck, try opened.dataKeyCheck().isEqual(to: check) else { throw VaultError.wrongPassphrase }
                document = opened
                file.remember(vault)
            } catch {
                // The vault changed under another key (passwd elsewhere): the PIN can open nothing.
                log("the PIN's key no longer opens the vault (\(error)); the PIN is forgotten")
                forgetPIN()
                endIfNothingLeft()
                return Self.error(.locked, "the vault's key changed since the PIN was set; the passphrase is needed")
            }
        }
        // A right PIN does not reset the count: wrong ones add up over the PIN's life, so
        // nobody gets pin_tries guesses again after each time the user unlocks.
        lastActivity = Clock.bootSeconds()
        log("opened again with the PIN (\(pinTriesLeft) of \(pinTries) tries left)")
        return status()
    }

    /// A session with neither a vault nor a PIN serves nothing: the agent exits, as after an idle lock.
    func endIfNothingLeft() {
        guard document == nil, pinUnlock == nil, unlockedAt != 0 else { return }
        log("nothing left to serve: exiting")
        stopRequested = true
    }
}
