import AgeFormat
import CSystemShims
import GoogleKeys
import Settings
import SystemIO
import VaultCore

/// What the agent does for each request, and how it keeps the vault file underneath in step.
extension AgentServer {
    // MARK: Operations

    func perform(_ operation: AgentProtocol.Operation, _ request: AgentMessage) -> AgentMessage {
        switch operation {
        case .status:
            return status()  // never extends the session
        case .keyNames:
            return keyNames()  // for completion: no secret, and no use
        case .unlock:
            return unlock(request)
        case .followKey:
            return followKey(request)
        case .setPIN, .unlockWithPIN, .forgetPIN:
            return pinOperation(operation, request)
        case .putToken, .takeToken:
            guard document != nil else { return lockedAnswer() }
            return tokenOperation(operation, request)
        case .lock:
            stopRequested = true
            // Closed before the answer goes: once `lock` returns, every chat can see it.
            watchers.closeAll()
            log("locked on request")
            return AgentMessage(code: 0)
        case .watch:
            // No use of the session: a chat that only watches lets it lock when idle.
            return document == nil ? lockedAnswer() : AgentMessage(code: 0)
        case .contents:
            // Whole payloads no longer travel: each command asks only for what it needs.
            return Self.error(.badRequest, "this agent answers narrow requests only (key, keySummaries, settings, conversationKeys, change)")
        case .toolSecret, .toolSecretSummaries:
            return toolSecretOperation(operation, request)
        case .key, .keySummaries, .settings, .conversationKeys, .change, .rekey, .settingsAndKey, .identity, .signShare, .signSecretShare, .agree, .sharingRecords,
             .decapsulate:
            guard document != nil else { return lockedAnswer() }
            let answer = switch operation {
            case .key: key(request)
            case .settingsAndKey: settingsAndKey(request)
            case .keySummaries: narrow { .init(field: .keySummaries, bytes: NarrowCoding.encode($0.contents.summaries)) }
            case .settings: narrow { .init(field: .settings, bytes: NarrowCoding.encode($0.contents.settings)) }
            case .conversationKeys: conversationKeys()
            case .change: change(request)
            case .identity, .signShare, .signSecretShare, .agree, .decapsulate: sharing(operation, request)
            case .sharingRecords: narrow { .init(field: .sharingRecord, bytes: NarrowCoding.encode($0.contents.sharing)) }
            default: rekey()
            }
            // Only a request that used the vault counts: a refused write leaves the idle clock alone.
            if answer.code == 0 { lastActivity = Clock.bootSeconds() }
            return answer
        }
    }

    /// "Locked", with the PIN's tries left when a PIN can open it again: the client asks for
    /// the PIN without another round trip.
    func lockedAnswer() -> AgentMessage {
        var response = Self.error(.locked, "the session is locked")
        addPINState(to: &response)
        return response
    }

    /// While a PIN is set: its tries left, of how many.
    private func addPINState(to response: inout AgentMessage) {
        guard pinUnlock != nil else { return }
        response.add(.pinTriesLeft, number: Int64(pinTriesLeft))
        response.add(.pinTries, number: Int64(pinTries))
    }

    func status() -> AgentMessage {
        var response = AgentMessage(code: 0)
        response.add(.state, number: document == nil ? 0 : 1)
        response.add(.vaultPath, text: paths.vaultPath)
        response.add(.pid, number: Int64(ProcessIdentity.current))
        let now = Clock.now()
        let elapsedTotal = Clock.bootSeconds() - startedMonotonic
        if document != nil {
            let elapsedIdle = Clock.bootSeconds() - lastActivity
            response.add(.unlockedAt, number: unlockedAt)
            response.add(.idleDeadline, number: now + Int64(max(0, timeouts.idle - elapsedIdle)))
        }
        if document != nil || pinUnlock != nil {
            response.add(.maxDeadline, number: now + Int64(max(0, timeouts.max - elapsedTotal)))
        }
        addPINState(to: &response)
        return response
    }

    private func unlock(_ request: AgentMessage) -> AgentMessage {
        guard document == nil else {
            // An open session is left as it is: not its key, not its limits.
            log("an unlock for the open session changed nothing")
            return status()
        }
        let sessionKey: VaultDocument.SessionKey
        if let kek = request.secret(.keyEncryptionKey) {
            sessionKey = .keyEncryptionKey(kek)
        } else if let dataKey = request.secret(.dataKey) {
            sessionKey = .dataKey(dataKey)
        } else {
            return Self.error(.badRequest, "unlock needs the key-encryption key or the data key")
        }
        let defaults = Timeouts.settingsDefaults
        let idle = Double(min(max(request.number(.idleSeconds) ?? Int64(defaults.idle), 1), Self.longestSession))
        let maximum = Double(min(max(request.number(.maxSeconds) ?? Int64(defaults.max), 1), Self.longestSession))
        do {
            let file = try readFile()
            document = try VaultDocument.open(file, path: store.path, key: sessionKey)
            remember(file)
        } catch let error as VaultError {
            return failure(error)
        } catch is AgentLocked {
            return Self.error(.locked, "the session ended")
        } catch {
            return Self.error(.failed, "\(error)")
        }
        // A passphrase unlock after an idle lock starts a new session: the old PIN ends with it.
        forgetPIN()
        timeouts = Timeouts(idle: max(1, idle), max: max(1, maximum))
        unlockedAt = Clock.now()
        startedMonotonic = Clock.bootSeconds()
        lastActivity = startedMonotonic
        log("unlocked \(paths.vaultPath) (idle \(Int(timeouts.idle)) s, at most \(Int(timeouts.max)) s)")
        return status()
    }

    /// passwd or recover beside the session: the vault now opens with another key-encryption
    /// key. The session follows it; its limits stay as they were.
    private func followKey(_ request: AgentMessage) -> AgentMessage {
        // Whatever follows, the PIN wrapped the old key: it ends here, also when locked.
        forgetPIN()
        guard let kek = request.secret(.keyEncryptionKey) else { return Self.error(.badRequest, "followKey needs the key-encryption key") }
        guard document != nil else {
            endIfNothingLeft()
            return Self.error(.locked, "the session is locked")
        }
        return answering {
            let file = try readFile()
            let opened = try VaultDocument.open(file, path: store.path, key: VaultDocument.SessionKey.keyEncryptionKey(kek))
            opened.contents.recordUse(uses)
            document = opened
            remember(file)
            watchers.tellChanged()
            log("follows the vault's new key-encryption key at generation \(file.generation); a PIN it had is forgotten")
            return status()
        }
    }

    private func keyNames() -> AgentMessage {
        guard let document else { return Self.error(.locked, "the session is locked") }
        var response = AgentMessage(code: 0)
        response.add(.keyNames, text: document.contents.keys.map(\.name).joined(separator: "\n"))
        response.add(.keyKinds, text: document.contents.keys.map(\.secret.googleKeyKind.rawValue).joined(separator: "\n"))
        response.add(.keyLinks, text: document.contents.keys.map { key in
            document.contents.links[key.name].map { link in
                "\(link.reference) \(link.version) \(link.fetched)"
                    + (link.rotation.map { " \($0.previousVersion) \($0.retireKey.isEmpty ? "-" : $0.retireKey) \($0.finishAfter)" } ?? "")
            } ?? "-"
        }.joined(separator: "\n"))
        return response
    }

    /// One key's value and dates; with `markUsed`, its use is recorded.
    private func key(_ request: AgentMessage) -> AgentMessage {
        guard let name = request.text(.keyName) else { return Self.error(.badRequest, "key needs a key name") }
        return answering {
            try refreshIfChanged()
            guard let document else { return Self.error(.locked, "the session is locked") }
            guard let stored = document.contents.key(named: name) else { return Self.noSuchKey(name) }
            var response = AgentMessage(code: 0)
            addKey(stored, in: document, request, to: &response)
            return response
        }
    }

    /// The vault's settings and one key's value and dates (none when the vault lacks it); the
    /// key's use is recorded with `markUsed`.
    private func settingsAndKey(_ request: AgentMessage) -> AgentMessage {
        guard let fallback = request.text(.keyName) else { return Self.error(.badRequest, "settingsAndKey needs a key name") }
        return answering {
            try refreshIfChanged()
            guard let document else { return Self.error(.locked, "the session is locked") }
            let settings = document.contents.settings
            let name = request.number(.keyFromSettings) == 1 ? settings[Setting.key.name] ?? fallback : fallback
            var response = AgentMessage(code: 0)
            response.add(.settings, secret: SecretBytes(copying: NarrowCoding.encode(settings)))
            response.add(.keyName, text: name)
            if request.number(.withConversationKeys) == 1 { response.add(.conversationKeys, secret: Self.joined(document.contents.conversationKeys)) }
            guard let stored = document.contents.key(named: name) else { return response }
            addKey(stored, in: document, request, to: &response)
            return response
        }
    }

    /// A key's value and dates for `key` and `settingsAndKey`; with `markUsed`, its use is
    /// recorded first, so the answer carries the new last use.
    private func addKey(_ stored: StoredKey, in document: VaultDocument, _ request: AgentMessage, to response: inout AgentMessage) {
        if request.number(.markUsed) == 1 {
            uses[stored.name] = Clock.now()
            document.contents.recordUse([stored.name: uses[stored.name]!])
        }
        response.add(.keyValue, secret: stored.secret)
        response.add(.created, number: stored.created)
        response.add(.updated, number: stored.updated)
        response.add(.lastUsed, number: document.contents.key(named: stored.name)?.lastUsed ?? stored.lastUsed)
        if let record = document.contents.sharing[stored.name], record.follow != nil {
            response.add(.sharingRecord, secret: SecretBytes(copying: record.encoded()))
        }
        if let link = document.contents.links[stored.name] { NarrowCoding.add(link, to: &response) }
    }

    struct NarrowField {
        let field: AgentProtocol.Tag
        let bytes: [UInt8]
    }

    /// An answer of one field computed from the current document: nothing of a key's value.
    private func narrow(_ body: (VaultDocument) -> NarrowField) -> AgentMessage {
        answering {
            try refreshIfChanged()
            guard let document else { return Self.error(.locked, "the session is locked") }
            let answer = body(document)
            var response = AgentMessage(code: 0)
            response.add(answer.field, secret: SecretBytes(copying: answer.bytes))
            return response
        }
    }

    private func conversationKeys() -> AgentMessage {
        answering {
            try refreshIfChanged()
            guard let document else { return Self.error(.locked, "the session is locked") }
            var response = AgentMessage(code: 0)
            response.add(.conversationKeys, secret: Self.joined(document.contents.conversationKeys))
            return response
        }
    }

    /// The conversation keys, 32 bytes each, current first, in one secret field.
    static func joined(_ keys: [SecretBytes]) -> SecretBytes {
        let joined = SecretBytes(count: 32 * keys.count)
        joined.withUnsafeMutableBytes { out in
            for (index, key) in keys.enumerated() {
                key.withUnsafeBytes { (out.baseAddress! + 32 * index).copyMemory(from: $0.baseAddress!, byteCount: 32) }
            }
        }
        return joined
    }

    /// One change, made under the vault's lock on the current file, then saved.
    private func change(_ request: AgentMessage) -> AgentMessage {
        guard let change = NarrowCoding.change(in: request) else { return Self.error(.badRequest, "malformed change") }
        var outcome: VaultChange.Outcome?
        return answering {
            var response = try locked({ document in
                do throws(VaultError) {
                    outcome = try change.apply(to: document.contents)
                } catch .keyNotFound(let name) {
                    return Self.noSuchKey(name)
                } catch {
                    var refused = Self.error(.changeRefused, "\(error)")
                    NarrowCoding.add(refusal: error, to: &refused)
                    return refused
                }
                document.contents.recordUse(uses)
                return nil
            }, backup: .previous)
            if let outcome {
                if let masked = outcome.masked { response.add(.masked, text: masked) }
                response.add(.replaced, number: outcome.replaced ? 1 : 0)
            }
            return response
        }
    }

    /// The sharing identity's uses; its secrets never leave the agent.
    private func sharing(_ operation: AgentProtocol.Operation, _ request: AgentMessage) -> AgentMessage {
        answering {
            try refreshIfChanged()
            if operation == .identity, document?.contents.identity == nil {
                // Made on first use, here: its secrets are born in the agent and stay in it.
                guard let label = request.text(.identityLabel) else { return Self.error(.badRequest, "identity needs a default label") }
                let made = try locked({ document in
                    try VaultChange.identity(label: label, relabel: false).apply(to: document.contents)
                    document.contents.recordUse(uses)
                    return nil
                }, backup: .previous)
                guard made.code == 0 else { return made }
            }
            guard let document else { return Self.error(.locked, "the session is locked") }
            guard let identity = document.contents.identity else { return Self.error(.failed, "the vault has no sharing identity yet") }
            var response = AgentMessage(code: 0)
            switch operation {
            case .identity:
                response.add(.recipient, secret: SecretBytes(copying: try X25519.publicKey(of: identity.agreementSecret)))
                response.add(.signingKey, secret: SecretBytes(copying: try Ed25519.keyPair(seed: identity.signingSeed).publicKey))
                response.add(.identityLabel, text: identity.label)
                if let hybrid = try hybridIdentity(of: identity) { response.add(.hybridRecipient, secret: SecretBytes(copying: hybrid.recipient.publicKey)) }
            case .decapsulate:
                return try Self.decapsulations(try hybridIdentity(of: identity), request)
            case .signShare:
                return try signNextShare(request)
            case .signSecretShare:
                return try signNextSecretShare(request)
            default:
                guard let shares = request.secret(.ephemeralShare), shares.count > 0, shares.count % X25519.keyBytes == 0,
                      shares.count / X25519.keyBytes <= X25519Identity.stanzaLimit else {
                    return Self.error(.badRequest, "agree needs 1 to \(X25519Identity.stanzaLimit) shares of 32 bytes")
                }
                response.add(.sharedSecret, secret: try Self.agreements(identity.agreementSecret, shares))
            }
            return response
        }
    }

    static func noSuchKey(_ name: String) -> AgentMessage {
        var response = error(.noSuchKey, "no key named '\(name)' in the vault")
        response.add(.keyName, text: name)
        return response
    }

    /// A secret for other tools the vault lacks: refused as a change would be (refusal 6).
    static func noSuchSecret(_ name: String) -> AgentMessage {
        var response = error(.changeRefused, "no secret named '\(name)' in the vault")
        NarrowCoding.add(refusal: .secretNotFound(name: name), to: &response)
        return response
    }

    private func rekey() -> AgentMessage {
        var code: SecretBytes?
        var kept: [String] = []
        var dropped: [String] = []
        return answering {
            var response = try locked({ document in
                code = try document.rekey()
                kept = document.file.additionalSlots.map(\.kindName)
                dropped = document.droppedSlots
                return nil
            }, backup: .new)
            if response.code == 0 { forgetPIN() }
            if let code { response.add(.recoveryCode, secret: code) }
            for kind in kept { response.add(.slotKept, name: kind) }
            for warning in dropped { response.add(.slotDropped, name: warning) }
            return response
        }
    }

    /// The answer `body` gives, or the error it threw, as the client should see it.
    func answering(_ body: () throws -> AgentMessage) -> AgentMessage {
        do {
            return try body()
        } catch let error as VaultError {
            return failure(error)
        } catch is AgentLocked {
            return Self.error(.locked, "the session ended")
        } catch {
            return Self.error(.failed, "\(error)")
        }
    }

    /// A write under the vault's lock: the file is re-read first (another writer may have
    /// been there), `change` edits the document or answers instead, then the save.
    func locked(_ change: (VaultDocument) throws -> AgentMessage?, backup: VaultStore.Backup) throws -> AgentMessage {
        try store.withExclusiveLock { session in
            guard let bytes = try session.read() else { throw VaultError.notFound(path: store.path) }
            try adopt(try file.checked(file.parse(bytes)))
            guard let document else { return Self.error(.locked, "the session is locked") }
            if let answer = try change(document) { return answer }
            try file.save(document, in: session, backup: backup)
            // Each value the change brought lives in its request's frame: one buffer again.
            document.replaceContents(try document.contents.compacted(path: store.path))
            watchers.tellChanged()
            var response = AgentMessage(code: 0)
            response.add(.generation, number: Int64(document.file.generation))
            return response
        }
    }

    // MARK: The file underneath

    private func readFile() throws -> VaultFile { try file.readFile() }

    private func remember(_ vault: VaultFile) { file.remember(vault) }

    /// Another writer (or a sync from another machine) may have changed the file: reload it.
    /// A file and records that lstat shows unchanged since the last read are not read again
    /// (a swap, a copy over it, a rollback or a record raised elsewhere all change them).
    func refreshIfChanged() throws {
        guard let current = document else { return }
        let signature = FileSignature(paths: [store.path] + file.rollback.recordPaths(for: current.file))
        if let signature, signature == fileSignature { return }
        fileSignature = nil
        try adopt(try readFile())
        fileSignature = signature
    }

    private func adopt(_ file: VaultFile) throws {
        guard let current = document else { return }
        if file.vaultID == current.file.vaultID && file.generation == current.file.generation { return }
        guard file.vaultID != nil, file.vaultID == current.file.vaultID else {
            // Another vault, or an older format's copy, put in its place: this session is over,
            // and the commands' own checks judge the file.
            log("the vault file was replaced by another vault or an older format: wiping and exiting")
            wipe(persist: false)
            stopRequested = true
            throw AgentLocked()
        }
        if file.generation < current.file.generation {
            throw VaultError.rolledBack(path: store.path, generation: file.generation, seen: current.file.generation)
        }
        guard let reloaded = try? VaultDocument.open(file, path: store.path, key: current.sessionKey) else {
            // The passphrase changed underneath: this session can no longer follow the vault.
            log("the vault was changed by a writer with another passphrase; locking")
            wipe(persist: false)
            stopRequested = true
            throw VaultError.wrongPassphrase
        }
        reloaded.contents.recordUse(uses)
        document = reloaded
        remember(file)
        watchers.tellChanged()
        log("reloaded \(store.path) at generation \(file.generation)")
    }

    private func failure(_ error: VaultError) -> AgentMessage {
        switch error {
        case .rolledBack(_, let generation, let seen):
            var response = Self.error(.rolledBack, "the vault went back from generation \(seen) to \(generation)")
            response.add(.generation, number: Int64(generation))
            response.add(.seenGeneration, number: Int64(seen))
            return response
        case .wrongPassphrase:
            return Self.error(.wrongKey, "the key does not open the vault")
        case .anotherVault:
            // As in `adopt`: this session is over, and the command's own check of the file
            // says what happened ("another vault was put in its place").
            log("another vault was put at \(store.path): wiping and exiting")
            wipe(persist: false)
            stopRequested = true
            return Self.error(.locked, "the session ended: another vault was put at \(store.path)")
        default:
            return Self.error(.failed, "\(error)")
        }
    }
}
