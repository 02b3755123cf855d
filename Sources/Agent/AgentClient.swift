import Glibc
import GoogleKeys
import SystemIO
import VaultCore

/// What `status` reports.
public struct AgentStatus: Sendable {
    public let unlocked: Bool
    public let vaultPath: String
    public let pid: Int32
    public let unlockedAt: Int64?
    public let idleDeadline: Int64?
    public let maxDeadline: Int64?
    /// Set while a PIN can open the session: the wrong tries it has left of `pinTries` (its end
    /// is `maxDeadline`).
    public var pinTriesLeft: Int? = nil
    public var pinTries: Int? = nil

    /// When the session locks: the nearer of the two deadlines.
    public var locksAt: Int64? { [idleDeadline, maxDeadline].compactMap { $0 }.min() }
}

/// Why a request to the agent failed.
public enum AgentError: Error, Equatable, Sendable {
    /// No agent answers for this vault.
    case notRunning
    /// The agent holds no vault.
    case locked
    /// A write was based on an older generation.
    case stale
    case rolledBack(generation: UInt64, seen: UInt64)
    case wrongKey
    /// The socket folder failed its checks.
    case refused(FileCheckFailure)
    /// Something answered that is not our agent, or not our uid.
    case untrusted(String)
    case failed(String)
    /// A change named a key the vault does not have.
    case noSuchKey(String)
    /// A change the vault's rules refuse (no earlier value to roll back to, a full vault).
    case changeRefused(VaultError)
    /// The agent runs but dropped the connection before answering (a flood of clients), also
    /// after the retries: never to be taken for "locked" or "no session".
    case busy
    /// A wrong PIN, with the tries left (0: the agent wiped the PIN).
    case wrongPIN(triesLeft: Int)
    /// Locked while idle, and its PIN opens it again (with this many wrong tries left).
    case lockedWithPIN(triesLeft: Int, of: Int)
}

/// A key's name, shape and Secret Manager link, without its value (`status`, doctor).
public typealias KeyShape = (name: String, kind: GoogleKeyKind, link: SecretLink?)

/// Talks to the agent of one vault: one connection per request.
public struct AgentClient: Sendable {
    public let paths: AgentPaths
    /// Long enough for a write that waits for the vault's lock.
    public var responseTimeout = 30.0

    public init(paths: AgentPaths) { self.paths = paths }

    /// The agent's status; `.notRunning` when none answers. Never extends the session.
    public func status() throws(AgentError) -> AgentStatus {
        let response = try request(AgentMessage(code: AgentProtocol.Operation.status.rawValue))
        let unlocked = response.number(.state) == 1
        return AgentStatus(unlocked: unlocked, vaultPath: response.text(.vaultPath) ?? paths.vaultPath,
                           pid: Int32(truncatingIfNeeded: response.number(.pid) ?? 0),
                           unlockedAt: response.number(.unlockedAt), idleDeadline: response.number(.idleDeadline),
                           maxDeadline: response.number(.maxDeadline), pinTriesLeft: response.number(.pinTriesLeft).map { Int($0) },
                           pinTries: response.number(.pinTries).map { Int($0) })
    }

    /// Hands the agent the passphrase slot's key-encryption key.
    public func unlock(kek: SecretBytes, idle: Double, max: Double) throws(AgentError) -> AgentStatus {
        try unlock(sessionKey: .keyEncryptionKey(kek), idle: idle, max: max)
    }

    /// Starts the session with the passphrase slot's key-encryption key or, for a vault an ssh
    /// slot opened, its data key.
    public func unlock(sessionKey: VaultDocument.SessionKey, idle: Double, max: Double) throws(AgentError) -> AgentStatus {
        var message = AgentMessage(code: AgentProtocol.Operation.unlock.rawValue)
        switch sessionKey {
        case .keyEncryptionKey(let kek): message.add(.keyEncryptionKey, secret: kek)
        case .dataKey(let key): message.add(.dataKey, secret: key)
        }
        message.add(.idleSeconds, number: Int64(idle))
        message.add(.maxSeconds, number: Int64(max))
        _ = try request(message)
        return try status()
    }

    /// The names of the keys, without their values; never extends the session.
    public func keyNames() throws(AgentError) -> [String] { try keySummary().map(\.name) }

    /// Each key's name and shape, without its value; never extends the session.
    public func keySummary() throws(AgentError) -> [KeyShape] {
        let response = try request(AgentMessage(code: AgentProtocol.Operation.keyNames.rawValue))
        let names = (response.text(.keyNames) ?? "").split(separator: "\n").map(String.init)
        let kinds = (response.text(.keyKinds) ?? "").split(separator: "\n").map { GoogleKeyKind(rawValue: String($0)) ?? .other }
        let links = (response.text(.keyLinks) ?? "").split(separator: "\n").map { line -> SecretLink? in
            let words = line.split(separator: " ")
            guard words.count == 3 || words.count == 6, let version = UInt64(words[1]), let fetched = Int64(words[2]) else { return nil }
            var link = SecretLink(reference: String(words[0]), version: version, fetched: fetched)
            if words.count == 6 {
                guard let previous = UInt64(words[3]), let finishAfter = Int64(words[5]) else { return nil }
                let rotation = LinkedRotation(previousVersion: previous, retireKey: words[4] == "-" ? "" : String(words[4]), finishAfter: finishAfter)
                guard rotation.isWellFormed else { return nil }
                link.rotation = rotation
            }
            return link
        }
        return names.enumerated().map { index, name in (name, index < kinds.count ? kinds[index] : .other, index < links.count ? links[index] : nil) }
    }

    /// One key with its dates (no earlier values), or nil when the vault has none by that
    /// name; `markUsed` records its use (and counts as use of the session).
    public func key(_ name: String, markUsed: Bool) throws(AgentError) -> StoredKey? {
        var message = AgentMessage(code: AgentProtocol.Operation.key.rawValue)
        message.add(.keyName, name: name)
        message.add(.markUsed, number: markUsed ? 1 : 0)
        let response: AgentMessage
        do { response = try request(message) } catch .noSuchKey { return nil }
        guard let value = response.secret(.keyValue), let created = response.number(.created), let updated = response.number(.updated) else {
            throw .untrusted("the agent's answer has no key")
        }
        var stored = StoredKey(name: name, secret: value, created: created, updated: updated, lastUsed: response.number(.lastUsed) ?? 0, previous: [])
        stored.followed = Self.followed(in: response)
        stored.link = NarrowCoding.link(in: response)
        return stored
    }

    /// The followed share file an answer with a key carries, when the key has one.
    static func followed(in response: AgentMessage) -> FollowedFile? {
        response.secret(.sharingRecord).flatMap { bytes in KeySharing(encoded: bytes.withUnsafeBytes { Array($0) })?.follow }
    }

    /// What a command needs from the session, in one round trip: the vault's settings, one key
    /// (the one the vault's `key` setting names when `nameFromSettings` and it is set, else
    /// `name`; its value nil when the vault has none by that name), and with `conversationKeys`
    /// the conversation keys (nil when not asked for, or from an agent that predates them).
    public func sessionAnswer(name: String, nameFromSettings: Bool, markUsed: Bool, conversationKeys wanted: Bool) throws(AgentError) -> SessionAnswer {
        var message = AgentMessage(code: AgentProtocol.Operation.settingsAndKey.rawValue)
        message.add(.keyName, name: name)
        message.add(.keyFromSettings, number: nameFromSettings ? 1 : 0)
        message.add(.markUsed, number: markUsed ? 1 : 0)
        if wanted { message.add(.withConversationKeys, number: 1) }
        let response = try request(message)
        guard let body = response.secret(.settings), let settings = body.withUnsafeBytes({ NarrowCoding.decodeSettings(Array($0)) }),
              let looked = response.text(.keyName) else {
            throw .untrusted("the agent's answer is malformed")
        }
        let conversationKeys = try response.secret(.conversationKeys).map { joined throws(AgentError) in try Self.conversationKeys(joined) }
        guard let value = response.secret(.keyValue) else { return SessionAnswer(settings: settings, name: looked, key: nil, conversationKeys: conversationKeys) }
        guard let created = response.number(.created), let updated = response.number(.updated) else { throw .untrusted("the agent's answer has no key") }
        var stored = StoredKey(name: looked, secret: value, created: created, updated: updated, lastUsed: response.number(.lastUsed) ?? 0, previous: [])
        stored.followed = Self.followed(in: response)
        stored.link = NarrowCoding.link(in: response)
        return SessionAnswer(settings: settings, name: looked, key: stored, conversationKeys: conversationKeys)
    }

    /// What may be shown of every key: names, masked values, kinds, dates.
    public func keySummaries() throws(AgentError) -> [KeySummary] {
        let response = try request(AgentMessage(code: AgentProtocol.Operation.keySummaries.rawValue))
        guard let body = response.secret(.keySummaries), let summaries = body.withUnsafeBytes({ NarrowCoding.decodeSummaries(Array($0)) }) else {
            throw .untrusted("the agent's answer is malformed")
        }
        return summaries
    }

    /// The vault's own settings.
    public func settings() throws(AgentError) -> [String: String] {
        let response = try request(AgentMessage(code: AgentProtocol.Operation.settings.rawValue))
        guard let body = response.secret(.settings), let settings = body.withUnsafeBytes({ NarrowCoding.decodeSettings(Array($0)) }) else {
            throw .untrusted("the agent's answer is malformed")
        }
        return settings
    }

    /// The conversation keys, current first.
    public func conversationKeys() throws(AgentError) -> [SecretBytes] {
        let response = try request(AgentMessage(code: AgentProtocol.Operation.conversationKeys.rawValue))
        guard let body = response.secret(.conversationKeys) else { throw .untrusted("the agent's answer is malformed") }
        return try Self.conversationKeys(body)
    }

    /// The conversation keys of an answer: 32 bytes each, current first, at least one.
    static func conversationKeys(_ body: SecretBytes) throws(AgentError) -> [SecretBytes] {
        guard body.count > 0, body.count % 32 == 0 else { throw .untrusted("the agent's answer is malformed") }
        return body.withUnsafeBytes { raw in
            stride(from: 0, to: raw.count, by: 32).map { SecretBytes(copying: UnsafeRawBufferPointer(rebasing: raw[$0..<$0 + 32])) }
        }
    }

    /// One change, saved by the agent under the vault's lock.
    public func apply(_ change: VaultChange) throws(AgentError) -> VaultChange.Outcome {
        var message = AgentMessage(code: AgentProtocol.Operation.change.rawValue)
        NarrowCoding.add(change, to: &message)
        let response = try request(message)
        return VaultChange.Outcome(masked: response.text(.masked), replaced: response.number(.replaced) == 1)
    }

    /// The sharing identity's public halves: the X25519 public key, the Ed25519 signing key, the
    /// hybrid post-quantum public key (nil for a classic identity), the label. The agent makes the
    /// identity first when the vault has none, labelled `defaultLabel`.
    public func sharingIdentity(defaultLabel: String) throws(AgentError) -> (agreementKey: [UInt8], signingKey: [UInt8], hybridKey: [UInt8]?, label: String) {
        var message = AgentMessage(code: AgentProtocol.Operation.identity.rawValue)
        message.add(.identityLabel, text: defaultLabel)
        let response = try request(message)
        guard let agreement = response.secret(.recipient), agreement.count == 32, let signing = response.secret(.signingKey), signing.count == 32,
              let label = response.text(.identityLabel) else {
            throw .untrusted("the agent's answer is malformed")
        }
        return (agreement.withUnsafeBytes { Array($0) }, signing.withUnsafeBytes { Array($0) }, response.secret(.hybridRecipient)?.withUnsafeBytes { Array($0) }, label)
    }

    /// Each key's sharing state, by key name (public: recipients, senders, followed files).
    public func sharingRecords() throws(AgentError) -> [String: KeySharing] {
        let response = try request(AgentMessage(code: AgentProtocol.Operation.sharingRecords.rawValue))
        guard let body = response.secret(.sharingRecord), let records = body.withUnsafeBytes({ NarrowCoding.decodeSharing(Array($0)) }) else {
            throw .untrusted("the agent's answer is malformed")
        }
        return records
    }

    /// The next share of `name`, built and signed by the agent from its vault, one document
    /// (its JSON) per recipient group; the agent records the serial before it answers.
    public func signNextShare(_ name: String, for groups: [[String]]) throws(AgentError) -> (serial: UInt64, documents: [SecretBytes]) {
        try signNext(.signShare, name, for: groups)
    }

    /// The next share of the secret `name`, built and signed by the agent (operation 25).
    public func signNextSecretShare(_ name: String, for groups: [[String]]) throws(AgentError) -> (serial: UInt64, documents: [SecretBytes]) {
        try signNext(.signSecretShare, name, for: groups)
    }

    private func signNext(_ operation: AgentProtocol.Operation, _ name: String, for groups: [[String]]) throws(AgentError) -> (serial: UInt64, documents: [SecretBytes]) {
        var message = AgentMessage(code: operation.rawValue)
        message.add(.keyName, text: name)
        message.add(.shareRecipients, text: ShareGroups.encode(groups))
        let response = try request(message)
        guard let serial = response.number(.shareSerial), serial > 0, let body = response.secret(.shareDocuments),
              let documents = ShareGroups.split(body), documents.count == groups.count else {
            throw .untrusted("the agent's answer is malformed")
        }
        return (UInt64(serial), documents)
    }

    /// The identity's X25519 agreement with each of one file's ephemeral `shares`, in one
    /// round trip; nil for a low-order share.
    public func agree(_ shares: [[UInt8]]) throws(AgentError) -> [SecretBytes?] {
        var message = AgentMessage(code: AgentProtocol.Operation.agree.rawValue)
        var joined = Array(shares.joined())
        message.add(.ephemeralShare, secret: SecretBytes(taking: &joined))
        guard let shared = try request(message).secret(.sharedSecret), shared.count == 32 * shares.count else {
            throw .untrusted("the agent's answer is malformed")
        }
        return (0..<shares.count).map { index in
            let secret = shared.view(index * 32..<(index + 1) * 32)
            return secret.withUnsafeBytes { $0.allSatisfy { $0 == 0 } } ? nil : secret
        }
    }

    /// Puts the vault under a new data key; returns a new recovery code when one was needed,
    /// the kinds of the other slots that hold the new key, and a warning for each slot dropped.
    public func rekey() throws(AgentError) -> (recoveryCode: SecretBytes?, slotsKept: [String], slotsDropped: [String]) {
        let answer = try request(AgentMessage(code: AgentProtocol.Operation.rekey.rawValue))
        return (answer.secret(.recoveryCode), answer.texts(.slotKept), answer.texts(.slotDropped))
    }

    /// After passwd or recover: the vault now opens with `kek`; the session follows it and
    /// keeps its limits.
    public func followKey(_ kek: SecretBytes) throws(AgentError) {
        var message = AgentMessage(code: AgentProtocol.Operation.followKey.rawValue)
        message.add(.keyEncryptionKey, secret: kek)
        _ = try request(message)
    }

    /// Sets a PIN for the open session: after an idle lock it opens the session again, until
    /// `tries` wrong ones or the absolute limit.
    public func setPIN(_ pin: SecretBytes, tries: Int) throws(AgentError) -> AgentStatus {
        var message = AgentMessage(code: AgentProtocol.Operation.setPIN.rawValue)
        message.add(.pin, secret: pin)
        message.add(.pinTries, number: Int64(tries))
        _ = try request(message)
        return try status()
    }

    /// Opens the idle-locked session again with its PIN.
    public func unlockWithPIN(_ pin: SecretBytes) throws(AgentError) {
        var message = AgentMessage(code: AgentProtocol.Operation.unlockWithPIN.rawValue)
        message.add(.pin, secret: pin)
        _ = try request(message)
    }

    public func forgetPIN() throws(AgentError) {
        _ = try request(AgentMessage(code: AgentProtocol.Operation.forgetPIN.rawValue))
    }

    /// Watches the session for a chat: one connection the agent keeps open, tells of changes
    /// and closes at lock (`SessionWatch`). `.locked`/`.lockedWithPIN` when it is locked now;
    /// `.failed` from an agent that predates watches.
    public func watch() throws(AgentError) -> SessionWatch {
        // A question, asked again while the agent is busy, as `request` does.
        var pauses = Self.busyBackoff[...]
        while true {
            do {
                return SessionWatch(connection: try exchange(AgentMessage(code: AgentProtocol.Operation.watch.rawValue)).connection)
            } catch .busy {
                guard let pause = pauses.popFirst() else { throw .busy }
                Clock.sleep(pause)
            }
        }
    }

    public func lock() throws(AgentError) {
        _ = try request(AgentMessage(code: AgentProtocol.Operation.lock.rawValue))
    }

    /// How long a connection waits for an agent whose queue is full before it is "busy".
    static let connectTimeout = 5.0

    /// Pauses before each retry of a request whose connection the agent dropped unanswered.
    static let busyBackoff = [0.05, 0.1, 0.2, 0.4, 0.8]

    /// Sends one request and reads the response. A connection the agent accepted but dropped
    /// (or one it could not take yet) means a busy agent, not a missing one: a question is
    /// asked again after a short pause, a few times; a change, which may have been made, is not.
    func request(_ message: AgentMessage) throws(AgentError) -> AgentMessage {
        var pauses = Self.onlyAsks(message.code) ? Self.busyBackoff[...] : []
        while true {
            do {
                return try requestOnce(message)
            } catch .busy {
                guard let pause = pauses.popFirst() else { throw .busy }
                Clock.sleep(pause)
            }
        }
    }

    /// The questions, which may be asked again. A switch, not a `Set<UInt8>`: a set's first use
    /// makes the Swift runtime look its type up, which cost more than the rest of the request.
    static func onlyAsks(_ code: UInt8) -> Bool {
        switch AgentProtocol.Operation(rawValue: code) {
        case .status?, .contents?, .keyNames?, .key?, .keySummaries?, .settings?, .conversationKeys?, .lock?, .settingsAndKey?, .identity?, .agree?,
             .sharingRecords?, .toolSecret?, .toolSecretSummaries?, .decapsulate?:
            return true
        default:
            return false
        }
    }

    private func requestOnce(_ message: AgentMessage) throws(AgentError) -> AgentMessage {
        try exchange(message).response
    }

    /// One request and its answer, with the connection it came on (a watch keeps it).
    private func exchange(_ message: AgentMessage) throws(AgentError) -> (response: AgentMessage, connection: FileDescriptor) {
        let folder: TrustedFolder
        do {
            guard let opened = try paths.openFolder(create: false) else { throw AgentError.notRunning }
            folder = opened
        } catch let error as AgentError {
            throw error
        } catch TrustedOpenError.refused(let failure) {
            throw .refused(failure)
        } catch {
            throw .notRunning
        }
        // Through the checked folder's descriptor: any folder depth works.
        let connection: FileDescriptor
        do {
            connection = try UnixSocket.connect(paths.socketName, in: folder.descriptor, path: paths.socketPath,
                                                deadline: Clock.monotonicSeconds() + Self.connectTimeout)
        } catch {
            // A full backlog is a busy agent; no socket, or nothing listening on it, is none.
            throw error.code == EAGAIN ? .busy : .notRunning
        }
        guard let peer = try? UnixSocket.peer(of: connection), peer.uid == CurrentUser.id else {
            throw .untrusted("the socket \(paths.socketPath) is served by another user")
        }
        let frame = message.frame()
        // A request the agent refuses part way (busy, no memory) is answered before it closes:
        // after a failed write, that answer is still read.
        // A Bool, not a Result: a Result's first use is a runtime type lookup (Docs/performance.md).
        let sent = frame.withUnsafeBytes { bytes in (try? connection.writeAll(bytes)) != nil }
        let body: SecretBytes
        do {
            body = try FrameReader.read(connection, deadline: Clock.monotonicSeconds() + (sent ? responseTimeout : 1))
        } catch {
            // The agent accepted the connection, so it runs: a drop is its being busy.
            guard sent else { throw .busy }
            throw error == .timedOut ? .failed("the agent did not answer within \(Int(responseTimeout)) s") : .busy
        }
        guard let response = AgentMessage.parse(body: body) else { throw .untrusted("the agent's answer is malformed") }
        guard response.code == 0 else {
            let text = response.text(.message) ?? "the agent refused the request"
            switch response.number(.errorKind).flatMap({ AgentProtocol.ErrorKind(rawValue: UInt8(truncatingIfNeeded: $0)) }) {
            case .locked?:
                if let left = response.number(.pinTriesLeft) {
                    throw .lockedWithPIN(triesLeft: Int(left), of: Int(response.number(.pinTries) ?? left))
                }
                throw .locked
            case .stale?: throw .stale
            case .rolledBack?:
                throw .rolledBack(generation: UInt64(bitPattern: response.number(.generation) ?? 0),
                                  seen: UInt64(bitPattern: response.number(.seenGeneration) ?? 0))
            case .wrongKey?: throw .wrongKey
            case .noSuchKey?: throw .noSuchKey(response.text(.keyName) ?? "")
            case .changeRefused?: throw .changeRefused(NarrowCoding.refusal(in: response) ?? .cryptoFailure(text))
            case .wrongPIN?: throw .wrongPIN(triesLeft: Int(response.number(.pinTriesLeft) ?? 0))
            default: throw .failed(text)
            }
        }
        return (response, connection)
    }
}
