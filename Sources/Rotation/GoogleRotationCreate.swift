import GoogleAuth
import GoogleHTTP
import GoogleKeys
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// `key rotate --create` of a vault key: the steps in their order (Docs/rotation.md, "What
/// `key rotate --create [NAME]` does"); a linked key goes on to FleetRotation.
extension GoogleRotation {
    // MARK: key rotate --create

    public static func create(_ call: RotationRequest, name: String) throws {
        let verifyLimit = try seconds(call, .verifyTimeout, default: defaultVerifyLimit)
        let olderThan = try call.value(.ifOlderThan).map { text -> Int64 in
            guard let days = Int64(text), days >= 0 else { throw RotationError.usage("--if-older-than takes a whole number of days, not '\(text)'") }
            return days
        }
        try withVault(call, name: name) { vault in
            let settings = try settings(call, vault: vault.settings)
            let link = GoogleLink(call, settings, transport: call.transport)
            if vault.key.link != nil {
                let due: FleetRotation.Due = call.flag(.ifDue) ? .byPeriod : olderThan.map { .olderThan(days: $0) } ?? .always
                return try FleetRotation.create(call, name: name, vault: vault, link: link, verifyLimit: verifyLimit, due: due)
            }
            if let option = [RotationRequest.Option.grace, .noWait, .forceClaim].first(where: call.flag) {
                throw RotationError.usage("\(option.name) goes with a key linked to Secret Manager ('\(name)' is not)")
            }
            // Without a secret, --if-due is --if-older-than rotation_days.
            let olderThan = call.flag(.ifDue) ? Int64(settings[.rotationDays]) : olderThan
            if call.flag(.ifDue) && olderThan == 0 {
                call.progress.note("rotation_days is 0 (never): nothing to do")
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
            let age = max(0, Clock.now() - (current?.created ?? vault.key.updated)) / 86400
            if let olderThan, age < olderThan {
                let from = current?.created != nil ? "created at Google on \(current!.createTime ?? "?")" : "set in the vault on \(Clock.localDate(vault.key.updated))"
                call.progress.note("key '\(name)' is \(age) day\(age == 1 ? "" : "s") old (\(from)), younger than \(olderThan): nothing to do")
                try call.progress.finished(Report(name: name, action: "skipped", old_key: current?.name ?? vault.google?.resource, new_key: nil,
                                        service_account: current?.serviceAccountEmail ?? vault.google?.serviceAccount.nonEmpty, old_key_deleted: false, age_days: age))
                return
            }
            try rotate(call, name: name, vault: vault, link: link, current: current, foundByLookup: foundByLookup, age: age, verifyLimit: verifyLimit)
        }
    }

    /// How long `--create` waits for Google to accept the new key, when --verify-timeout is not given.
    public static let defaultVerifyLimit = 300.0

    static func seconds(_ call: RotationRequest, _ option: RotationRequest.Option, default value: Double) throws -> Double {
        guard let text = call.value(option) else { return value }
        guard let seconds = DurationText.seconds(text), seconds >= 1, seconds <= 3600 else {
            throw RotationError.usage("\(option.name) takes a duration from 1s to 1h (like 300, 90s or 5m), not '\(text)'")
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
    static func lookUp(_ call: RotationRequest, name: String, vault: VaultView, link: GoogleLink) throws -> GoogleKey? {
        let client = try link.client(project: call.value(.project))
        call.progress.note("looking the current key of '\(name)' up at Google (keys:lookupKey)")
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
            call.progress.note("Google could not find the current key; making a new one in project \(call.value(.project)!) as asked")
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
    static func plan(_ call: RotationRequest, name: String, vault: VaultView, link: GoogleLink, current: GoogleKey?) throws -> NewKeyPlan {
        var client = try link.client(project: call.value(.project) ?? vault.google?.project)
        let resource = current?.name
        guard let project = call.value(.project) ?? current?.project else { throw RotationError.usage("--project is needed") }
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
        reportLeftovers(client, project: project, name: name, tag: vault.tag, known: known, earlier: vault.summary.earlier, progress: call.progress)
        let stamp = String(Clock.isoDate(Clock.now()).filter(\.isNumber))
        return NewKeyPlan(client: client, project: project, serviceAccount: serviceAccount, restrictions: restrictions, check: check,
                          resource: resource, keyId: keyId(name: name, stamp: stamp))
    }

    /// Step 3: creates the new key with the plan's binding and restrictions and waits for it.
    /// `intent` is journalled first, for the next run if this one is killed.
    static func make(_ plan: NewKeyPlan, name: String, vault: VaultView, intent: RotationJournal.Intent) throws -> GoogleOperation {
        try vault.journal.begin(intent)
        vault.progress.note("creating \(plan.keyId) in project \(plan.project), bound to \(plan.serviceAccount)")
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

    private static func rotate(_ call: RotationRequest, name: String, vault: VaultView, link: GoogleLink, current: GoogleKey?, foundByLookup: Bool,
                               age: Int64, verifyLimit: Double) throws {
        let plan = try plan(call, name: name, vault: vault, link: link, current: current)
        let (client, resource, serviceAccount) = (plan.client, plan.resource, plan.serviceAccount)
        // (3) Create the new key with the same binding and restrictions, and wait for it.
        let created = try make(plan, name: name, vault: vault,
                               intent: .init(action: .rotation, made: plan.planned, current: plan.planned, retire: call.flag(.keepOld) ? nil : resource))
        let newName = created.key?.name ?? plan.planned

        // Any failure from here until the vault holds the new key deletes it again.
        let secret: SecretBytes
        do {
            secret = try received(plan, created, newName)
            // (4) The new key against the endpoint it will be used with.
            try plan.check.verify(secret, link: link, limit: verifyLimit)
            // (5) Stored as the current value; the old one goes into the history with its name.
            let replaced = foundByLookup ? GoogleKeyRecord(resource: resource!, serviceAccount: current?.serviceAccountEmail ?? "") : nil
            _ = try vault.apply(.rotateKey(name: name, secret: secret, now: Clock.now(),
                                           google: GoogleKeyRecord(resource: newName, serviceAccount: serviceAccount), replacedGoogle: replaced))
        } catch {
            // A session that saved the change but whose answer was lost has the new key current:
            // that one must stay.
            if vault.currentGoogle()?.resource != newName {
                undoCreate(client, newName, progress: call.progress)
                vault.journal.end()
            }
            throw error
        }
        call.progress.note("key '\(name)' is now \(secret.masked) (\(newName)), which Gemini accepted; the previous value is in its history")
        call.progress.keyChanged(name)

        // (6) Delete the old key at Google, with its etag.
        var deleted = false
        if let resource, !call.flag(.keepOld) {
            do {
                if try deleteAtGoogle(client, resource) == .deleted {
                    call.progress.note("deleted the old key \(resource) at Google; Google may still accept it for up to about 25 minutes, and can undelete it for 30 days ('gemvault key rotate --undo \(name)')")
                } else {
                    call.progress.note("the old key \(resource) was already deleted at Google")
                }
                deleted = true
            } catch let error as GoogleError {
                try? call.progress.finished(Report(name: name, action: "created", old_key: resource, new_key: newName, service_account: serviceAccount,
                                         old_key_deleted: false, age_days: age))
                // The old key's own project: a first rotation's --project names where the new one goes.
                throw GoogleError(error.category, "the new key is stored and current, but deleting the old key \(resource) failed: \(error.message)",
                                  hint: "the next 'gemvault key rotate --create \(name)' deletes it, or delete it by hand: \(byHand(resource, project: plan.project))",
                                  status: error.status, reason: error.reason)
            }
        } else if let resource {
            call.progress.note("the old key \(resource) is kept at Google (--keep-old) and still works")
        } else {
            call.progress.note("the old key was not found at Google, so it was not deleted: delete it where it was made")
        }
        vault.journal.end()
        try call.progress.finished(Report(name: name, action: "created", old_key: resource, new_key: newName, service_account: serviceAccount,
                                old_key_deleted: deleted, age_days: age))
    }
}
