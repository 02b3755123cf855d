import Foundation
import GeminiClient
import GemvaultTesting
import GoogleAuth
import GoogleHTTP
import Settings
import SystemIO
import Testing
import VaultAccess
import VaultCore
@testable import Rotation

/// Google as `key rotate --create` and `--undo` meet it: the API Keys service with its keys
/// (made, read, listed, deleted, undeleted), and Gemini, which accepts the keys it is told to.
final class FakeGoogle: @unchecked Sendable {
    struct Key {
        var serviceAccount: String
        var restrictions: String
        var keyString: String
        var deleted = false
        var annotations: [String: String] = [:]
    }

    static let apiKeys = "https://apikeys.googleapis.com/v2/"  // the environment may name only Google's hosts (or loopback)
    static let gemini = "https://gemini.test"
    var keys: [String: Key] = [:]
    /// Key strings Gemini accepts.
    var geminiAccepts: Set<String> = []
    var geminiAcceptsNewKeys = true
    var refuseDeletes = false
    /// "METHOD path" of every call, in order.
    var calls: [String] = []
    private var made = 0

    lazy var transport = FakeTransport(answering: { [unowned self] in self.answer($0) })

    func addKey(_ name: String, keyString: String, serviceAccount: String = RotationWorkflowTests.serviceAccount) {
        keys[name] = Key(serviceAccount: serviceAccount, restrictions: #"{"apiTargets":[{"service":"generativelanguage.googleapis.com"}]}"#,
                         keyString: keyString)
        geminiAccepts.insert(keyString)
    }

    func keyJSON(_ name: String, _ key: Key, withString: Bool = false) -> String {
        let annotations = key.annotations.map { #""\#($0.key)":"\#($0.value)""# }.joined(separator: ",")
        return #"{"name":"\#(name)","createTime":"2026-12-01T00:00:00Z","etag":"W/\"e-\#(name.count)\"","serviceAccountEmail":"\#(key.serviceAccount)","restrictions":\#(key.restrictions),"annotations":{\#(annotations)}"#
            + (key.deleted ? #","deleteTime":"2026-12-02T00:00:00Z""# : "") + (withString ? #","keyString":"\#(key.keyString)""# : "") + "}"
    }

    func operation(_ response: String) -> FakeTransport.Reply { .json(200, #"{"name":"operations/op-\#(calls.count)","done":true,"response":\#(response)}"#) }

    func answer(_ sent: FakeTransport.Sent) -> FakeTransport.Reply {
        if sent.url.hasPrefix(Self.gemini) {
            calls.append("\(sent.method) gemini models")
            let key = String(sent.secretHeader?.dropFirst("x-goog-api-key: ".count) ?? "")
            guard geminiAccepts.contains(key) else {
                return .json(400, #"{"error":{"code":400,"message":"API key not valid.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com"}]}}"#)
            }
            return .json(200, #"{"models":[]}"#)
        }
        let path = String(sent.url.dropFirst(Self.apiKeys.count))
        let resource = String(path.prefix { $0 != "?" })
        calls.append("\(sent.method) \(resource)")
        let notFound = FakeTransport.Reply.json(404, #"{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}"#)
        switch sent.method {
        case "GET" where resource.hasSuffix("/keys"):
            let listed = keys.filter { !$0.value.deleted }.sorted { $0.key < $1.key }.map { keyJSON($0.key, $0.value) }
            return .json(200, #"{"keys":[\#(listed.joined(separator: ","))]}"#)
        case "GET" where resource == "keys:lookupKey":
            let string = String(path.split(separator: "=").last ?? "").removingPercentEncoding ?? ""
            guard let found = keys.first(where: { $0.value.keyString == string }) else { return notFound }
            return .json(200, #"{"name":"\#(found.key)"}"#)
        case "GET" where resource.hasSuffix("/keyString"):
            guard let key = keys[String(resource.dropLast("/keyString".count))] else { return notFound }
            return .json(200, #"{"keyString":"\#(key.keyString)"}"#)
        case "GET":
            guard let key = keys[resource] else { return notFound }
            return .json(200, keyJSON(resource, key))
        case "POST" where resource.hasSuffix(":undelete"):
            let name = String(resource.dropLast(":undelete".count))
            guard keys[name] != nil else { return notFound }
            keys[name]!.deleted = false
            return operation(keyJSON(name, keys[name]!))
        case "POST":
            let keyId = String(path.split(separator: "=").last ?? "")
            let body = (try? JSONSerialization.jsonObject(with: Data(sent.body ?? []))) as? [String: Any] ?? [:]
            let restrictions = body["restrictions"].flatMap { try? JSONSerialization.data(withJSONObject: $0, options: [.sortedKeys]) }
            made += 1
            let name = resource + "/" + keyId
            keys[name] = Key(serviceAccount: body["serviceAccountEmail"] as? String ?? "", restrictions: restrictions.map { String(decoding: $0, as: UTF8.self) } ?? "null",
                             keyString: "AQ.Ne\(made)" + String(repeating: "w", count: 48), annotations: body["annotations"] as? [String: String] ?? [:])
            if geminiAcceptsNewKeys { geminiAccepts.insert(keys[name]!.keyString) }
            return operation(keyJSON(name, keys[name]!, withString: true))
        case "DELETE":
            guard !refuseDeletes else { return .json(403, #"{"error":{"code":403,"message":"Permission 'apikeys.keys.delete' denied.","status":"PERMISSION_DENIED"}}"#) }
            guard keys[resource] != nil else { return notFound }
            keys[resource]!.deleted = true
            return operation(keyJSON(resource, keys[resource]!))
        default:
            return notFound
        }
    }
}

/// `key rotate --create` and `--undo` in process, over the fake Google and a vault in a
/// temporary folder: each step, what a failure leaves, and the journal a killed run leaves.
@Suite(.serialized) struct RotationWorkflowTests {
    static let serviceAccount = "gemini-bot@demo-project.iam.gserviceaccount.com"
    static let oldKey = "projects/764086051850/locations/global/keys/old-key"
    static let oldString = "AQ.Ab8RN6Lq0c3xT1mVw7yZk2PaH5sJd9fGuE4bQiRtYnXoCzMhKp"

    let folder = TemporaryFolder("rotation")
    let google = FakeGoogle()
    let vault: TestVault

    init() throws {
        vault = try TestVault(in: folder, keys: ["default": Self.oldString], google: ["default": GoogleKeyRecord(resource: Self.oldKey, serviceAccount: Self.serviceAccount)])
        google.addKey(Self.oldKey, keyString: Self.oldString)
    }

    let progress = RecordingProgress()

    /// One command's door to the vault, opened with the passphrase (no session).
    private func access() -> VaultAccess {
        let rollback = RollbackGuard(record: vault.generations, vaultPath: vault.store.path, acceptsRollback: false)
        return VaultAccess(file: VaultFileAccess(store: vault.store, rollback: rollback, warn: { _ in }), agent: nil, ui: ScriptedPassphrase(),
                           observe: { _ in }, warn: { _ in })
    }

    /// One rotation command, as `key rotate` would make it from `options`.
    private func request(_ options: [RotationRequest.Option: String] = [:]) -> RotationRequest {
        let environment = ["HOME": folder.path, "GEMVAULT_TOKEN_COMMAND": "/bin/echo ya29.rotation-token",
                           "GEMVAULT_ENDPOINT": FakeGoogle.gemini, "GEMVAULT_APIKEYS_ENDPOINT": String(FakeGoogle.apiKeys.dropLast(4))]
        let vaultPath = vault.store.path
        return RotationRequest(given: options, vault: access(), stateHome: folder.appending("state"), environment: environment, home: folder.path,
                               resolve: { try Settings.resolve(SettingLayers(vaultPath: vaultPath, vaultSettings: $0, environment: environment)) },
                               progress: progress, transport: google.transport, checker: Self.geminiChecker)
    }

    /// The check `key rotate` makes: Gemini's client, over the same fake transport.
    static func geminiChecker(_ settings: Settings, _ transport: any HTTPTransport) throws -> any KeyChecker {
        GeminiKeyChecker(settings: settings, transport: transport)
    }

    private func create(_ options: [RotationRequest.Option: String] = [:]) throws {
        try GoogleRotation.create(request([.verifyTimeout: "5"].merging(options) { $1 }), name: "default")
    }

    private var tag: String { get throws { Sodium.fingerprint(try access().identity()) } }

    private func journal() throws -> RotationJournal {
        try RotationJournal.take(access(), stateHome: folder.appending("state"), vaultTag: try tag, name: "default", progress: progress)
    }

    /// The vault as the next command sees it.
    private func stored() throws -> (key: StoredKey, summary: KeySummary) {
        let key = try #require(try access().key("default", markUsed: false))
        let summary = try #require(try access().keySummaries().first { $0.name == "default" })
        return (key, summary)
    }

    private var newKeys: [String] { google.keys.keys.filter { $0 != Self.oldKey }.sorted() }

    @Test func aRotationMakesChecksStoresThenDeletesTheOldKey() throws {
        try create()
        let made = try #require(newKeys.first)
        let newKey = try #require(google.keys[made])
        #expect(newKeys.count == 1 && !newKey.deleted && newKey.serviceAccount == Self.serviceAccount)
        #expect(newKey.restrictions == #"{"apiTargets":[{"service":"generativelanguage.googleapis.com"}]}"#)
        #expect(newKey.annotations["gemvault-key"] == "default" && newKey.annotations["gemvault-vault"]?.isEmpty == false)
        #expect(google.keys[Self.oldKey]?.deleted == true)

        let (key, summary) = try stored()
        expectSecret(key.secret, equals: newKey.keyString)
        #expect(summary.google == GoogleKeyRecord(resource: made, serviceAccount: Self.serviceAccount))
        #expect(summary.earlier.first?.google?.resource == Self.oldKey && summary.earlier.first?.masked == "AQ.A…MhKp")
        // Created, checked with Gemini, stored, and only then the old key deleted (with its etag read just before).
        let order = google.calls.filter { !$0.hasPrefix("GET projects/764086051850/locations/global/keys/gemvault") }
        #expect(order == ["GET \(Self.oldKey)", "GET projects/764086051850/locations/global/keys", "POST projects/764086051850/locations/global/keys",
                          "GET gemini models", "GET \(Self.oldKey)", "DELETE \(Self.oldKey)"])
        #expect(google.transport.sent.allSatisfy { $0.secretHeader?.hasPrefix("x-goog-api-key: ") == true || $0.secretHeader == "Authorization: Bearer ya29.rotation-token" })
    }

    @Test func aNewKeyGeminiRefusesIsDeletedAgainAndTheVaultStaysAsItWas() throws {
        google.geminiAcceptsNewKeys = false
        let before = try vault.store.read()
        expectError(GeminiError.self, { try create([.verifyTimeout: "1"]) }, where: { $0.reason == "API_KEY_INVALID" })
        #expect(newKeys.count == 1 && google.keys[newKeys[0]]?.deleted == true && google.keys[Self.oldKey]?.deleted == false)
        #expect(try vault.store.read() == before)
        expectSecret(try stored().key.secret, equals: Self.oldString)
    }

    /// The old key's delete failed: the new key stays current, and the journal remembers the
    /// delete, which the next run finishes before anything else (here it then has nothing to do).
    @Test func aDeleteThatFailedIsFinishedByTheNextRun() throws {
        google.refuseDeletes = true
        expectError(GoogleError.self, { try create() }, where: { $0.message.hasPrefix("the new key is stored and current, but deleting the old key \(Self.oldKey) failed") })
        let made = try #require(newKeys.first)
        expectSecret(try stored().key.secret, equals: google.keys[made]!.keyString)
        #expect(google.keys[Self.oldKey]?.deleted == false)

        google.refuseDeletes = false
        try create([.ifOlderThan: "100000"])
        #expect(google.keys[Self.oldKey]?.deleted == true && google.keys[made]?.deleted == false && newKeys.count == 1)
        expectSecret(try stored().key.secret, equals: google.keys[made]!.keyString)
    }

    /// A run killed after Google made its key and before the vault held it: the next run
    /// deletes that key, and the vault still has the old one.
    @Test func aKeyMadeByARunKilledBeforeItsWriteIsDeletedByTheNext() throws {
        let leftover = "projects/764086051850/locations/global/keys/gemvault-default-20261201000000"
        google.addKey(leftover, keyString: "AQ.Leftover" + String(repeating: "x", count: 44))
        do {
            let journal = try journal()
            #expect(journal.interrupted == nil)
            try journal.begin(.init(action: .rotation, made: leftover, current: leftover, retire: Self.oldKey))
        }
        try create([.ifOlderThan: "100000"])
        #expect(google.keys[leftover]?.deleted == true && google.keys[Self.oldKey]?.deleted == false)
        expectSecret(try stored().key.secret, equals: Self.oldString)
        #expect(try journal().interrupted == nil)
    }

    /// `--undo` after a rotation: the old key is undeleted and current again, the newer one deleted.
    @Test func undoBringsThePreviousKeyBack() throws {
        try create()
        let made = try #require(newKeys.first)
        try GoogleRotation.undo(request(), name: "default")
        #expect(google.keys[Self.oldKey]?.deleted == false && google.keys[made]?.deleted == true)
        #expect(google.calls.contains("POST \(Self.oldKey):undelete"))
        let (key, summary) = try stored()
        expectSecret(key.secret, equals: Self.oldString)
        #expect(summary.google?.resource == Self.oldKey && summary.earlier.first?.google?.resource == made)
    }

    /// `key rm --revoke`: every Google key the vault names for it is deleted, then the key is removed.
    @Test func revokeDeletesTheCurrentAndEarlierKeysThenRemovesTheKey() throws {
        try create([.keepOld: ""])
        let made = try #require(newKeys.first)
        #expect(google.keys[Self.oldKey]?.deleted == false)
        try GoogleRotation.revoke(request(), name: "default")
        #expect(google.keys[made]?.deleted == true && google.keys[Self.oldKey]?.deleted == true)
        #expect(try access().keySummaries().isEmpty)
    }

    /// A journal in the words earlier releases wrote (Fixtures/) is read, and the run it names
    /// is finished: the key made before the vault write is deleted, the vault keeps the old one.
    @Test func aJournalInTheOnDiskFormOfEarlierReleasesIsReadAndItsRunFinished() throws {
        let leftover = "projects/764086051850/locations/global/keys/gemvault-default-20261201000000"
        google.addKey(leftover, keyString: "AQ.Leftover" + String(repeating: "x", count: 44))
        let rotations = try TrustedFolder.create(folder.appending("state") + "/gemvault/rotations")
        try rotations.replace(Sodium.fingerprint(try tag + "\u{0}default") + ".lock", with: try Fixtures().bytes("journal-rotation-before-write.json"),
                              tempPrefix: ".journal.tmp.")
        #expect(try journal().interrupted == RotationJournal.Intent(action: .rotation, made: leftover, current: leftover, retire: Self.oldKey))
        try create([.ifOlderThan: "100000"])
        #expect(google.keys[leftover]?.deleted == true && google.keys[Self.oldKey]?.deleted == false)
        #expect(progress.notes.contains("the last rotation of 'default' was interrupted before it stored its new key: deleted that key, \(leftover), at Google"))
        expectSecret(try stored().key.secret, equals: Self.oldString)
        #expect(try journal().interrupted == nil)
    }

    /// The journal's action is an enum written as the words it always was; another word is refused.
    @Test func journalRecordsKeepTheirOnDiskWords() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        for (name, action) in [("journal-rotation-before-write.json", RotationJournal.Action.rotation), ("journal-undo-linked.json", .undo)] {
            let bytes = try Fixtures().bytes(name)
            let intent = try JSONDecoder().decode(RotationJournal.Intent.self, from: Data(bytes))
            #expect(intent.action == action)
            #expect(Array(try encoder.encode(intent)) == bytes)
        }
        #expect("\(RotationJournal.Action.undo)" == "--undo" && "\(RotationJournal.Action.rotation)" == "rotation")
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(RotationJournal.Intent.self, from: Data(#"{"action":"create","current":"x"}"#.utf8)) }
    }

    /// Another machine's live claim on a linked key's rotation: a person's --create stops,
    /// a timer's run leaves it to its holder until the secret is stuck, --force takes it over,
    /// and a claim that stopped being renewed is taken over.
    @Test func aClaimHeldByAnotherRunStopsLeavesOrIsTakenOver() throws {
        let reference = try #require(SecretReference(parsing: "gsm://projects/demo-project/secrets/gemini"))
        let now: Int64 = 1_700_000_000
        let live = "claimed host=other machine=m boot=b pidns=1 pid=42 since=\(now - 60) time=\(now - 10)"
        func judge(_ claim: String, _ options: [RotationRequest.Option: String] = [:], versionAge: Int64 = 0, stuckAfter: Int64? = nil) throws -> Bool {
            try FleetRotation.judge(claim, request(options), reference, name: "default", now: now, versionAge: versionAge, stuckAfter: stuckAfter)
        }
        expectError(RotationError.self, { try judge(live) },
                    where: { $0 == .failed("the rotation of projects/demo-project/secrets/gemini is claimed by other (process 42), claimed 60 seconds ago and renewed 10 seconds ago; nothing was rotated",
                                           hint: "wait for it, or, when that rotator is gone or not yours: gemvault key rotate --create default --force") })
        #expect(try judge(live, versionAge: 3600, stuckAfter: 7200) == false)
        #expect(progress.notes.last?.hasPrefix("rotated elsewhere: other (process 42)") == true)
        expectError(RotationError.self, { try judge(live, versionAge: 7200, stuckAfter: 7200) }, where: { $0.message.contains("is stuck") })
        #expect(try judge(live, [.forceClaim: ""]) == true)
        #expect(progress.warnings.last?.hasPrefix("--force: taking over the live claim") == true)
        #expect(try judge("claimed host=other machine=m boot=b pidns=1 pid=42 since=\(now - 600) time=\(now - 600)") == true)
        #expect(progress.notes.last?.hasSuffix("and stopped renewing it 10 minutes ago") == true)
        #expect(try judge("rotated version=8 time=\(now)") == true)
    }

    @Test func googleKeyIdsFitTheAPIsPattern() {
        let pattern = #/[a-z]([a-z0-9-]{0,61}[a-z0-9])?/#
        for name in ["default", "Work_Key.2", String(repeating: "x", count: 128), "-", "..", "A"] {
            let id = GoogleRotation.keyId(name: name, stamp: "20261202050749")
            #expect(id.wholeMatch(of: pattern) != nil, "\(id)")
            #expect(id.hasPrefix("gemvault-") && id.hasSuffix("-20261202050749") && id.count <= 63)
        }
        #expect(GoogleRotation.keyId(name: "Work_Key.2", stamp: "20261202050749") == "gemvault-work-key-2-20261202050749")
    }

    /// `key rotate` with a pasted key: stored once the check accepted it with the vault's
    /// settings; a refused key changes nothing; --no-verify stores it unchecked.
    @Test func aPastedKeyIsStoredOnlyOnceItsCheckAcceptsIt() throws {
        struct Refused: Error {}
        let before = try vault.store.read()
        let refused = "AQ.Refused" + String(repeating: "r", count: 45)
        #expect(throws: Refused.self) {
            try PastedRotation.replace("default", with: SecretBytes(utf8: refused), now: 1_800_000_000, in: access(), check: { _ in throw Refused() })
        }
        #expect(try vault.store.read() == before)

        let accepted = "AQ.Accepted" + String(repeating: "a", count: 44)
        var checkedWith: [String: String]?
        let outcome = try PastedRotation.replace("default", with: SecretBytes(utf8: accepted), now: 1_800_000_000, in: access(), check: { checkedWith = $0 })
        #expect(checkedWith != nil && outcome.masked == "AQ.A…MhKp")
        expectSecret(try stored().key.secret, equals: accepted)
        #expect(try stored().summary.earlier.first?.masked == "AQ.A…MhKp")

        let unchecked = "AQ.Unchecked" + String(repeating: "u", count: 43)
        _ = try PastedRotation.replace("default", with: SecretBytes(utf8: unchecked), now: 1_800_000_001, in: access(), check: nil)
        expectSecret(try stored().key.secret, equals: unchecked)
    }
}
