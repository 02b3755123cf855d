import SystemIO
import VaultCore

/// The secrets for other tools through the session: one secret's value per request, by name,
/// and what may be shown of all of them (never a value). Docs/session.md lists the operations.
extension AgentServer {
    func toolSecretOperation(_ operation: AgentProtocol.Operation, _ request: AgentMessage) -> AgentMessage {
        let answer = answering {
            try refreshIfChanged()
            guard let document else { return lockedAnswer() }
            var response = AgentMessage(code: 0)
            if operation == .toolSecretSummaries {
                response.add(.toolSecretSummaries, secret: SecretBytes(copying: NarrowCoding.encode(document.contents.toolSecretSummaries)))
                return response
            }
            guard let name = request.text(.keyName) else { return Self.error(.badRequest, "toolSecret needs a secret name") }
            guard let secret = document.contents.toolSecret(named: name) else { return Self.noSuchSecret(name) }
            document.contents.recordToolSecretUse(name, at: Clock.now())
            log("handed out secret '\(name)'")
            response.add(.keyValue, secret: secret.value)
            response.add(.created, number: secret.created)
            response.add(.updated, number: secret.updated)
            if let link = secret.link { NarrowCoding.add(link, to: &response) }
            return response
        }
        if answer.code == 0 { lastActivity = Clock.bootSeconds() }
        return answer
    }
}

extension AgentClient {
    /// One secret's value and dates, or nil when the vault has none by that name.
    public func toolSecret(_ name: String) throws(AgentError) -> ToolSecret? {
        var message = AgentMessage(code: AgentProtocol.Operation.toolSecret.rawValue)
        message.add(.keyName, name: name)
        let response: AgentMessage
        do { response = try request(message) } catch .changeRefused(.secretNotFound) { return nil }
        guard let value = response.secret(.keyValue), let created = response.number(.created), let updated = response.number(.updated) else {
            throw .untrusted("the agent's answer has no secret")
        }
        let link = response.text(.linkReference) == nil ? nil : NarrowCoding.link(in: response)
        if response.text(.linkReference) != nil, link == nil { throw .untrusted("the agent's answer has a malformed link") }
        return ToolSecret(name: name, value: value, created: created, updated: updated, link: link)
    }

    /// What may be shown of every secret: names, masked values, dates, earlier values masked.
    public func toolSecretSummaries() throws(AgentError) -> [ToolSecretSummary] {
        let response = try request(AgentMessage(code: AgentProtocol.Operation.toolSecretSummaries.rawValue))
        guard let body = response.secret(.toolSecretSummaries),
              let summaries = body.withUnsafeBytes({ NarrowCoding.decodeToolSecretSummaries(Array($0)) }) else {
            throw .untrusted("the agent's answer is malformed")
        }
        return summaries
    }
}

extension NarrowCoding {
    // MARK: Secret summaries: u32 count, then per secret its name, masked value, length (u32),
    // three dates, the note of its tools, u8 count of earlier values, each masked value and two
    // dates; then the serials of its last share sent and imported, and the pinned sender's
    // signing key (base64) and label, both empty for none.

    static func encode(_ summaries: [ToolSecretSummary]) -> [UInt8] {
        var out = ByteWriter()
        out.u32(UInt32(summaries.count))
        for secret in summaries {
            out.text(secret.name)
            out.text(secret.masked)
            out.u32(UInt32(secret.bytes))
            for date in [secret.created, secret.updated, secret.lastUsed] { out.i64(date) }
            out.text(secret.usedBy)
            out.u8(UInt8(min(secret.earlier.count, 255)))
            for earlier in secret.earlier.prefix(255) {
                out.text(earlier.masked)
                out.i64(earlier.retired)
                out.i64(earlier.set)
            }
            out.i64(Int64(bitPattern: secret.sharing.sentSerial))
            out.i64(Int64(bitPattern: secret.sharing.importedSerial))
            out.text(secret.sharing.sender.map { Sodium.base64($0.signingKey) } ?? "")
            out.text(secret.sharing.sender?.label ?? "")
        }
        return out.bytes
    }

    static func decodeToolSecretSummaries(_ bytes: [UInt8]) -> [ToolSecretSummary]? {
        var input = ByteCursor(bytes)
        guard let count = input.u32(), Int(count) <= bytes.count else { return nil }
        var summaries: [ToolSecretSummary] = []
        for _ in 0..<count {
            guard let name = input.text(), let masked = input.text(), let length = input.u32(), let created = input.i64(), let updated = input.i64(),
                  let lastUsed = input.i64(), let usedBy = input.text(), let earlierCount = input.u8() else { return nil }
            var earlier: [ToolSecretSummary.Earlier] = []
            for _ in 0..<earlierCount {
                guard let value = input.text(), let retired = input.i64(), let set = input.i64() else { return nil }
                earlier.append(.init(masked: value, retired: retired, set: set))
            }
            guard let sent = input.i64(), let imported = input.i64(), let signingKey = input.text(), let label = input.text() else { return nil }
            var sharing = ToolSecretSharing(sentSerial: UInt64(bitPattern: sent), importedSerial: UInt64(bitPattern: imported))
            if !signingKey.isEmpty {
                guard let key = Sodium.bytes(base64: signingKey), key.count == 32 else { return nil }
                sharing.sender = ShareSender(signingKey: key, label: label)
            }
            summaries.append(ToolSecretSummary(name: name, masked: masked, bytes: Int(length), created: created, updated: updated,
                                               lastUsed: lastUsed, usedBy: usedBy, earlier: earlier, sharing: sharing))
        }
        return input.atEnd ? summaries : nil
    }

    // MARK: A change to the secrets: the change kind `toolSecret`, then `secretChange` (1 set,
    // 2 remove, 3 roll back, 4 rename, 5 link, 6 refresh a link), the name in `keyName`, the value
    // in `keyValue`, the time in `now`, a new name in `settingName`, the note of tools in `usedBy`,
    // a link in the `link…` tags as a key's (and `linkSince` for a refresh).

    static func addSecretChange(_ change: ToolSecretChange, to message: inout AgentMessage) {
        message.add(.changeKind, number: Int64(ChangeKind.toolSecret.rawValue))
        switch change {
        case .set(let name, let value, let now, let usedBy):
            message.add(.secretChange, number: 1)
            message.add(.keyName, text: name)
            message.add(.keyValue, secret: value)
            message.add(.now, number: now)
            if let usedBy { message.add(.usedBy, text: usedBy) }
        case .remove(let name):
            message.add(.secretChange, number: 2)
            message.add(.keyName, text: name)
        case .rollBack(let name, let now):
            message.add(.secretChange, number: 3)
            message.add(.keyName, text: name)
            message.add(.now, number: now)
        case .rename(let from, let to):
            message.add(.secretChange, number: 4)
            message.add(.keyName, text: from)
            message.add(.settingName, text: to)
        case .link(let name, let value, let now, let link):
            addLinkedSecret(5, name, value, now, link, to: &message)
        case .refreshLink(let name, let value, let now, let link, let since):
            addLinkedSecret(6, name, value, now, link, to: &message)
            message.add(.linkSince, number: since)
        case .importShared(let name, let value, let now, let sender, let serial):
            message.add(.secretChange, number: 7)
            message.add(.keyName, text: name)
            message.add(.keyValue, secret: value)
            message.add(.now, number: now)
            message.add(.identityLabel, text: sender.label)
            message.add(.signingKey, secret: SecretBytes(copying: sender.signingKey))
            message.add(.shareSerial, number: Int64(bitPattern: serial))
        }
    }

    private static func addLinkedSecret(_ kind: Int64, _ name: String, _ value: SecretBytes, _ now: Int64, _ link: SecretLink, to message: inout AgentMessage) {
        message.add(.secretChange, number: kind)
        message.add(.keyName, text: name)
        message.add(.keyValue, secret: value)
        message.add(.now, number: now)
        add(link, to: &message)
    }

    static func secretChange(in message: AgentMessage) -> ToolSecretChange? {
        guard let name = message.text(.keyName) else { return nil }
        let now = message.number(.now)
        switch message.number(.secretChange) {
        case 1:
            guard let value = message.secret(.keyValue), let now else { return nil }
            return .set(name: name, value: value, now: now, usedBy: message.text(.usedBy))
        case 2: return .remove(name: name)
        case 3: return now.map { .rollBack(name: name, now: $0) }
        case 4: return message.text(.settingName).map { .rename(from: name, to: $0) }
        case 5:
            guard let value = message.secret(.keyValue), let now, let link = link(in: message) else { return nil }
            return .link(name: name, value: value, now: now, link: link)
        case 6:
            guard let value = message.secret(.keyValue), let now, let link = link(in: message), let since = message.number(.linkSince) else { return nil }
            return .refreshLink(name: name, value: value, now: now, link: link, since: since)
        case 7:
            guard let value = message.secret(.keyValue), let now, let label = message.text(.identityLabel), let key = message.secret(.signingKey),
                  let serial = message.number(.shareSerial) else { return nil }
            return .importShared(name: name, value: value, now: now, sender: ShareSender(signingKey: key.withUnsafeBytes { Array($0) }, label: label),
                                 serial: UInt64(bitPattern: serial))
        default: return nil
        }
    }

    /// The refusals of secret changes (numbers 6 to 9 of `refusal`); the reason of an invalid
    /// value travels in `message`'s place, `settingValue`.
    static func addSecretRefusal(_ error: VaultError, to response: inout AgentMessage) {
        switch error {
        case .secretNotFound(let name): response.add(.refusal, number: 6); response.add(.keyName, text: name)
        case .secretExists(let name): response.add(.refusal, number: 7); response.add(.keyName, text: name)
        case .noEarlierSecretValue(let name): response.add(.refusal, number: 8); response.add(.keyName, text: name)
        case .invalidSecret(let name, let reason):
            response.add(.refusal, number: 9); response.add(.keyName, text: name); response.add(.settingValue, text: reason)
        default: break
        }
    }

    static func secretRefusal(_ code: Int64?, name: String, in response: AgentMessage) -> VaultError? {
        switch code {
        case 6: return .secretNotFound(name: name)
        case 7: return .secretExists(name: name)
        case 8: return .noEarlierSecretValue(name: name)
        case 9: return response.text(.settingValue).map { .invalidSecret(name: name, reason: $0) }
        default: return nil
        }
    }
}
