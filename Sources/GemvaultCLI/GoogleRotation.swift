import GeminiClient
import GoogleAuth
import GoogleHTTP
import GoogleKeys
import Settings
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
        /// The current value's Google key: recorded by an earlier rotation or lookup.
        var google: GoogleKeyRecord? { key.google ?? summary.google }
        /// Names this vault in the annotations of the keys it makes, without saying where it is.
        let tag: String
        /// Held for the whole command: no other rotation of this key runs meanwhile.
        let journal: RotationJournal
        let apply: (VaultChange) throws -> VaultChange.Outcome
        /// The current value's Google key as the vault now has it, when that can be asked
        /// without a passphrase (through the session): after a write that failed in transit.
        let currentGoogle: () -> GoogleKeyRecord?

        /// The key and its summary read again: after a change this command made.
        let read: () throws -> (key: StoredKey, summary: KeySummary)

        func reloaded() throws -> VaultView {
            let (key, summary) = try read()
            return VaultView(settings: settings, key: key, summary: summary, tag: tag, journal: journal, apply: apply, currentGoogle: currentGoogle, read: read)
        }

        /// Whether the key's history names `resource` as an earlier value.
        func historyNames(_ resource: String) -> Bool {
            summary.earlier.contains { $0.google.map { GoogleRotation.sameKey($0.resource, resource) } ?? false }
        }
    }

    /// Opens the vault for one hands-off rotation of `name`, holding that key's rotation lock
    /// before the vault is read: a rotation that waited sees what the one before it stored.
    static func withVault<T>(_ context: Context, name: String, _ work: (VaultView) throws -> T) throws -> T {
        try VaultContents.validateName(name)
        try context.vault.checkBeforePrompt()
        let tag = Sodium.fingerprint(try context.vault.identity())
        // Taken through the vault, which reads the file again: the rotation that held the lock
        // may have written it while this one waited.
        let journal = try RotationJournal.take(context, vaultTag: tag, name: name)
        if try context.vault.sessionIsOpen(), let settings = try context.vault.sessionSettings() {
            let read = { () throws -> (key: StoredKey, summary: KeySummary) in
                guard let key = try context.vault.key(name, markUsed: false),
                      let summary = try context.vault.keySummaries().first(where: { $0.name == name }) else { throw VaultError.keyNotFound(name: name) }
                return (key, summary)
            }
            let (key, summary) = try read()
            return try work(VaultView(settings: settings, key: key, summary: summary, tag: tag, journal: journal, apply: { try context.vault.apply($0) },
                                      currentGoogle: { (try? context.vault.keySummaries())?.first { $0.name == name }?.google }, read: read))
        }
        // Kept open, so that what this command writes is what it reads next.
        let vault = try context.vault.openedVault()
        let read = { () throws -> (key: StoredKey, summary: KeySummary) in
            guard let key = vault.document.contents.key(named: name) else { throw VaultError.keyNotFound(name: name) }
            return (key, key.summary)
        }
        let (key, summary) = try read()
        return try work(VaultView(settings: vault.document.contents.settings, key: key, summary: summary, tag: tag, journal: journal,
                                  apply: { try vault.apply($0) }, currentGoogle: { nil }, read: read))
    }

    /// Two names of one Google key: the project may be named by id or number, the key id is unique in it.
    static func sameKey(_ one: String, _ other: String) -> Bool {
        GoogleKeyRecord(resource: one, serviceAccount: "").keyId == GoogleKeyRecord(resource: other, serviceAccount: "").keyId
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
                                             allowInsecure: call.flag(.allowInsecureEndpoint), warn: { Console.warning($0) }))
    }

    /// The API Keys client, made when first needed (a young key's `--if-older-than` asks Google
    /// nothing), with a fresh token. Calls are billed (a user's credential) to the
    /// `quota_project` setting, else the credential file's, else the key's own project.
    final class GoogleLink {
        let call: Invocation
        let settings: Settings
        /// The way to Google for the API Keys service and the new key's check (a fake in unit tests).
        let transport: any HTTPTransport
        private var made: (client: APIKeysClient, token: AccessToken)?
        private var fetched: AccessToken?

        init(_ call: Invocation, _ settings: Settings, transport: any HTTPTransport) {
            self.call = call
            self.settings = settings
            self.transport = transport
        }

        /// One token for every Google service the command calls.
        private func token() throws -> AccessToken {
            if let fetched { return fetched }
            // Only libcurl needs loading; a test's transport must leave it unmapped.
            if transport is CurlTransport { GeminiClient.prepareNetwork() }
            let token = try credentials(call, settings).token()
            Console.note("using \(token.source.label) for Google")
            fetched = token
            return token
        }

        /// The client, billed to `project` when nothing else names a quota project.
        func client(project: String?) throws -> APIKeysClient {
            if let made {
                if let project { made.client.quotaProject = GoogleRotation.quotaProject(settings, made.token, project: project) }
                return made.client
            }
            let token = try token()
            let client = APIKeysClient(endpoint: try settings.endpoint(.apikeysEndpoint), token: token, quotaProject: quotaProject(settings, token, project: project),
                                       timeout: settings[.timeout], retries: settings[.retries], transport: transport)
            made = (client, token)
            return client
        }

        /// Secret Manager, for a linked key's rotation.
        func secretManager() throws -> SecretManagerClient {
            SecretManagerClient(endpoint: try settings.endpoint(.secretmanagerEndpoint), token: try token(), timeout: settings[.timeout],
                                retries: settings[.retries], transport: transport)
        }
    }

    /// The project a user credential's calls are billed to: the setting, the credential's own,
    /// else the project of the key at hand.
    static func quotaProject(_ settings: Settings, _ token: AccessToken, project: String?) -> String? {
        settings[.quotaProject] ?? token.quotaProject ?? project
    }

    /// What `--json` prints: the Google keys' names, never a key. A linked key's rotation adds
    /// its secret and versions (absent otherwise).
    struct Report: Encodable {
        let name: String
        var action: String
        @Nullable var old_key: String?
        @Nullable var new_key: String?
        @Nullable var service_account: String?
        var old_key_deleted: Bool
        let age_days: Int64
        var secret: String?
        var secret_version: UInt64?
        var previous_version: UInt64?
        var finish_after: String?
    }

    static func finish(_ call: Invocation, _ report: Report) throws {
        if call.flag(.json) { try Output.json(report, schema: .keyRotate) }
    }

    /// `gcloud` commands for a key gemvault could not deal with itself.
    static func byHand(_ resource: String, _ verb: String = "delete", project fallback: String? = nil) -> String {
        let record = GoogleKeyRecord(resource: resource, serviceAccount: "")
        return "gcloud services api-keys \(verb) \(record.keyId) --project \(record.project ?? fallback ?? "PROJECT")"
    }

    // MARK: A run a kill interrupted

    /// What the last holder of the key's rotation lock left unfinished: the old key of a run
    /// killed after its vault write is deleted, the new key of one killed before it too.
    static func finishInterrupted(_ vault: VaultView, _ link: GoogleLink, name: String) throws {
        guard let intent = vault.journal.interrupted else { return }
        let written = vault.google.map { sameKey($0.resource, intent.current) } ?? false
        if written, let retire = intent.retire {
            // Only a key the history names as replaced: never the current one.
            guard !sameKey(retire, intent.current), vault.historyNames(retire) else {
                Console.warning("an interrupted \(intent.action) of '\(name)' meant to delete \(retire) at Google, which the key's history does not name; it is left alone")
                vault.journal.end()
                return
            }
            let client = try link.client(project: GoogleKeyRecord(resource: retire, serviceAccount: "").project)
            switch try deleteAtGoogle(client, retire) {
            case .deleted:
                Console.note("the last \(intent.action) of '\(name)' was interrupted after the vault was written: finished it by deleting \(retire) at Google, which the key's history names as replaced")
            case .alreadyDeleted, .gone:
                Console.note("the last \(intent.action) of '\(name)' was interrupted after the vault was written; \(retire), which it replaced, is already deleted at Google")
            }
        } else if !written, let made = intent.made {
            let client = try link.client(project: GoogleKeyRecord(resource: made, serviceAccount: "").project)
            switch try deleteAtGoogle(client, made, absentIsGone: true) {
            case .deleted:
                Console.note("the last rotation of '\(name)' was interrupted before it stored its new key: deleted that key, \(made), at Google")
            case .alreadyDeleted, .gone:
                Console.note("the last rotation of '\(name)' was interrupted before it stored its new key; \(made) was not made, or is already deleted, at Google")
            }
        }
        vault.journal.end()
    }

    // MARK: key rotate --create

    static func create(_ call: Invocation, name: String, transport: any HTTPTransport = CurlTransport()) throws {
        let verifyLimit = try seconds(call, .verifyTimeout, default: defaultVerifyLimit)
        let olderThan = try call.value(.ifOlderThan).map { text -> Int64 in
            guard let days = Int64(text), days >= 0 else { throw UsageError("--if-older-than takes a whole number of days, not '\(text)'", command: call.command) }
            return days
        }
        try withVault(call.context, name: name) { vault in
            let settings = try settings(call, vault: vault.settings)
            let link = GoogleLink(call, settings, transport: transport)
            if vault.key.link != nil {
                let due: FleetRotation.Due = call.flag(.ifDue) ? .byPeriod : olderThan.map { .olderThan(days: $0) } ?? .always
                return try FleetRotation.create(call, name: name, vault: vault, link: link, verifyLimit: verifyLimit, due: due)
            }
            if call.flag(.grace) || call.flag(.noWait) {
                throw UsageError("\(call.flag(.grace) ? "--grace" : "--no-wait") goes with a key linked to Secret Manager ('\(name)' is not)", command: call.command)
            }
            // Without a secret, --if-due is --if-older-than rotation_days.
            let olderThan = call.flag(.ifDue) ? Int64(settings[.rotationDays]) : olderThan
            if call.flag(.ifDue) && olderThan == 0 {
                Console.note("rotation_days is 0 (never): nothing to do")
                return
            }
            try finishInterrupted(vault, link, name: name)
            // (1) The current key's resource, recorded by an earlier rotation, and (2) read; else
            // looked up below. Its age is Google's createTime when Google knows the key (CIS 1.15).
            var current: GoogleKey?
            var foundByLookup = false
            if let record = vault.google {
                current = try liveKey(try link.client(project: call.value(.project) ?? record.project), record.resource, name: name)
            } else {
                current = try lookUp(call, name: name, vault: vault, link: link)
                foundByLookup = current != nil
            }
            let age = max(0, Output.now() - (current?.created ?? vault.key.updated)) / 86400
            if let olderThan, age < olderThan {
                let from = current?.created != nil ? "created at Google on \(current!.createTime ?? "?")" : "set in the vault on \(Output.isoDate(vault.key.updated))"
                Console.note("key '\(name)' is \(age) day\(age == 1 ? "" : "s") old (\(from)), younger than \(olderThan): nothing to do")
                try finish(call, Report(name: name, action: "skipped", old_key: current?.name ?? vault.google?.resource, new_key: nil,
                                        service_account: current?.serviceAccountEmail ?? vault.google?.serviceAccount.nonEmpty, old_key_deleted: false, age_days: age))
                return
            }
            try rotate(call, name: name, vault: vault, link: link, current: current, foundByLookup: foundByLookup, age: age, verifyLimit: verifyLimit)
        }
    }

    /// How long `--create` waits for Google to accept the new key, when --verify-timeout is not given.
    static let defaultVerifyLimit = 300.0

    static func seconds(_ call: Invocation, _ option: OptionSpec, default value: Double) throws -> Double {
        guard let text = call.value(option) else { return value }
        guard let seconds = DurationText.seconds(text), seconds >= 1, seconds <= 3600 else {
            throw UsageError("\(option.name) takes a duration from 1s to 1h (like 300, 90s or 5m), not '\(text)'", command: call.command)
        }
        return seconds
    }

    /// The key at Google, which must not be deleted.
    static func liveKey(_ client: APIKeysClient, _ resource: String, name: String) throws -> GoogleKey {
        let key = try client.get(resource)
        guard !key.isDeleted else {
            throw GoogleError(.refused, "the current key of '\(name)' (\(resource)) was deleted at Google on \(key.deleteTime ?? "?")",
                              hint: "'gemvault key rotate --undo \(name)' brings back the previous one, or store a working key with 'gemvault key rotate \(name)'")
        }
        return key
    }

    /// A current key whose Google name the vault does not hold, found by its string
    /// (keys:lookupKey); nil when Google cannot find it and the new key's home was given.
    static func lookUp(_ call: Invocation, name: String, vault: VaultView, link: GoogleLink) throws -> GoogleKey? {
        let client = try link.client(project: call.value(.project))
        Console.note("looking the current key of '\(name)' up at Google (keys:lookupKey)")
        let found: GoogleKey
        do {
            found = try client.get(try client.lookup(vault.key.secret))
        } catch {
            let flagsGiven = call.value(.serviceAccount) != nil && call.value(.project) != nil
            // A 403 is also what a credential without the role gets: told as such unless the
            // new key's home was given.
            guard error.status == 404 || (error.status == 403 && flagsGiven) else { throw error }
            guard flagsGiven else {
                throw GoogleError(.refused, "Google could not find the current key of '\(name)' (\(error.message))",
                                  hint: "for a key that lookup cannot find, give the new key's home: --project PROJECT --service-account EMAIL",
                                  status: error.status, reason: error.reason)
            }
            Console.note("Google could not find the current key; making a new one in project \(call.value(.project)!) as asked")
            return nil
        }
        return try liveKey(client, found.name, name: name)
    }

    /// What a new key is made from: the current key's project, binding and restrictions.
    struct NewKeyPlan {
        let client: APIKeysClient
        let project: String
        let serviceAccount: String
        let restrictions: JSONValue
        let check: KeyCheck
        /// The current key at Google, when found.
        let resource: String?
        let keyId: String
        var planned: String { "projects/\(project)/locations/global/keys/\(keyId)" }
    }

    /// Steps 2 and 3's checks: the new key's project, service account and restrictions, refused
    /// before anything is made when they cannot give a restricted auth key for Gemini.
    static func plan(_ call: Invocation, name: String, vault: VaultView, link: GoogleLink, current: GoogleKey?) throws -> NewKeyPlan {
        var client = try link.client(project: call.value(.project) ?? vault.google?.project)
        let resource = current?.name
        guard let project = call.value(.project) ?? current?.project else { throw UsageError("--project is needed", command: call.command) }
        client = try link.client(project: project)
        guard let serviceAccount = call.value(.serviceAccount) ?? current?.serviceAccountEmail, !serviceAccount.isEmpty else {
            throw GoogleError(.refused, "the current key of '\(name)' is not bound to a service account, and Gemini takes only auth keys",
                              hint: "name the service account the new key is bound to: --service-account EMAIL")
        }
        let restrictions: JSONValue = current.flatMap { $0.isUnrestricted ? nil : $0.restrictions }
            ?? (current == nil ? .object(["apiTargets": .array([.object(["service": .string(KeyCheck.geminiService)])])]) : .null)
        guard restrictions != .null else {
            throw GoogleError(.refused, "the current key of '\(name)' (\(resource ?? "?")) has no restrictions; gemvault makes no unrestricted key",
                              hint: "restrict it to the Generative Language API in the Cloud console first, then rotate again")
        }
        let check = try KeyCheck(restrictions: restrictions, name: name)

        // Made for this vault's key and never stored: a run that no journal covers.
        var known = Set([resource].compactMap { $0 } + vault.summary.earlier.compactMap { $0.google?.resource })
        if let record = vault.google { known.insert(record.resource) }
        reportLeftovers(client, project: project, name: name, tag: vault.tag, known: known, earlier: vault.summary.earlier)
        let stamp = String(Output.isoDate(Output.now()).filter(\.isNumber))
        return NewKeyPlan(client: client, project: project, serviceAccount: serviceAccount, restrictions: restrictions, check: check,
                          resource: resource, keyId: keyId(name: name, stamp: stamp))
    }

    /// Step 3: creates the new key with the plan's binding and restrictions and waits for it.
    /// `intent` is journalled first, for the next run if this one is killed.
    static func make(_ plan: NewKeyPlan, name: String, vault: VaultView, intent: RotationJournal.Intent) throws -> GoogleOperation {
        try vault.journal.begin(intent)
        Console.note("creating \(plan.keyId) in project \(plan.project), bound to \(plan.serviceAccount)")
        let annotations = ["gemvault-vault": vault.tag, "gemvault-key": String(name.prefix(63))]
        let stamp = plan.keyId.split(separator: "-").last.map(String.init) ?? ""
        let creation = Result { () throws(GoogleError) -> GoogleOperation in
            let started = try plan.client.create(project: plan.project, keyId: plan.keyId, displayName: String("gemvault \(name) \(stamp)".prefix(63)),
                                                 restrictions: plan.restrictions, serviceAccount: plan.serviceAccount, annotations: annotations)
            return try plan.client.wait(started, what: "creating \(plan.keyId)")
        }
        if case .failure(let error) = creation, error.isStillPending || error.mayHaveBeenPerformed {
            throw GoogleError(error.category, error.message + "; the key \(plan.keyId) may still be made",
                              hint: "the next 'gemvault key rotate --create \(name)' deletes it if it was; or see for yourself: "
                                  + "\(byHand(plan.planned, "describe")), then \(byHand(plan.planned))", status: error.status, reason: error.reason)
        }
        return try creation.get()
    }

    /// The new key's string (from the finished operation, else asked for), once Google shows
    /// the key restricted and bound as planned.
    static func received(_ plan: NewKeyPlan, _ created: GoogleOperation, _ newName: String) throws -> SecretBytes {
        let answered = try created.keyString ?? plan.client.keyString(newName)
        Redaction.register(answered)
        // Google's answer is a source like any other: a second line would become extra headers.
        guard let secret = answered.singleLineCredential() else {
            throw GoogleError(.refused, "Google answered with a key string for \(newName) that is more than one line, or holds a space or a control character; gemvault does not keep it")
        }
        let made = try plan.client.get(newName)
        guard !made.isUnrestricted else {
            throw GoogleError(.refused, "Google made \(newName) without restrictions; gemvault does not keep an unrestricted key")
        }
        guard made.serviceAccountEmail == plan.serviceAccount else {
            throw GoogleError(.refused, "Google made \(newName) bound to \(made.serviceAccountEmail ?? "no service account"), not to \(plan.serviceAccount)")
        }
        return secret
    }

    private static func rotate(_ call: Invocation, name: String, vault: VaultView, link: GoogleLink, current: GoogleKey?, foundByLookup: Bool,
                               age: Int64, verifyLimit: Double) throws {
        let plan = try plan(call, name: name, vault: vault, link: link, current: current)
        let (client, resource, serviceAccount) = (plan.client, plan.resource, plan.serviceAccount)
        // (3) Create the new key with the same binding and restrictions, and wait for it.
        let created = try make(plan, name: name, vault: vault,
                               intent: .init(action: "rotation", made: plan.planned, current: plan.planned, retire: call.flag(.keepOld) ? nil : resource))
        let newName = created.key?.name ?? plan.planned

        // Any failure from here until the vault holds the new key deletes it again.
        let secret: SecretBytes
        do {
            secret = try received(plan, created, newName)
            // (4) The new key against the endpoint it will be used with.
            try plan.check.verify(secret, settings: link.settings, limit: verifyLimit, transport: link.transport)
            // (5) Stored as the current value; the old one goes into the history with its name.
            let replaced = foundByLookup ? GoogleKeyRecord(resource: resource!, serviceAccount: current?.serviceAccountEmail ?? "") : nil
            _ = try vault.apply(.rotateKey(name: name, secret: secret, now: Output.now(),
                                           google: GoogleKeyRecord(resource: newName, serviceAccount: serviceAccount), replacedGoogle: replaced))
        } catch {
            // A session that saved the change but whose answer was lost has the new key current:
            // that one must stay.
            if vault.currentGoogle()?.resource != newName {
                undoCreate(client, newName)
                vault.journal.end()
            }
            throw error
        }
        Console.note("key '\(name)' is now \(secret.masked) (\(newName)), which Gemini accepted; the previous value is in its history")
        ShareCommand.reshareAfterRotation(call.context.vault, name: name)

        // (6) Delete the old key at Google, with its etag.
        var deleted = false
        if let resource, !call.flag(.keepOld) {
            do {
                if try deleteAtGoogle(client, resource) == .deleted {
                    Console.note("deleted the old key \(resource) at Google; Google may still accept it for up to about 25 minutes, and can undelete it for 30 days ('gemvault key rotate --undo \(name)')")
                } else {
                    Console.note("the old key \(resource) was already deleted at Google")
                }
                deleted = true
            } catch let error as GoogleError {
                try? finish(call, Report(name: name, action: "created", old_key: resource, new_key: newName, service_account: serviceAccount,
                                         old_key_deleted: false, age_days: age))
                // The old key's own project: a first rotation's --project names where the new one goes.
                throw GoogleError(error.category, "the new key is stored and current, but deleting the old key \(resource) failed: \(error.message)",
                                  hint: "the next 'gemvault key rotate --create \(name)' deletes it, or delete it by hand: \(byHand(resource, project: plan.project))",
                                  status: error.status, reason: error.reason)
            }
        } else if let resource {
            Console.note("the old key \(resource) is kept at Google (--keep-old) and still works")
        } else {
            Console.note("the old key was not found at Google, so it was not deleted: delete it where it was made")
        }
        vault.journal.end()
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

    enum Deletion: Equatable {
        case deleted
        /// Soft-deleted before: Google keeps it for 30 days.
        case alreadyDeleted
        /// Gone for good (deleted more than 30 days ago: Google answers 404), or never made.
        case gone
    }

    /// Deletes a key with the etag just read. `absentIsGone` takes a 403 for "not there" too,
    /// as Google answers for a key id that was never made.
    static func deleteAtGoogle(_ client: APIKeysClient, _ resource: String, absentIsGone: Bool = false) throws -> Deletion {
        let answer: Result<GoogleKey, GoogleError> = Result { () throws(GoogleError) in try client.get(resource) }
        if case .failure(let error) = answer, error.status == 404 || (absentIsGone && error.status == 403) { return .gone }
        let key = try answer.get()
        if key.isDeleted { return .alreadyDeleted }
        _ = try client.wait(try client.delete(resource, etag: key.etag), what: "deleting \(resource)")
        return .deleted
    }

    /// After a failure: the key just made is deleted again, or named for deleting by hand.
    static func undoCreate(_ client: APIKeysClient, _ resource: String) {
        do {
            _ = try client.wait(try client.delete(resource, etag: nil), what: "deleting \(resource)")
            Console.note("deleted the new key \(resource) at Google again; the vault is as it was")
        } catch {
            Console.warning("the new key \(resource) could not be deleted at Google (\(error.message)); delete it by hand: \(byHand(resource))")
        }
    }

    /// Keys made for this vault's `name` that it never stored and no journal covers (a synced
    /// vault's other machine, a lost state folder) are deleted once no rotation can still be
    /// running them; younger ones are named. Earlier values still live at Google are named.
    static func reportLeftovers(_ client: APIKeysClient, project: String, name: String, tag: String, known: Set<String>, earlier: [KeySummary.Earlier]) {
        guard let keys = try? client.list(project: project, showDeleted: false) else {
            Console.warning("could not list the keys of project \(project) to look for keys an interrupted rotation left")
            return
        }
        for key in keys where key.annotations?["gemvault-vault"] == tag && key.annotations?["gemvault-key"] == String(name.prefix(63))
                                && !known.contains(where: { sameKey($0, key.name) }) {
            let age = key.created.map { Output.now() - $0 } ?? 0
            guard age >= RotationJournal.longestRun else {
                Console.warning("found \(key.name), made for '\(name)' of this vault \(age / 60) minutes ago and not stored: a rotation on another machine may still be running, so it is left alone (if none is: \(byHand(key.name)))")
                continue
            }
            Console.warning("found \(key.name), made by an interrupted rotation of '\(name)' and never stored; deleting it")
            do { _ = try deleteAtGoogle(client, key.name) } catch {
                Console.warning("could not delete \(key.name): \((error as? GoogleError)?.message ?? "\(error)"); delete it by hand: \(byHand(key.name))")
            }
        }
        let live = Set(keys.map(\.name))
        for value in earlier {
            if let resource = value.google?.resource, live.contains(resource) {
                Console.warning("an earlier value of '\(name)' (\(value.masked), \(resource)) still works at Google (kept with --keep-old): \(byHand(resource)) deletes it")
            }
        }
    }
}
