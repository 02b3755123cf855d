import GoogleKeys
import VaultCore

/// The bodies of the narrow requests' fields (Docs/session.md): each carries only what was
/// asked. All integers little-endian; a text is a u32 length and UTF-8. Decoders return nil
/// for anything a writer never produces.
enum NarrowCoding {
    // MARK: Key summaries: u32 count, then per key its name, masked value, kind, three dates,
    // its Google key (two texts, the resource name and the service account, both empty for
    // none), u8 count of earlier values, each masked value, kind, retired date and Google key,
    // then its Secret Manager link: u8 1 with the reference, version (as i64) and fetch time, or u8 0.

    static func encode(_ summaries: [KeySummary]) -> [UInt8] {
        var out = ByteWriter()
        out.u32(UInt32(summaries.count))
        for key in summaries {
            out.text(key.name)
            out.text(key.masked)
            out.kind(key.kind)
            out.i64(key.created)
            out.i64(key.updated)
            out.i64(key.lastUsed)
            out.record(key.google)
            out.u8(UInt8(min(key.earlier.count, 255)))
            for earlier in key.earlier.prefix(255) {
                out.text(earlier.masked)
                out.kind(earlier.kind)
                out.i64(earlier.retired)
                out.record(earlier.google)
            }
            if let link = key.link {
                // 2: a link followed by its rotation.
                out.u8(link.rotation == nil ? 1 : 2)
                out.text(link.reference)
                out.i64(Int64(bitPattern: link.version))
                out.i64(link.fetched)
                if let rotation = link.rotation {
                    out.i64(Int64(bitPattern: rotation.previousVersion))
                    out.text(rotation.retireKey)
                    out.i64(rotation.finishAfter)
                }
            } else {
                out.u8(0)
            }
        }
        return out.bytes
    }

    static func decodeSummaries(_ bytes: [UInt8]) -> [KeySummary]? {
        var input = ByteCursor(bytes)
        guard let count = input.u32(), Int(count) <= bytes.count else { return nil }
        var summaries: [KeySummary] = []
        for _ in 0..<count {
            guard let name = input.text(), let masked = input.text(), let kind = input.kind(), let created = input.i64(),
                  let updated = input.i64(), let lastUsed = input.i64(), let google = input.record(), let earlierCount = input.u8() else { return nil }
            var earlier: [KeySummary.Earlier] = []
            for _ in 0..<earlierCount {
                guard let value = input.text(), let valueKind = input.kind(), let retired = input.i64(), let valueGoogle = input.record() else { return nil }
                earlier.append(KeySummary.Earlier(masked: value, kind: valueKind, retired: retired, google: valueGoogle.record))
            }
            var summary = KeySummary(name: name, masked: masked, kind: kind, created: created, updated: updated, lastUsed: lastUsed, earlier: earlier,
                                     google: google.record)
            switch input.u8() {
            case 0?: break
            case let marker? where marker == 1 || marker == 2:
                guard let reference = input.text(), let version = input.i64(), let fetched = input.i64() else { return nil }
                var link = SecretLink(reference: reference, version: UInt64(bitPattern: version), fetched: fetched)
                if marker == 2 {
                    guard let previous = input.i64(), let retire = input.text(), let finishAfter = input.i64() else { return nil }
                    link.rotation = LinkedRotation(previousVersion: UInt64(bitPattern: previous), retireKey: retire, finishAfter: finishAfter)
                    guard link.rotation!.isWellFormed else { return nil }
                }
                summary.link = link
            default: return nil
            }
            summaries.append(summary)
        }
        return input.atEnd ? summaries : nil
    }

    // MARK: Settings: u32 count, then name and value texts.

    static func encode(_ settings: [String: String]) -> [UInt8] {
        var out = ByteWriter()
        out.u32(UInt32(settings.count))
        for name in settings.keys.sorted() {
            out.text(name)
            out.text(settings[name]!)
        }
        return out.bytes
    }

    static func decodeSettings(_ bytes: [UInt8]) -> [String: String]? {
        var input = ByteCursor(bytes)
        guard let count = input.u32(), Int(count) <= bytes.count else { return nil }
        var settings: [String: String] = [:]
        for _ in 0..<count {
            guard let name = input.text(), let value = input.text() else { return nil }
            settings[name] = value
        }
        return input.atEnd ? settings : nil
    }

    // MARK: Sharing records: u32 count, then each key's name (text) and its record (u32 length
    // and the payload's bytes for it).

    static func encode(_ sharing: [String: KeySharing]) -> [UInt8] {
        var out = ByteWriter()
        out.u32(UInt32(sharing.count))
        for name in sharing.keys.sorted() {
            out.text(name)
            let record = sharing[name]!.encoded()
            out.u32(UInt32(record.count))
            out.bytes += record
        }
        return out.bytes
    }

    static func decodeSharing(_ bytes: [UInt8]) -> [String: KeySharing]? {
        var input = ByteCursor(bytes)
        guard let count = input.u32(), Int(count) <= bytes.count else { return nil }
        var sharing: [String: KeySharing] = [:]
        for _ in 0..<count {
            guard let name = input.text(), let length = input.u32(), let body = input.take(Int(length)),
                  let record = KeySharing(encoded: Array(body)) else { return nil }
            sharing[name] = record
        }
        return input.atEnd ? sharing : nil
    }

    // MARK: A change: u8 kind, then its fields (a key's value travels in its own secret field).

    enum ChangeKind: UInt8 {
        case setKey = 1, replaceKey = 2, removeKey = 3, rollBack = 4, setSetting = 5, unsetSetting = 6, rotateKey = 7
        case identity = 8, recordSharing = 9, importKey = 10, linkKey = 11, refreshLink = 12
        case rotateLinkedKey = 13, finishLinkedRotation = 14, rollBackLinked = 15, toolSecret = 16
        case upgradeIdentity = 17
    }

    static func add(_ change: VaultChange, to message: inout AgentMessage) {
        switch change {
        case .setKey(let name, let secret, let now):
            addValue(.setKey, name, secret, now, to: &message)
        case .replaceKey(let name, let secret, let now):
            addValue(.replaceKey, name, secret, now, to: &message)
        case .rotateKey(let name, let secret, let now, let google, let replacedGoogle):
            addRotation(name, secret, now, google, replacedGoogle, link: nil, to: &message)
        case .rotateLinkedKey(let name, let secret, let now, let google, let replacedGoogle, let link):
            addRotation(name, secret, now, google, replacedGoogle, link: link, to: &message)
        case .removeKey(let name):
            message.add(.changeKind, number: Int64(ChangeKind.removeKey.rawValue))
            message.add(.keyName, text: name)
        case .rollBack(let name, let now):
            message.add(.changeKind, number: Int64(ChangeKind.rollBack.rawValue))
            message.add(.keyName, text: name)
            message.add(.now, number: now)
        case .setting(let name, let value):
            message.add(.changeKind, number: Int64((value == nil ? ChangeKind.unsetSetting : .setSetting).rawValue))
            message.add(.settingName, text: name)
            if let value { message.add(.settingValue, text: value) }
        case .identity(let label, let relabel, let classic):
            message.add(.changeKind, number: Int64(ChangeKind.identity.rawValue))
            message.add(.identityLabel, text: label)
            message.add(.relabel, number: relabel ? 1 : 0)
            if classic { message.add(.classicIdentity, number: 1) }
        case .upgradeIdentity:
            message.add(.changeKind, number: Int64(ChangeKind.upgradeIdentity.rawValue))
        case .recordSharing(let name, let record):
            message.add(.changeKind, number: Int64(ChangeKind.recordSharing.rawValue))
            message.add(.keyName, text: name)
            message.add(.sharingRecord, secret: SecretBytes(copying: record.encoded()))
        case .importKey(let name, let secret, let now, let google, let record):
            addValue(.importKey, name, secret, now, to: &message)
            if let google { addGoogle(google, to: &message) }
            message.add(.sharingRecord, secret: SecretBytes(copying: record.encoded()))
        case .linkKey(let name, let secret, let now, let link):
            addValue(.linkKey, name, secret, now, to: &message)
            add(link, to: &message)
        case .refreshLink(let name, let secret, let now, let link, let since):
            addValue(.refreshLink, name, secret, now, to: &message)
            add(link, to: &message)
            message.add(.linkSince, number: since)
        case .finishLinkedRotation(let name, let version):
            message.add(.changeKind, number: Int64(ChangeKind.finishLinkedRotation.rawValue))
            message.add(.keyName, text: name)
            message.add(.linkVersion, number: Int64(bitPattern: version))
        case .rollBackLinked(let name, let now, let link):
            message.add(.changeKind, number: Int64(ChangeKind.rollBackLinked.rawValue))
            message.add(.keyName, text: name)
            message.add(.now, number: now)
            add(link, to: &message)
        case .secret(let change):
            addSecretChange(change, to: &message)
        }
    }

    /// A change that sets a key's value: its kind, the name, the value and the time.
    private static func addValue(_ kind: ChangeKind, _ name: String, _ secret: SecretBytes, _ now: Int64, to message: inout AgentMessage) {
        message.add(.changeKind, number: Int64(kind.rawValue))
        message.add(.keyName, text: name)
        message.add(.keyValue, secret: secret)
        message.add(.now, number: now)
    }

    /// A rotation, plain or of a linked key: both carry the new value and the Google keys.
    private static func addRotation(_ name: String, _ secret: SecretBytes, _ now: Int64, _ google: GoogleKeyRecord,
                                    _ replacedGoogle: GoogleKeyRecord?, link: SecretLink?, to message: inout AgentMessage) {
        addValue(link == nil ? .rotateKey : .rotateLinkedKey, name, secret, now, to: &message)
        if let link { add(link, to: &message) }
        addGoogle(google, to: &message)
        if let replacedGoogle {
            message.add(.replacedGoogleResource, text: replacedGoogle.resource)
            message.add(.replacedGoogleServiceAccount, text: replacedGoogle.serviceAccount)
        }
    }

    private static func addGoogle(_ google: GoogleKeyRecord, to message: inout AgentMessage) {
        message.add(.googleResource, text: google.resource)
        message.add(.googleServiceAccount, text: google.serviceAccount)
    }

    static func add(_ link: SecretLink, to message: inout AgentMessage) {
        message.add(.linkReference, text: link.reference)
        message.add(.linkVersion, number: Int64(bitPattern: link.version))
        message.add(.linkFetched, number: link.fetched)
        if let rotation = link.rotation {
            message.add(.linkPreviousVersion, number: Int64(bitPattern: rotation.previousVersion))
            message.add(.linkRetireKey, text: rotation.retireKey)
            message.add(.linkFinishAfter, number: rotation.finishAfter)
        }
    }

    static func link(in message: AgentMessage) -> SecretLink? {
        guard let reference = message.text(.linkReference), let version = message.number(.linkVersion), let fetched = message.number(.linkFetched) else { return nil }
        var link = SecretLink(reference: reference, version: UInt64(bitPattern: version), fetched: fetched)
        if let previous = message.number(.linkPreviousVersion) {
            guard let retire = message.text(.linkRetireKey), let finishAfter = message.number(.linkFinishAfter) else { return nil }
            link.rotation = LinkedRotation(previousVersion: UInt64(bitPattern: previous), retireKey: retire, finishAfter: finishAfter)
            // The key to retire goes into a URL at Google: only what the vault itself would hold.
            guard link.rotation!.isWellFormed else { return nil }
        }
        return link
    }

    /// Why the vault's rules refused a change, as the client should report it: the kind of
    /// refusal (`refusal`) and what it names (`keyName`).
    static func add(refusal error: VaultError, to response: inout AgentMessage) {
        switch error {
        case .noEarlierValue(let name): response.add(.refusal, number: 1); response.add(.keyName, text: name)
        case .valueTooLarge(let what): response.add(.refusal, number: 2); response.add(.keyName, text: what)
        case .invalidName(let name): response.add(.refusal, number: 3); response.add(.keyName, text: name)
        case .linkedKey(let name, let reference): response.add(.refusal, number: 4); response.add(.keyName, text: name); response.add(.linkReference, text: reference)
        case .notLinked(let name): response.add(.refusal, number: 5); response.add(.keyName, text: name)
        default: addSecretRefusal(error, to: &response)
        }
    }

    static func refusal(in response: AgentMessage) -> VaultError? {
        guard let name = response.text(.keyName) else { return nil }
        switch response.number(.refusal) {
        case 1: return .noEarlierValue(name: name)
        case 2: return .valueTooLarge(name)
        case 3: return .invalidName(name)
        case 4: return response.text(.linkReference).map { .linkedKey(name: name, reference: $0) }
        case 5: return .notLinked(name: name)
        default: return secretRefusal(response.number(.refusal), name: name, in: response)
        }
    }

    /// The change a request carries, or nil when it is not one a client sends.
    static func change(in message: AgentMessage) -> VaultChange? {
        guard let raw = message.number(.changeKind), let kind = ChangeKind(rawValue: UInt8(truncatingIfNeeded: raw)) else { return nil }
        let name = message.text(.keyName)
        let now = message.number(.now)
        switch kind {
        case .setKey, .replaceKey:
            guard let name, let secret = message.secret(.keyValue), let now else { return nil }
            return kind == .setKey ? .setKey(name: name, secret: secret, now: now) : .replaceKey(name: name, secret: secret, now: now)
        case .rotateKey:
            guard let name, let secret = message.secret(.keyValue), let now, let resource = message.text(.googleResource),
                  let account = message.text(.googleServiceAccount), let replaced = replacedGoogle(in: message) else { return nil }
            return .rotateKey(name: name, secret: secret, now: now, google: GoogleKeyRecord(resource: resource, serviceAccount: account),
                              replacedGoogle: replaced)
        case .removeKey:
            return name.map { .removeKey(name: $0) }
        case .rollBack:
            guard let name, let now else { return nil }
            return .rollBack(name: name, now: now)
        case .setSetting, .unsetSetting:
            guard let setting = message.text(.settingName) else { return nil }
            let value = message.text(.settingValue)
            guard (kind == .setSetting) == (value != nil) else { return nil }
            return .setting(name: setting, value: value)
        case .identity:
            guard let label = message.text(.identityLabel), let relabel = message.number(.relabel), relabel == 0 || relabel == 1,
                  [nil, 1].contains(message.number(.classicIdentity)) else { return nil }
            return .identity(label: label, relabel: relabel == 1, classic: message.number(.classicIdentity) == 1)
        case .upgradeIdentity:
            return .upgradeIdentity
        case .recordSharing:
            guard let name, let record = sharingRecord(in: message) else { return nil }
            return .recordSharing(name: name, record: record)
        case .importKey:
            guard let name, let secret = message.secret(.keyValue), let now, let record = sharingRecord(in: message),
                  let google = optionalGoogle(in: message, resource: .googleResource, account: .googleServiceAccount) else { return nil }
            return .importKey(name: name, secret: secret, now: now, google: google, record: record)
        case .linkKey:
            guard let name, let secret = message.secret(.keyValue), let now, let link = link(in: message) else { return nil }
            return .linkKey(name: name, secret: secret, now: now, link: link)
        case .refreshLink:
            guard let name, let secret = message.secret(.keyValue), let now, let link = link(in: message), let since = message.number(.linkSince) else { return nil }
            return .refreshLink(name: name, secret: secret, now: now, link: link, since: since)
        case .rotateLinkedKey:
            guard let name, let secret = message.secret(.keyValue), let now, let resource = message.text(.googleResource),
                  let account = message.text(.googleServiceAccount), let link = link(in: message),
                  let replaced = replacedGoogle(in: message) else { return nil }
            return .rotateLinkedKey(name: name, secret: secret, now: now, google: GoogleKeyRecord(resource: resource, serviceAccount: account),
                                    replacedGoogle: replaced, link: link)
        case .finishLinkedRotation:
            guard let name, let version = message.number(.linkVersion) else { return nil }
            return .finishLinkedRotation(name: name, version: UInt64(bitPattern: version))
        case .rollBackLinked:
            guard let name, let now, let link = link(in: message) else { return nil }
            return .rollBackLinked(name: name, now: now, link: link)
        case .toolSecret:
            return secretChange(in: message).map { .secret($0) }
        }
    }

    /// The Google key a rotation replaced: `.some(nil)` when it names none, nil when it names
    /// a resource without its service account.
    private static func replacedGoogle(in message: AgentMessage) -> GoogleKeyRecord?? {
        optionalGoogle(in: message, resource: .replacedGoogleResource, account: .replacedGoogleServiceAccount)
    }

    /// An optional Google key in two fields: `.some(nil)` when absent, nil when half there.
    private static func optionalGoogle(in message: AgentMessage, resource: AgentProtocol.Tag, account: AgentProtocol.Tag) -> GoogleKeyRecord?? {
        guard let resource = message.text(resource) else { return .some(nil) }
        guard let account = message.text(account) else { return nil }
        return .some(GoogleKeyRecord(resource: resource, serviceAccount: account))
    }

    private static func sharingRecord(in message: AgentMessage) -> KeySharing? {
        message.secret(.sharingRecord).flatMap { bytes in KeySharing(encoded: bytes.withUnsafeBytes { Array($0) }) }
    }
}

struct ByteWriter {
    var bytes: [UInt8] = []

    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func i64(_ value: Int64) { withUnsafeBytes(of: value.littleEndian) { bytes += $0 } }
    mutating func text(_ value: String) {
        u32(UInt32(value.utf8.count))
        bytes += value.utf8
    }
    mutating func kind(_ value: GoogleKeyKind) { u8(UInt8(GoogleKeyKind.allCases.firstIndex(of: value)!)) }
    mutating func record(_ value: GoogleKeyRecord?) {
        text(value?.resource ?? "")
        text(value?.serviceAccount ?? "")
    }
}

/// A Google key as the summaries carry it: present or absent, both valid.
struct DecodedRecord {
    let record: GoogleKeyRecord?
}

struct ByteCursor {
    let bytes: [UInt8]
    var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var atEnd: Bool { offset == bytes.count }

    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, bytes.count - offset >= count else { return nil }
        defer { offset += count }
        return bytes[offset..<offset + count]
    }

    mutating func u8() -> UInt8? { take(1)?.first }
    mutating func u32() -> UInt32? { take(4).map { $0.reversed().reduce(0) { $0 << 8 | UInt32($1) } } }
    mutating func i64() -> Int64? { take(8).map { Int64(bitPattern: $0.reversed().reduce(0) { $0 << 8 | UInt64($1) }) } }
    mutating func text() -> String? {
        guard let count = u32(), let body = take(Int(count)) else { return nil }
        return String(validating: body, as: UTF8.self)
    }
    mutating func record() -> DecodedRecord? {
        guard let resource = text(), let account = text() else { return nil }
        if resource.isEmpty && account.isEmpty { return DecodedRecord(record: nil) }
        let record = GoogleKeyRecord(resource: resource, serviceAccount: account)
        return record.isWellFormed ? DecodedRecord(record: record) : nil
    }

    mutating func kind() -> GoogleKeyKind? {
        guard let index = u8(), Int(index) < GoogleKeyKind.allCases.count else { return nil }
        return GoogleKeyKind.allCases[Int(index)]
    }
}
