import GoogleAuth
import GoogleHTTP
import GoogleKeys
import KeyResolution
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// Hands-off rotation (`key rotate --create`, `--undo`, `key rm --revoke`): the steps at
/// Google come from GoogleAuth, the vault through VaultAccess; GoogleRotation orders them, so that
/// an interruption at any point leaves a vault that opens with the old or the new key current
/// (Docs/rotation.md).
public enum GoogleRotation {
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
        let progress: any RotationProgress
        let apply: (VaultChange) throws -> VaultChange.Outcome
        /// The current value's Google key as the vault now has it, when that can be asked
        /// without a passphrase (through the session): after a write that failed in transit.
        let currentGoogle: () -> GoogleKeyRecord?

        /// The key and its summary read again: after a change this command made.
        let read: () throws -> (key: StoredKey, summary: KeySummary)

        func reloaded() throws -> VaultView {
            let (key, summary) = try read()
            return VaultView(settings: settings, key: key, summary: summary, tag: tag, journal: journal, progress: progress, apply: apply, currentGoogle: currentGoogle, read: read)
        }

        /// Whether the key's history names `resource` as an earlier value.
        func historyNames(_ resource: String) -> Bool {
            summary.earlier.contains { $0.google.map { GoogleRotation.sameKey($0.resource, resource) } ?? false }
        }
    }

    /// Opens the vault for one hands-off rotation of `name`, holding that key's rotation lock
    /// before the vault is read: a rotation that waited sees what the one before it stored.
    static func withVault<T>(_ call: RotationRequest, name: String, _ work: (VaultView) throws -> T) throws -> T {
        let access = call.vault
        try VaultContents.validateName(name)
        try access.checkBeforePrompt()
        let tag = Sodium.fingerprint(try access.identity())
        // Taken through the vault, which reads the file again: the rotation that held the lock
        // may have written it while this one waited.
        let journal = try RotationJournal.take(access, stateHome: call.stateHome, vaultTag: tag, name: name, progress: call.progress)
        if try access.sessionIsOpen(), let settings = try access.sessionSettings() {
            let read = { () throws -> (key: StoredKey, summary: KeySummary) in
                guard let key = try access.key(name, markUsed: false),
                      let summary = try access.keySummaries().first(where: { $0.name == name }) else { throw VaultError.keyNotFound(name: name) }
                return (key, summary)
            }
            let (key, summary) = try read()
            return try work(VaultView(settings: settings, key: key, summary: summary, tag: tag, journal: journal, progress: call.progress,
                                      apply: { try access.apply($0) },
                                      currentGoogle: { (try? access.keySummaries())?.first { $0.name == name }?.google }, read: read))
        }
        // Kept open, so that what this command writes is what it reads next.
        let vault = try access.openedVault()
        let read = { () throws -> (key: StoredKey, summary: KeySummary) in
            guard let key = vault.document.contents.key(named: name) else { throw VaultError.keyNotFound(name: name) }
            return (key, key.summary)
        }
        let (key, summary) = try read()
        return try work(VaultView(settings: vault.document.contents.settings, key: key, summary: summary, tag: tag, journal: journal, progress: call.progress,
                                  apply: { try vault.apply($0) }, currentGoogle: { nil }, read: read))
    }

    /// Two names of one Google key: the project may be named by id or number, the key id is unique in it.
    static func sameKey(_ one: String, _ other: String) -> Bool {
        GoogleKeyRecord(resource: one, serviceAccount: "").keyId == GoogleKeyRecord(resource: other, serviceAccount: "").keyId
    }

    static func settings(_ call: RotationRequest, vault: [String: String]) throws -> Settings {
        try call.resolve(vault)
    }

    /// The Google credential the command would use, its warnings through the command's progress.
    public static func credentials(_ call: RotationRequest, _ settings: Settings) throws -> GoogleCredentials {
        let progress = call.progress
        return GoogleCredentials(try CredentialSettings(settings, environment: call.environment, home: call.home,
                                                        allowInsecure: call.flag(.allowInsecureEndpoint), warn: { progress.warning($0) }))
    }

    /// The API Keys client, made when first needed (a young key's `--if-older-than` asks Google
    /// nothing), with a fresh token. Calls are billed (a user's credential) to the
    /// `quota_project` setting, else the credential file's, else the key's own project.
    final class GoogleLink {
        let call: RotationRequest
        let settings: Settings
        /// The way to Google for the API Keys service and the new key's check (a fake in unit tests).
        let transport: any HTTPTransport
        private var made: (client: APIKeysClient, token: AccessToken)?
        private var fetched: AccessToken?
        var progress: any RotationProgress { call.progress }

        init(_ call: RotationRequest, _ settings: Settings, transport: any HTTPTransport) {
            self.call = call
            self.settings = settings
            self.transport = transport
        }

        /// One token for every Google service the command calls.
        private func token() throws -> AccessToken {
            if let fetched { return fetched }
            // Only libcurl needs loading; a test's transport must leave it unmapped.
            if transport is CurlTransport { CurlTransport.preload() }
            let token = try credentials(call, settings).token()
            progress.note("using \(token.source.label) for Google")
            fetched = token
            return token
        }

        /// The client, billed to `project` when nothing else names a quota project.
        func client(project: String?) throws -> APIKeysClient {
            if let made {
                if let project { made.client.quotaProject = GoogleRotation.quotaProject(settings, made.token, project: project) }
                return made.client
            }
            let endpoint = try settings.credentialEndpoint(.apikeysEndpoint) { progress.warning($0) }
            let token = try token()
            let client = APIKeysClient(endpoint: endpoint, token: token, quotaProject: quotaProject(settings, token, project: project),
                                       timeout: settings[.timeout], retries: settings[.retries], transport: transport)
            made = (client, token)
            return client
        }

        /// Secret Manager, for a linked key's rotation.
        func secretManager() throws -> SecretManagerClient {
            let endpoint = try settings.credentialEndpoint(.secretmanagerEndpoint) { progress.warning($0) }
            return SecretManagerClient(endpoint: endpoint, token: try token(), timeout: settings[.timeout], retries: settings[.retries], transport: transport)
        }
    }

    /// The project a user credential's calls are billed to: the setting, the credential's own,
    /// else the project of the key at hand.
    static func quotaProject(_ settings: Settings, _ token: AccessToken, project: String?) -> String? {
        settings[.quotaProject] ?? token.quotaProject ?? project
    }

    typealias Report = RotationReport

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
        let progress = vault.progress
        let written = vault.google.map { sameKey($0.resource, intent.current) } ?? false
        if written, let retire = intent.retire {
            // Only a key the history names as replaced: never the current one.
            guard !sameKey(retire, intent.current), vault.historyNames(retire) else {
                progress.warning("an interrupted \(intent.action) of '\(name)' meant to delete \(retire) at Google, which the key's history does not name; it is left alone")
                vault.journal.end()
                return
            }
            let client = try link.client(project: GoogleKeyRecord(resource: retire, serviceAccount: "").project)
            switch try deleteAtGoogle(client, retire) {
            case .deleted:
                progress.note("the last \(intent.action) of '\(name)' was interrupted after the vault was written: finished it by deleting \(retire) at Google, which the key's history names as replaced")
            case .alreadyDeleted, .gone:
                progress.note("the last \(intent.action) of '\(name)' was interrupted after the vault was written; \(retire), which it replaced, is already deleted at Google")
            }
        } else if !written, let made = intent.made {
            let client = try link.client(project: GoogleKeyRecord(resource: made, serviceAccount: "").project)
            switch try deleteAtGoogle(client, made, absentIsGone: true) {
            case .deleted:
                progress.note("the last rotation of '\(name)' was interrupted before it stored its new key: deleted that key, \(made), at Google")
            case .alreadyDeleted, .gone:
                progress.note("the last rotation of '\(name)' was interrupted before it stored its new key; \(made) was not made, or is already deleted, at Google")
            }
        }
        vault.journal.end()
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
    static func undoCreate(_ client: APIKeysClient, _ resource: String, progress: any RotationProgress) {
        do {
            _ = try client.wait(try client.delete(resource, etag: nil), what: "deleting \(resource)")
            progress.note("deleted the new key \(resource) at Google again; the vault is as it was")
        } catch {
            progress.warning("the new key \(resource) could not be deleted at Google (\(error.message)); delete it by hand: \(byHand(resource))")
        }
    }

    /// Keys made for this vault's `name` that it never stored and no journal covers (a synced
    /// vault's other machine, a lost state folder) are deleted once no rotation can still be
    /// running them; younger ones are named. Earlier values still live at Google are named.
    static func reportLeftovers(_ client: APIKeysClient, project: String, name: String, tag: String, known: Set<String>, earlier: [KeySummary.Earlier],
                                progress: any RotationProgress) {
        guard let keys = try? client.list(project: project, showDeleted: false) else {
            progress.warning("could not list the keys of project \(project) to look for keys an interrupted rotation left")
            return
        }
        for key in keys where key.annotations?["gemvault-vault"] == tag && key.annotations?["gemvault-key"] == String(name.prefix(63))
                                && !known.contains(where: { sameKey($0, key.name) }) {
            let age = key.created.map { Clock.now() - $0 } ?? 0
            guard age >= RotationJournal.longestRun else {
                progress.warning("found \(key.name), made for '\(name)' of this vault \(age / 60) minutes ago and not stored: a rotation on another machine may still be running, so it is left alone (if none is: \(byHand(key.name)))")
                continue
            }
            progress.warning("found \(key.name), made by an interrupted rotation of '\(name)' and never stored; deleting it")
            do { _ = try deleteAtGoogle(client, key.name) } catch {
                progress.warning("could not delete \(key.name): \((error as? GoogleError)?.message ?? "\(error)"); delete it by hand: \(byHand(key.name))")
            }
        }
        let live = Set(keys.map(\.name))
        for value in earlier {
            if let resource = value.google?.resource, live.contains(resource) {
                progress.warning("an earlier value of '\(name)' (\(value.masked), \(resource)) still works at Google (kept with --keep-old): \(byHand(resource)) deletes it")
            }
        }
    }
}
