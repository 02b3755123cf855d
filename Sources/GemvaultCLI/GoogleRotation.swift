import GeminiClient
import GemvaultConfig
import GoogleAuth
import GoogleKeys
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

/// Hands-off rotation (`key rotate --create`, `--undo`, `key rm --revoke`): the steps at
/// Google come from GoogleAuth, the vault through VaultAccess; this file orders them, so that
/// an interruption at any point leaves a vault that opens with the old or the new key current
/// (Docs/rotation.md).
enum GoogleRotation {
    /// What a rotation reads of the vault, and how it writes: through the session, or opened
    /// with the passphrase asked once (one Argon2 run for the read and every write).
    struct VaultView {
        let settings: [String: String]
        let key: StoredKey
        let summary: KeySummary
        /// Names this vault in the annotations of the keys it makes, without saying where it is.
        let tag: String
        let apply: (VaultChange) throws -> VaultChange.Outcome
        /// The current value's Google key as the vault now has it, when that can be asked
        /// without a passphrase (through the session): after a write that failed in transit.
        let currentGoogle: () -> GoogleKeyRecord?
    }

    static func withVault<T>(_ context: Context, name: String, _ work: (VaultView) throws -> T) throws -> T {
        try VaultContents.validateName(name)
        try context.vault.checkBeforePrompt()
        let file = try context.vault.readFile()
        let tag = Sodium.fingerprint(file.vaultIDHex ?? ProcessIdentity.absolutePath(context.vaultPath))
        if try context.vault.sessionIsOpen(), let settings = try context.vault.sessionSettings() {
            guard let key = try context.vault.key(name, markUsed: false),
                  let summary = try context.vault.keySummaries().first(where: { $0.name == name }) else { throw VaultError.keyNotFound(name: name) }
            return try work(VaultView(settings: settings, key: key, summary: summary, tag: tag, apply: { try context.vault.apply($0) },
                                      currentGoogle: { (try? context.vault.keySummaries())?.first { $0.name == name }?.google }))
        }
        return try context.withPassphrase { secret in
            guard let known = try PassphraseKey.derive(secret, opening: file) else { throw VaultError.wrongPassphrase }
            let document = try VaultDocument.open(file, path: context.vaultPath, kek: known.kek)
            context.vault.note(document.contents)
            guard let key = document.contents.key(named: name) else { throw VaultError.keyNotFound(name: name) }
            return try work(VaultView(settings: document.contents.settings, key: key, summary: key.summary, tag: tag, apply: { change in
                var outcome: VaultChange.Outcome?
                try context.vault.modify(unlockWith: secret, knownKey: known) { outcome = try change.apply(to: $0.contents) }
                return outcome!
            }, currentGoogle: { nil }))
        }
    }

    static func settings(_ call: Invocation, vault: [String: String]) throws -> Settings {
        var layers = try call.context.settingLayers(call)
        layers.vaultSettings = vault
        layers.vaultPath = call.context.vaultPath
        return try Settings.resolve(layers)
    }

    static func credentials(_ call: Invocation, _ settings: Settings) -> GoogleCredentials {
        GoogleCredentials(CredentialSettings(tokenCommand: settings[.tokenCommand], commandTimeout: settings[.keyCommandTimeout],
                                             environment: call.context.environment, home: call.context.paths.home, timeout: settings[.timeout],
                                             allowInsecure: call.flag("--allow-insecure-endpoint"), warn: { Console.warning($0) }))
    }

    /// An API Keys client with a fresh token. The quota project is the setting, else the
    /// credential file's, else `project` (the key's own, once known).
    static func client(_ call: Invocation, _ settings: Settings, project: String?) throws -> (APIKeysClient, AccessToken) {
        let token = try credentials(call, settings).token()
        return (APIKeysClient(endpoint: settings[.apikeysEndpoint], token: token, quotaProject: quotaProject(settings, token, project: project),
                              timeout: settings[.timeout], retries: settings[.retries]), token)
    }

    /// The project a user credential's calls are billed to: the setting, the credential's own,
    /// else the project of the key at hand.
    static func quotaProject(_ settings: Settings, _ token: AccessToken, project: String?) -> String? {
        settings[.quotaProject] ?? token.quotaProject ?? project
    }

    /// What `--json` prints: the Google keys' names, never a key.
    struct Report: Encodable {
        let name: String
        let action: String
        @Nullable var old_key: String?
        @Nullable var new_key: String?
        @Nullable var service_account: String?
        let old_key_deleted: Bool
        let age_days: Int64
    }

    static func finish(_ call: Invocation, _ report: Report) throws {
        if call.flag("--json") { try Output.json(report, schema: .keyRotate) }
    }

    // MARK: key rotate --create

    static func create(_ call: Invocation, name: String) throws {
        let verifyLimit = try seconds(call, "--verify-timeout", default: 300)
        let olderThan = try call.value("--if-older-than").map { text -> Int64 in
            guard let days = Int64(text), days >= 0 else { throw UsageError("--if-older-than takes a whole number of days, not '\(text)'", command: call.command) }
            return days
        }
        try withVault(call.context, name: name) { vault in
            let age = max(0, Output.now() - vault.key.updated) / 86400
            if let olderThan, age < olderThan {
                Console.note("key '\(name)' is \(age) day\(age == 1 ? "" : "s") old, younger than \(olderThan): nothing to do")
                try finish(call, Report(name: name, action: "skipped", old_key: vault.key.google?.resource, new_key: vault.key.google?.resource,
                                        service_account: vault.key.google?.serviceAccount, old_key_deleted: false, age_days: age))
                return
            }
            try rotate(call, name: name, vault: vault, age: age, verifyLimit: verifyLimit)
        }
    }

    static func seconds(_ call: Invocation, _ option: String, default value: Double) throws -> Double {
        guard let text = call.value(option) else { return value }
        guard let seconds = DurationText.seconds(text), seconds >= 1, seconds <= 3600 else {
            throw UsageError("\(option) takes a duration from 1s to 1h (like 300, 90s or 5m), not '\(text)'", command: call.command)
        }
        return seconds
    }

    private static func rotate(_ call: Invocation, name: String, vault: VaultView, age: Int64, verifyLimit: Double) throws {
        let settings = try settings(call, vault: vault.settings)
        GeminiClient.prepareNetwork()
        let (client, token) = try client(call, settings, project: call.value("--project"))
        Console.note("using \(token.source.label) for the API Keys service")

        // (1) The current key's resource: recorded by an earlier rotation, else looked up.
        var resource = vault.key.google?.resource
        var foundByLookup = false
        if resource == nil {
            Console.note("looking the current key of '\(name)' up at Google (keys:lookupKey)")
            do {
                resource = try client.lookup(vault.key.secret)
                foundByLookup = true
            } catch {
                let flagsGiven = call.value("--service-account") != nil && call.value("--project") != nil
                // A 403 is also what a credential without the role gets: told as such unless the
                // new key's home was given.
                guard error.status == 404 || (error.status == 403 && flagsGiven) else { throw error }
                guard flagsGiven else {
                    throw GoogleError(.refused, "Google could not find the current key of '\(name)' (\(error.message))",
                                      hint: "for a key that lookup cannot find, give the new key's home: --project PROJECT --service-account EMAIL",
                                      status: error.status, reason: error.reason)
                }
                Console.note("Google could not find the current key; making a new one in project \(call.value("--project")!) as asked")
            }
        }

        // (2) Read it: service account, restrictions, display name, project.
        var current: GoogleKey?
        if let resource {
            let key = try client.get(resource)
            guard !key.isDeleted else {
                throw GoogleError(.refused, "the current key of '\(name)' (\(resource)) was deleted at Google on \(key.deleteTime ?? "?")",
                                  hint: "'gemvault key rotate --undo \(name)' brings back the previous one, or store a working key with 'gemvault key rotate \(name)'")
            }
            current = key
        }
        guard let project = call.value("--project") ?? current?.project else { throw UsageError("--project is needed", command: call.command) }
        client.quotaProject = quotaProject(settings, token, project: project)
        guard let serviceAccount = call.value("--service-account") ?? current?.serviceAccountEmail, !serviceAccount.isEmpty else {
            throw GoogleError(.refused, "the current key of '\(name)' is not bound to a service account, and Gemini takes only auth keys",
                              hint: "name the service account the new key is bound to: --service-account EMAIL")
        }
        let restrictions: JSONValue = current.flatMap { $0.isUnrestricted ? nil : $0.restrictions }
            ?? (current == nil ? .object(["apiTargets": .array([.object(["service": .string("generativelanguage.googleapis.com")])])]) : .null)
        guard restrictions != .null else {
            throw GoogleError(.refused, "the current key of '\(name)' (\(resource ?? "?")) has no restrictions; gemvault makes no unrestricted key",
                              hint: "restrict it to the Generative Language API in the Cloud console first, then rotate again")
        }

        // Left by an interrupted rotation of this vault's key: made at Google, never stored.
        var known = Set([resource].compactMap { $0 } + vault.summary.earlier.compactMap { $0.google?.resource })
        if let record = vault.key.google { known.insert(record.resource) }
        reportLeftovers(client, project: project, name: name, tag: vault.tag, known: known, earlier: vault.summary.earlier)

        // (3) Create the new key with the same binding and restrictions, and wait for it.
        let stamp = String(Output.isoDate(Output.now()).filter(\.isNumber))
        let keyId = Self.keyId(name: name, stamp: stamp)
        Console.note("creating \(keyId) in project \(project), bound to \(serviceAccount)")
        let started = try client.create(project: project, keyId: keyId, displayName: String("gemvault \(name) \(stamp)".prefix(63)),
                                        restrictions: restrictions, serviceAccount: serviceAccount,
                                        annotations: ["gemvault-vault": vault.tag, "gemvault-key": String(name.prefix(63))])
        let created = try client.wait(started, what: "creating \(keyId)")
        let newName = created.key?.name ?? "projects/\(project)/locations/global/keys/\(keyId)"

        // Any failure from here until the vault holds the new key deletes it again.
        let secret: SecretBytes
        do {
            secret = try created.keyString ?? client.keyString(newName)
            Redaction.register(secret)
            let made = try client.get(newName)
            guard !made.isUnrestricted else {
                throw GoogleError(.refused, "Google made \(newName) without restrictions; gemvault does not keep an unrestricted key")
            }
            guard made.serviceAccountEmail == serviceAccount else {
                throw GoogleError(.refused, "Google made \(newName) bound to \(made.serviceAccountEmail ?? "no service account"), not to \(serviceAccount)")
            }
            // (4) The new key against the endpoint it will be used with.
            try verify(secret, settings: settings, limit: verifyLimit)
            // (5) Stored as the current value; the old one goes into the history with its name.
            let replaced = foundByLookup ? GoogleKeyRecord(resource: resource!, serviceAccount: current?.serviceAccountEmail ?? "") : nil
            _ = try vault.apply(.rotateKey(name: name, secret: secret, now: Output.now(),
                                           google: GoogleKeyRecord(resource: newName, serviceAccount: serviceAccount), replacedGoogle: replaced))
        } catch {
            // A session that saved the change but whose answer was lost has the new key current:
            // that one must stay.
            if vault.currentGoogle()?.resource != newName { undoCreate(client, newName) }
            throw error
        }
        Console.note("key '\(name)' is now \(secret.masked) (\(newName)), which Gemini accepted; the previous value is in its history")

        // (6) Delete the old key at Google, with its etag.
        var deleted = false
        if let resource, !call.flag("--keep-old") {
            do {
                try deleteAtGoogle(client, resource)
                deleted = true
                Console.note("deleted the old key \(resource) at Google; Google may still accept it for up to about 25 minutes, and can undelete it for 30 days ('gemvault key rotate --undo \(name)')")
            } catch let error as GoogleError {
                try? finish(call, Report(name: name, action: "created", old_key: resource, new_key: newName, service_account: serviceAccount,
                                         old_key_deleted: false, age_days: age))
                // The old key's own project: a first rotation's --project names where the new one goes.
                let old = GoogleKeyRecord(resource: resource, serviceAccount: "")
                throw GoogleError(error.category, "the new key is stored and current, but deleting the old key \(resource) failed: \(error.message)",
                                  hint: "delete it by hand: gcloud services api-keys delete \(old.keyId) --project \(old.project ?? project)",
                                  status: error.status, reason: error.reason)
            }
        } else if let resource {
            Console.note("the old key \(resource) is kept at Google (--keep-old) and still works")
        } else {
            Console.note("the old key was not found at Google, so it was not deleted: delete it where it was made")
        }
        try finish(call, Report(name: name, action: "created", old_key: resource, new_key: newName, service_account: serviceAccount,
                                old_key_deleted: deleted, age_days: age))
    }

    /// `gemvault-NAME-YYYYMMDDhhmmss`, within the API's `[a-z]([a-z0-9-]{0,61}[a-z0-9])?`.
    static func keyId(name: String, stamp: String) -> String {
        var part = ""
        for character in name.lowercased() {
            let allowed = (character >= "a" && character <= "z") || (character >= "0" && character <= "9")
            if allowed { part.append(character) } else if !part.hasSuffix("-") { part.append("-") }
        }
        part = String(part.prefix(63 - "gemvault-".count - 1 - stamp.count))
        while part.hasSuffix("-") { part.removeLast() }
        while part.hasPrefix("-") { part.removeFirst() }
        return "gemvault-" + (part.isEmpty ? "key" : part) + "-" + stamp
    }

    static func deleteAtGoogle(_ client: APIKeysClient, _ resource: String) throws {
        let key = try client.get(resource)
        if key.isDeleted { return }
        _ = try client.wait(try client.delete(resource, etag: key.etag), what: "deleting \(resource)")
    }

    /// After a failure: the key just made is deleted again, or named for deleting by hand.
    static func undoCreate(_ client: APIKeysClient, _ resource: String) {
        do {
            _ = try client.wait(try client.delete(resource, etag: nil), what: "deleting \(resource)")
            Console.note("deleted the new key \(resource) at Google again; the vault is as it was")
        } catch {
            Console.warning("the new key \(resource) could not be deleted at Google (\(error.message)); delete it by hand: gcloud services api-keys delete \(GoogleKeyRecord(resource: resource, serviceAccount: "").keyId) --project \(GoogleKeyRecord(resource: resource, serviceAccount: "").project ?? "?")")
        }
    }

    /// Keys this vault made for `name` that it never stored (a rotation killed between the
    /// create and the write) are deleted; earlier values still live at Google are named.
    static func reportLeftovers(_ client: APIKeysClient, project: String, name: String, tag: String, known: Set<String>, earlier: [KeySummary.Earlier]) {
        guard let keys = try? client.list(project: project, showDeleted: false) else {
            Console.warning("could not list the keys of project \(project) to look for keys an interrupted rotation left")
            return
        }
        for key in keys where key.annotations?["gemvault-vault"] == tag && key.annotations?["gemvault-key"] == String(name.prefix(63)) && !known.contains(key.name) {
            Console.warning("found \(key.name), made by an interrupted rotation of '\(name)' and never stored; deleting it")
            do { try deleteAtGoogle(client, key.name) } catch {
                Console.warning("could not delete \(key.name): \((error as? GoogleError)?.message ?? "\(error)"); delete it by hand")
            }
        }
        let live = Set(keys.map(\.name))
        for value in earlier {
            if let resource = value.google?.resource, live.contains(resource) {
                Console.warning("an earlier value of '\(name)' (\(value.masked), \(resource)) still works at Google (kept with --keep-old, or a rotation was interrupted before deleting it)")
            }
        }
    }

    /// Lists the models with the new key, through Google's propagation window: a new key may
    /// be refused for minutes before it works.
    static func verify(_ key: SecretBytes, settings: Settings, limit: Double) throws {
        let configuration = ClientConfiguration(endpoint: settings[.endpoint], apiVersion: settings[.apiVersion], timeout: settings[.timeout],
                                                maxAttempts: settings[.retries] + 1)
        let errors = ErrorMapper(keyOrigin: "the new key", keyReplaceHint: "Google may need a few more minutes; nothing was changed",
                                 keyKind: key.googleKeyKind, model: settings[.model], apiVersion: settings[.apiVersion])
        let start = Clock.monotonicSeconds()
        var delay = 1.0
        while true {
            do {
                _ = try GeminiClient(configuration: configuration, apiKey: key, errors: errors).listModels()
                return
            } catch let error as GeminiError where error.category != .interrupted {
                let elapsed = Clock.monotonicSeconds() - start
                guard elapsed + delay < limit else {
                    throw GeminiError(category: error.category, message: "the new key was still refused after \(Int(elapsed)) s: \(error.message)",
                                      hint: "Google can take up to 5 minutes before a new key works; try again with a longer --verify-timeout",
                                      status: error.status, reason: error.reason)
                }
                Console.note("the new key is not accepted yet (\(error.status.map { "HTTP \($0) " } ?? "")\(error.reason)); new keys can take up to 5 minutes, trying again in \(Int(delay)) s (\(Int(elapsed)) of \(Int(limit)) s)")
                Clock.sleep(delay)
                delay = min(delay * 2, 15)
            }
        }
    }

    // MARK: key rotate --undo

    static func undo(_ call: Invocation, name: String) throws {
        try withVault(call.context, name: name) { vault in
            let age = max(0, Output.now() - vault.key.updated) / 86400
            guard let newer = vault.key.google else {
                throw CommandFailure(.failure, "the current value of '\(name)' was not made by 'key rotate --create'; nothing to undo at Google",
                                     hint: "'gemvault key rollback \(name)' makes the previous value current in the vault only")
            }
            guard let previous = vault.summary.earlier.first?.google else {
                throw CommandFailure(.failure, "the previous value of '\(name)' has no key at Google that gemvault knows",
                                     hint: "'gemvault key rollback \(name)' makes it current in the vault only")
            }
            let settings = try settings(call, vault: vault.settings)
            let (client, _) = try client(call, settings, project: previous.project)
            let old = try client.get(previous.resource)
            if old.isDeleted {
                Console.note("undeleting \(previous.resource) at Google")
                _ = try client.wait(try client.undelete(previous.resource), what: "undeleting \(previous.resource)")
            }
            _ = try vault.apply(.rollBack(name: name, now: Output.now()))
            Console.note("key '\(name)' is back to its previous value (\(previous.resource))")
            var deleted = false
            if !call.flag("--keep-old") {
                do {
                    try deleteAtGoogle(client, newer.resource)
                    deleted = true
                    Console.note("deleted the newer key \(newer.resource) at Google; Google may still accept it for up to about 25 minutes")
                } catch let error as GoogleError {
                    throw GoogleError(error.category, "the previous key is current again, but deleting the newer key \(newer.resource) failed: \(error.message)",
                                      hint: "delete it by hand: gcloud services api-keys delete \(newer.keyId) --project \(newer.project ?? "?")",
                                      status: error.status, reason: error.reason)
                }
            }
            try finish(call, Report(name: name, action: "undone", old_key: newer.resource, new_key: previous.resource,
                                    service_account: previous.serviceAccount.isEmpty ? nil : previous.serviceAccount, old_key_deleted: deleted, age_days: age))
        }
    }

    // MARK: key rm --revoke

    static func revoke(_ call: Invocation, name: String) throws {
        try withVault(call.context, name: name) { vault in
            let settings = try settings(call, vault: vault.settings)
            let (client, token) = try client(call, settings, project: vault.key.google?.project)
            var resources = [vault.key.google?.resource].compactMap { $0 }
            if resources.isEmpty {
                Console.note("looking the key of '\(name)' up at Google (keys:lookupKey)")
                resources.append(try client.lookup(vault.key.secret))
                // The same token, billed to the project the key turned out to be in.
                client.quotaProject = quotaProject(settings, token, project: GoogleKeyRecord(resource: resources[0], serviceAccount: "").project)
            }
            resources += vault.summary.earlier.compactMap { $0.google?.resource }
            for resource in resources {
                try deleteAtGoogle(client, resource)
                Console.note("deleted \(resource) at Google (Google may still accept it for up to about 25 minutes; it can be undeleted for 30 days)")
            }
            _ = try vault.apply(.removeKey(name: name))
            Console.note("removed key '\(name)'")
        }
    }

    // MARK: key which --google

    static func which(_ call: Invocation) throws {
        var layers = try call.context.settingLayers(call)
        // The vault's settings count (token_command, quota_project): through the session, or
        // opened when a passphrase can be had.
        if call.context.vault.exists, let vaultSettings = try call.context.vault.sessionSettings()
            ?? (call.context.canReadPassphrase ? try call.context.vault.settings() : nil) {
            layers.vaultSettings = vaultSettings
            layers.vaultPath = call.context.vaultPath
        }
        let settings = try Settings.resolve(layers)
        let source = try credentials(call, settings).source()
        var text = "google credential: \(source.label)\nkind:              \(source.kind)\napi keys endpoint: \(settings[.apikeysEndpoint])\n"
        if source.isUserCredential {
            text += "quota project:     \(settings[.quotaProject] ?? "the credential's quota_project_id, else the key's project")\n"
        }
        try Console.out(text)
    }
}
