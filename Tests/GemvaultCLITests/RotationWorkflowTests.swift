import Foundation
import GeminiClient
import GemvaultTesting
import GoogleAuth
import GoogleHTTP
import Testing
import VaultAccess
import VaultCore
@testable import GemvaultCLI

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

    init() throws {
        _ = try TestVault(in: folder, keys: ["default": Self.oldString], google: ["default": GoogleKeyRecord(resource: Self.oldKey, serviceAccount: Self.serviceAccount)])
        _ = FileManager.default.createFile(atPath: folder.appending("passphrase"), contents: Data(TestVault.passphrase.utf8), attributes: [.posixPermissions: 0o600])
        google.addKey(Self.oldKey, keyString: Self.oldString)
    }

    /// One command's context, as the parser would make it.
    private func context() -> Context {
        Context(environment: ["HOME": folder.path, "XDG_STATE_HOME": folder.appending("state"), "XDG_CONFIG_HOME": folder.appending("config"),
                              "XDG_RUNTIME_DIR": folder.appending("run"), "GEMVAULT_TOKEN_COMMAND": "/bin/echo ya29.rotation-token",
                              "GEMVAULT_ENDPOINT": FakeGoogle.gemini, "GEMVAULT_APIKEYS_ENDPOINT": String(FakeGoogle.apiKeys.dropLast(4))],
                options: ParsedOptions(byName: ["--vault": folder.appending("vault/vault"), "--passphrase-file": folder.appending("passphrase")]))
    }

    private func call(_ flags: [String: String]) -> Invocation {
        Invocation(command: rotationCommands[0], positionals: ["default"], options: ParsedOptions(byName: flags), context: context())
    }

    private func create(_ flags: [String: String] = [:]) throws {
        try GoogleRotation.create(call(["--create": "", "--verify-timeout": "5"].merging(flags) { $1 }), name: "default", transport: google.transport)
    }

    /// The vault as the next command sees it.
    private func stored() throws -> (key: StoredKey, summary: KeySummary) {
        let vault = context().vault
        let key = try #require(try vault.key("default", markUsed: false))
        let summary = try #require(try vault.keySummaries().first { $0.name == "default" })
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
        let before = try context().vault.store.read()
        expectError(GeminiError.self, { try create(["--verify-timeout": "1"]) }, where: { $0.reason == "API_KEY_INVALID" })
        #expect(newKeys.count == 1 && google.keys[newKeys[0]]?.deleted == true && google.keys[Self.oldKey]?.deleted == false)
        #expect(try context().vault.store.read() == before)
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
        try create(["--if-older-than": "100000"])
        #expect(google.keys[Self.oldKey]?.deleted == true && google.keys[made]?.deleted == false && newKeys.count == 1)
        expectSecret(try stored().key.secret, equals: google.keys[made]!.keyString)
    }

    /// A run killed after Google made its key and before the vault held it: the next run
    /// deletes that key, and the vault still has the old one.
    @Test func aKeyMadeByARunKilledBeforeItsWriteIsDeletedByTheNext() throws {
        let leftover = "projects/764086051850/locations/global/keys/gemvault-default-20261201000000"
        google.addKey(leftover, keyString: "AQ.Leftover" + String(repeating: "x", count: 44))
        do {
            let tag = Sodium.fingerprint(try context().vault.identity())
            let journal = try RotationJournal.take(context(), vaultTag: tag, name: "default")
            #expect(journal.interrupted == nil)
            try journal.begin(.init(action: "rotation", made: leftover, current: leftover, retire: Self.oldKey))
        }
        try create(["--if-older-than": "100000"])
        #expect(google.keys[leftover]?.deleted == true && google.keys[Self.oldKey]?.deleted == false)
        expectSecret(try stored().key.secret, equals: Self.oldString)
        let tag = Sodium.fingerprint(try context().vault.identity())
        #expect(try RotationJournal.take(context(), vaultTag: tag, name: "default").interrupted == nil)
    }

    /// `--undo` after a rotation: the old key is undeleted and current again, the newer one deleted.
    @Test func undoBringsThePreviousKeyBack() throws {
        try create()
        let made = try #require(newKeys.first)
        try GoogleRotation.undo(call(["--undo": ""]), name: "default", transport: google.transport)
        #expect(google.keys[Self.oldKey]?.deleted == false && google.keys[made]?.deleted == true)
        #expect(google.calls.contains("POST \(Self.oldKey):undelete"))
        let (key, summary) = try stored()
        expectSecret(key.secret, equals: Self.oldString)
        #expect(summary.google?.resource == Self.oldKey && summary.earlier.first?.google?.resource == made)
    }

    /// `key rm --revoke`: every Google key the vault names for it is deleted, then the key is removed.
    @Test func revokeDeletesTheCurrentAndEarlierKeysThenRemovesTheKey() throws {
        try create(["--keep-old": ""])
        let made = try #require(newKeys.first)
        #expect(google.keys[Self.oldKey]?.deleted == false)
        try GoogleRotation.revoke(call(["--revoke": ""]), name: "default", transport: google.transport)
        #expect(google.keys[made]?.deleted == true && google.keys[Self.oldKey]?.deleted == true)
        #expect(try context().vault.keySummaries().isEmpty)
    }
}
