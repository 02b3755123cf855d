import SystemIO
import VaultCore

/// The agent's wire protocol, version 1. Docs/session.md describes it.
///
/// A frame is the magic `GVA1`, a u32 little-endian body length, then the body. A request
/// body is an operation byte followed by fields; a response body is a status byte (0 ok,
/// 1 error) followed by fields. A field is a tag byte, a u32 little-endian length and the
/// bytes. Frames travel whole inside `SecretBytes`, since fields can carry key material.
public enum AgentProtocol {
    public static let magic = Array("GVA1".utf8)
    /// The bound of an answer: large enough for the narrow answers of the biggest vault,
    /// small enough to bound a hostile agent.
    public static let maxFrame = 17 << 20
    /// The bound of every request that carries no vault: the largest (unlock, a 32-byte key
    /// and two numbers; contents, a key name of at most 128 bytes) takes under 200.
    public static let maxSmallRequest = 1024

    public enum Operation: UInt8, Sendable {
        /// 4 was the whole-vault write, refused since requests became narrow: now an unknown operation.
        case status = 1, unlock = 2, contents = 3, rekey = 5, lock = 6, keyNames = 7
        /// After passwd or recover: the new key-encryption key, which the session follows
        /// without touching its limits.
        case followKey = 8
        /// Narrow questions: one key, what may be shown of every key, the vault's settings, the
        /// conversation keys; and one change. None carries a whole payload.
        case key = 9, keySummaries = 10, settings = 11, conversationKeys = 12, change = 13
        /// The vault's settings and one key in one answer, so a command that needs both (ask,
        /// chat, exec) makes one round trip. The key's name is the vault's `key` setting when
        /// `keyFromSettings` says so and it is set, else `keyName`; the answer names the key it
        /// looked up, and carries no value when the vault has no such key.
        case settingsAndKey = 14
        /// Sharing, without ever handing out the identity's secrets: its public halves and label;
        /// the next share of a key the vault holds, built and signed by the agent itself (the
        /// caller names the key and the recipients, never the bytes signed); the X25519
        /// agreement of the identity with every X25519 stanza of one age file, in one request.
        case identity = 15, signShare = 16, agree = 17
        /// Each key's sharing state (public only).
        case sharingRecords = 18
        /// A PIN for the open session (`pin`, `pinTries`); a PIN to open it again after an idle
        /// lock; forgetting the PIN (passwd, recover and rekey end it).
        case setPIN = 19, unlockWithPIN = 20, forgetPIN = 21
        /// A chat's watch on the session: answered at once, then the connection stays open. The
        /// agent writes one byte (`watchChanged`) when the vault changed, closes it when the
        /// session locks (a lock, a limit, an idle lock); each byte the client writes is a use of
        /// the session (a chat turn), never answered.
        case watch = 22
        /// The secrets for other tools: one secret's value by name (`keyName`), and what may be
        /// shown of all of them (ToolSecretOperations.swift).
        case toolSecret = 23, toolSecretSummaries = 24
        /// The next share of a secret for another tool, built and signed by the agent from its
        /// vault as `signShare` does for a key (a share of a secret is never a key's).
        case signSecretShare = 25
        /// A Google access token kept for `auth` = `google` (Docs/keyless.md), per credential and
        /// scope, until five minutes before it expires; never written anywhere.
        case putToken = 30, takeToken = 31
        /// The hybrid post-quantum identity's decapsulation of every `mlkem768x25519` stanza's
        /// encapsulated key of one age file, in one request (as `agree` for X25519); the seed never
        /// leaves the agent. 33 is kept for the hybrid identity too.
        case decapsulate = 32
    }

    /// The encapsulated keys one `decapsulate` carries (1,120 bytes each): 64 fit a stanza
    /// request's bound; a file with more takes more requests.
    public static let decapsulateBatch = 64

    /// An access token (STS's are up to 12 KiB) and the name of its credential and scopes.
    public static let maxTokenRequest = 16 << 10

    /// The byte a watch carries when the vault changed (settings, keys): what the chat was told
    /// before is to be asked again.
    public static let watchChanged: UInt8 = 0x43

    /// A change carries at most one key's value (4 KiB) or one setting's or secret's (64 KiB) and
    /// names, or a key's sharing record; a share's request, its recipients. Either names up to 256
    /// recorded recipients and 256 new ones, and a post-quantum one (`age1pq1…`, `age1tagpq1…`)
    /// is about 2,000 characters: 80 KiB held only about 40 of them.
    public static let maxChangeRequest = 1 << 20

    /// One file's stanzas: `agree`'s X25519 shares (256 of 32 bytes), `decapsulate`'s encapsulated
    /// keys (64 of 1,120 bytes).
    public static let maxStanzaRequest = 80 << 10

    /// The longest body a request for `operation` may announce; nil for an unknown operation.
    /// No request carries a whole vault.
    public static func maxRequestBody(operation: UInt8) -> Int? {
        guard let known = Operation(rawValue: operation) else { return nil }
        switch known {
        case .change, .signShare, .signSecretShare: return maxChangeRequest
        case .agree, .decapsulate: return maxStanzaRequest
        case .putToken: return maxTokenRequest
        default: return maxSmallRequest
        }
    }

    public enum Tag: UInt8, Sendable {
        case keyEncryptionKey = 1, idleSeconds = 2, maxSeconds = 3, payload = 4, generation = 5, keyName = 6
        case message = 7, errorKind = 8, vaultPath = 9, unlockedAt = 10, idleDeadline = 11, maxDeadline = 12
        case pid = 13, state = 14, backup = 15, recoveryCode = 16, seenGeneration = 17, keyNames = 18
        /// Beside `keyNames`, line for line: each key's shape (`auth`, `standard`, `other`).
        case keyKinds = 19
        /// The answer to `key`: the value, and its dates.
        case keyValue = 20, created = 21, updated = 22, lastUsed = 23
        /// Bodies laid out by NarrowCoding.
        case keySummaries = 24, settings = 25
        /// The conversation keys, 32 bytes each, current first.
        case conversationKeys = 26
        /// A change: its kind, a setting's name and value, the time; the key's name is `keyName`,
        /// its value `keyValue`.
        case changeKind = 27, settingName = 28, settingValue = 29, now = 30
        /// A change's outcome: the masked value it replaced or restored, and whether it replaced one.
        case masked = 31, replaced = 32
        /// `key`: record the key's use.
        case markUsed = 33
        /// A refused change: which of the vault's rules refused it.
        case refusal = 34
        /// A rotation's Google keys: the new value's resource name and service account, and the
        /// replaced value's when the rotation found it by a lookup.
        case googleResource = 35, googleServiceAccount = 36, replacedGoogleResource = 37, replacedGoogleServiceAccount = 38
        /// `settingsAndKey`: 1 when the vault's own `key` setting, if set, names the key.
        case keyFromSettings = 39
        /// Sharing changes: the identity's label and whether to replace it; a key's sharing
        /// record (its payload bytes, Docs/vault-format.md).
        case identityLabel = 40, relabel = 41, sharingRecord = 42
        /// `identity`: the age recipient and the Ed25519 signing key (public halves only).
        case recipient = 43, signingKey = 44
        /// 45 and 46 carried caller-built bytes to sign and their signature: no longer used.
        /// `agree`: the ephemeral X25519 shares of a file's stanzas (32 bytes each, at most
        /// `X25519Identity.stanzaLimit`), and the identity's shared secret with each, in order (all zero for a
        /// low-order share).
        case ephemeralShare = 47, sharedSecret = 48
        /// A key's Secret Manager link: the reference, the version stored and when it was fetched.
        case linkReference = 49, linkVersion = 50, linkFetched = 51
        /// A refresh's condition: the fetch time of the link it started from.
        case linkSince = 52
        /// Beside `keyNames`, line for line: each key's Secret Manager link as "reference version
        /// fetched", or "-" for none (doctor's view, which is no use of the session).
        case keyLinks = 53
        /// A link's rotation through Secret Manager: the version it replaced, the Google key its
        /// finish deletes, and when that finish may run (0 once it ran).
        case linkPreviousVersion = 54, linkRetireKey = 55, linkFinishAfter = 56
        /// `unlock` for a vault an ssh slot opened: the data key, in place of the key-encryption key.
        case dataKey = 57
        /// `setPIN`, `unlockWithPIN`: the PIN, and how many wrong ones wipe it. In `status` and a
        /// wrong PIN's answer: the tries left while a PIN is set.
        case pin = 58, pinTries = 59, pinTriesLeft = 60
        /// `signShare`: the recipients, one canonical text a line, a blank line between the groups
        /// (one document each); the answer's serial, and the documents, each a big-endian u32
        /// length and the JSON.
        case shareRecipients = 61, shareSerial = 62, shareDocuments = 63
        /// `settingsAndKey`: 1 when the answer also carries the conversation keys
        /// (`conversationKeys`), so a command's whole session answer is one round trip. An agent
        /// from before leaves them out, and the client asks for them on their own.
        case withConversationKeys = 64
        /// A change to a secret for another tool: its kind; the summaries of every secret; the
        /// note of which tools use one.
        case secretChange = 65, toolSecretSummaries = 66, usedBy = 67
        /// `rekey`'s answer: the kind of each slot beside the passphrase and recovery slots that
        /// holds the new data key, and the warning for each slot it dropped (one field each).
        case slotKept = 68, slotDropped = 69
        /// `putToken`, `takeToken`: the credential and scopes a token is for, and when it expires.
        case cacheKey = 80, expiresAt = 81
        /// The hybrid post-quantum identity (Docs/sharing.md): in an `identity` change, 1 to make a
        /// classic (X25519 only) identity; in `identity`'s answer, the `age1pq1…` recipient's key;
        /// `decapsulate`: each `mlkem768x25519` stanza's encapsulated key (1120 bytes), and the
        /// KEM's shared secret for each (32 bytes, in order).
        case classicIdentity = 90, hybridRecipient = 91, encapsulatedKey = 92, hybridSharedSecret = 93
    }

    public enum ErrorKind: UInt8, Sendable {
        /// The agent holds no vault (never unlocked, or locked).
        case locked = 1
        /// The write was based on an older generation; fetch and try again.
        case stale = 2
        /// The file went back to an older generation.
        case rolledBack = 3
        /// The key-encryption key does not open the vault.
        case wrongKey = 4
        case badRequest = 5
        case failed = 6
        /// A narrow question or change named a key the vault does not have.
        case noSuchKey = 7
        /// The vault's rules refuse a change (no earlier value, a full vault); the message says why.
        case changeRefused = 8
        /// `unlockWithPIN` with a wrong PIN; `pinTriesLeft` says how many are left (0: wiped).
        case wrongPIN = 9
    }
}

/// A request or response being built or read: an operation or status byte and fields.
public struct AgentMessage {
    public var code: UInt8
    public private(set) var fields: [(AgentProtocol.Tag, SecretBytes)] = []

    public init(code: UInt8) { self.code = code }

    public mutating func add(_ tag: AgentProtocol.Tag, secret: SecretBytes) { fields.append((tag, secret)) }
    public mutating func add(_ tag: AgentProtocol.Tag, text: String) { fields.append((tag, SecretBytes(copying: Array(text.utf8)))) }
    /// A name (of a key, a secret, a setting), shown by `key list` and logged: never secret, so
    /// in ordinary memory, as numbers are.
    public mutating func add(_ tag: AgentProtocol.Tag, name: String) {
        Array(name.utf8).withUnsafeBytes { fields.append((tag, SecretBytes(plainCopying: $0))) }
    }
    /// Numbers (dates, counts, flags) are never secret: in ordinary memory, since secret memory
    /// costs about ten system calls a field (Docs/performance.md).
    public mutating func add(_ tag: AgentProtocol.Tag, number: Int64) {
        withUnsafeBytes(of: number.littleEndian) { fields.append((tag, SecretBytes(plainCopying: $0))) }
    }

    public func secret(_ tag: AgentProtocol.Tag) -> SecretBytes? { fields.first { $0.0 == tag }?.1 }
    public func text(_ tag: AgentProtocol.Tag) -> String? {
        secret(tag).map { value in value.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
    }
    /// Every field of `tag`, in order, as text.
    public func texts(_ tag: AgentProtocol.Tag) -> [String] {
        fields.filter { $0.0 == tag }.map { field in field.1.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
    }
    public func number(_ tag: AgentProtocol.Tag) -> Int64? {
        guard let value = secret(tag), value.count == 8 else { return nil }
        return value.withUnsafeBytes { bytes in
            var number: Int64 = 0
            withUnsafeMutableBytes(of: &number) { $0.copyMemory(from: bytes) }
            return Int64(littleEndian: number)
        }
    }

    /// The whole frame, in secret memory.
    public func frame() -> SecretBytes {
        guard let frame = frameIfMemory() else { fatalError("no memory for an agent frame") }
        return frame
    }

    /// The whole frame, or nil when there is no memory for it (the agent then drops the client).
    public func frameIfMemory() -> SecretBytes? {
        let bodyLength = 1 + fields.reduce(0) { $0 + 5 + $1.1.count }
        guard let frame = SecretBytes.allocate(count: 8 + bodyLength) else { return nil }
        frame.withUnsafeMutableBytes { out in
            var offset = 0
            func put(_ bytes: UnsafeRawBufferPointer) {
                guard bytes.count > 0 else { return }
                (out.baseAddress! + offset).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
                offset += bytes.count
            }
            AgentProtocol.magic.withUnsafeBytes { put($0) }
            withUnsafeBytes(of: UInt32(bodyLength).littleEndian) { put($0) }
            withUnsafeBytes(of: code) { put($0) }
            for (tag, value) in fields {
                withUnsafeBytes(of: tag.rawValue) { put($0) }
                withUnsafeBytes(of: UInt32(value.count).littleEndian) { put($0) }
                value.withUnsafeBytes { put($0) }
            }
        }
        return frame
    }

    /// No request or response has more.
    public static let maxFields = 32

    /// Parses a body (the frame without magic and length). Unknown tags are skipped;
    /// a field running past the end, or more than `maxFields` fields, is an error. Fields are
    /// views into `body`: parsing allocates no secret memory.
    public static func parse(body: SecretBytes) -> AgentMessage? {
        body.withUnsafeBytes { bytes -> AgentMessage? in
            guard bytes.count >= 1 else { return nil }
            var message = AgentMessage(code: bytes[0])
            var offset = 1
            var fieldCount = 0
            while offset < bytes.count {
                fieldCount += 1
                guard bytes.count - offset >= 5, fieldCount <= maxFields else { return nil }
                let tag = bytes[offset]
                var length: UInt32 = 0
                withUnsafeMutableBytes(of: &length) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[offset + 1..<offset + 5])) }
                let count = Int(UInt32(littleEndian: length))
                offset += 5
                guard count <= bytes.count - offset else { return nil }
                if let known = AgentProtocol.Tag(rawValue: tag) {
                    message.fields.append((known, body.view(offset..<offset + count)))
                }
                offset += count
            }
            return message
        }
    }
}

/// Reads one frame (the agent's answer) from a descriptor within a deadline, into secret memory.
public enum FrameReader {
    public enum Failure: Error, Equatable {
        case timedOut, closed, malformed, tooLarge, outOfMemory
    }

    /// Waits (with poll) until a whole frame arrived or the deadline passed. The descriptor is
    /// made non-blocking, so no read can outlast the deadline.
    public static func read(_ connection: FileDescriptor, deadline: Double) throws(Failure) -> SecretBytes {
        connection.setNonBlocking()
        var assembler = FrameAssembler(kind: .response)
        while true {
            // Not a Result: its first use is a runtime type lookup (Docs/performance.md).
            let outcome = assembler.take { buffer in
                do { return try connection.readAvailable(into: buffer) } catch { return 0 }
            }
            switch outcome {
            case .complete(let body): return body
            case .closed: throw .closed
            case .refused(.tooLarge): throw .tooLarge
            case .refused(.outOfMemory), .refused(.noRoom): throw .outOfMemory
            case .refused: throw .malformed
            case .waiting:
                guard !Deadline(at: deadline).hasPassed else { throw .timedOut }
                _ = connection.waitReadable(timeout: Deadline(at: deadline).slice(atMost: 1))
            }
        }
    }
}
