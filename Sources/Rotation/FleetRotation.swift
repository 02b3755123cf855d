import GoogleAuth
import GoogleHTTP
import GoogleKeys
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// `key rotate --create`, `--finish` and `--undo` of a key linked to Secret Manager: the new
/// key goes to the fleet as a new version of the secret, and the old one keeps working for a
/// grace period, so every machine that fetches within it moves over before anything is
/// retired (Docs/fleet.md, "Rotation through Secret Manager"). The steps at Google are
/// GoogleRotation's; this file adds the secret's steps and orders them so that an
/// interruption leaves a vault with the old or the new value and a record the next run finishes.
public enum FleetRotation {
    /// How long the old key keeps working when --grace is not given.
    public static let defaultGrace = 900.0
    /// The secret's annotation a rotator claims with, and leaves the new version's number in.
    static let claimAnnotation = "gemvault-rotation"
    /// How long a rotation may hold its claim before it is taken over whatever it says (with
    /// the longest run, `claimLimit`).
    static let claimLifetime: Int64 = 3600

    /// When `--create` rotates: always, or only when the secret's newest version is old enough.
    enum Due {
        case always
        case olderThan(days: Int64)
        case byPeriod
    }

    static func reference(of link: SecretLink, name: String) throws -> SecretReference {
        guard let reference = SecretReference(parsing: link.reference) else {
            throw VaultError.payloadDamaged(path: "the vault", detail: "the Secret Manager link of '\(name)' is not a gsm:// reference")
        }
        guard reference.version == nil else {
            throw RotationError.failed("'\(name)' is pinned to version \(reference.version!) of \(reference.resource); a rotation adds a version, which a pinned key would never take",
                                 hint: "link it to the secret's latest version first: gemvault key set \(name) --from \(SecretReference.scheme + reference.resource)")
        }
        return reference
    }

    /// --grace, at least secret_cache_ttl: a machine fetches at most that long after the new version is added.
    static func grace(_ call: RotationRequest, _ settings: Settings) throws -> Double {
        let ttl = settings[.secretCacheTTL]
        guard let text = call.value(.grace) else { return max(defaultGrace, ttl) }
        guard let seconds = DurationText.seconds(text), seconds >= 0, seconds <= 30 * 86400 else {
            throw RotationError.usage("--grace takes a duration up to 30 days (like 15m or 1h), not '\(text)'")
        }
        guard seconds >= ttl else {
            throw RotationError.usage("--grace \(text) is shorter than secret_cache_ttl (\(DurationText.text(ttl))): a machine could keep the old key after it is deleted",
                             fix: "give --grace of at least \(DurationText.text(ttl)), or lower secret_cache_ttl first")
        }
        return seconds
    }

    typealias Report = GoogleRotation.Report

    /// What every command on a linked key starts with: its secret, the grace, Secret Manager,
    /// and the vault once an interrupted run is dealt with.
    static func prepare(_ call: RotationRequest, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink)
        throws -> (reference: SecretReference, grace: Double, manager: SecretManagerClient, vault: GoogleRotation.VaultView) {
        guard let startLink = start.key.link else { throw VaultError.notLinked(name: name) }
        let reference = try reference(of: startLink, name: name)
        let grace = try grace(call, link.settings)
        let manager = try link.secretManager()
        try finishInterrupted(start, link, manager, reference, name: name)
        return (reference, grace, manager, try start.reloaded())
    }

    // MARK: key rotate --create

    static func create(_ call: RotationRequest, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink,
                       verifyLimit: Double, due: Due) throws {
        let (reference, grace, manager, prepared) = try prepare(call, name: name, vault: start, link: link)
        var vault = prepared
        let age = max(0, Clock.now() - vault.key.updated) / 86400
        func skipped(_ action: String) throws {
            try call.progress.finished(Report(name: name, action: action, old_key: vault.google?.resource, new_key: nil, service_account: nil, old_key_deleted: false,
                                    age_days: age, secret: reference.resource, secret_version: vault.key.link?.version))
        }

        // A finish an earlier rotation left: done when its grace is over, else it holds this one.
        if try holdsOn(earlierRotationOf: name, &vault, due: due, link: link, manager, reference) { return try skipped("skipped") }

        // Whether it is due: the secret's newest enabled version against the period.
        let info = try manager.secret(reference)
        let googleClock = GoogleClock(info)
        let enabled = try manager.versions(reference, enabledOnly: true)
        guard let newest = enabled.max(by: { $0.number < $1.number }) else {
            throw GoogleError(.refused, "\(reference.resource) has no enabled version to rotate from",
                              hint: "enable the version that holds the current key: gcloud secrets versions enable N --secret \(reference.secret) --project \(reference.project)")
        }
        // Google's time: the claim's times and the versions' are Google's, not this machine's.
        let now = googleClock.now()
        let versionAge = max(0, now - (newest.created ?? now))
        let limit = dueLimit(due, info, link)
        if let limit {
            guard limit.seconds > 0, versionAge >= limit.seconds else {
                call.progress.note("version \(newest.number) of \(reference.resource) is \(Clock.elapsedText(versionAge)) old, "
                             + (limit.seconds > 0 ? "younger than \(Clock.elapsedText(limit.seconds)) (\(limit.from))" : "and rotation_days is 0 (never)") + ": nothing to do")
                return try skipped("skipped")
            }
        }

        // The claim: of several rotators that read the same etag, exactly one patches it.
        let stuckAfter = limit.map { $0.seconds.multipliedReportingOverflow(by: 2).overflow ? Int64.max : $0.seconds * 2 }
        guard try judge(info.annotations[claimAnnotation], call, reference, name: name, now: now, versionAge: versionAge, stuckAfter: stuckAfter) else {
            return try skipped("elsewhere")
        }
        guard let claimed = try claim(info, call, reference, manager, name: name, now: now, versionAge: versionAge, stuckAfter: stuckAfter) else {
            return try skipped("elsewhere")
        }
        call.progress.note("claimed the rotation of \(reference.resource) (annotation \(claimAnnotation))")
        let heartbeat = ClaimHeartbeat(manager, reference, claimed: claimed, clock: googleClock, since: now)
        defer { _ = heartbeat.stop() }
        var recorded = false
        do {
            try rotate(call, name: name, vault: vault, link: link, manager, reference, grace: grace, verifyLimit: verifyLimit, age: age, beforeAdding: {
                if let taker = try heartbeat.confirm() {
                    throw RotationError.failed("\(taker) took over the claim on the rotation of \(reference.resource) while this machine checked its new key; nothing was added")
                }
            }) { version in
                recorded = true
                recordRotated(to: version, heartbeat, manager, reference, progress: call.progress)
            }
        } catch {
            // A failure after the new version was stored (its finish) leaves the claim recorded as done.
            if !recorded { withdrawClaim(heartbeat, restoring: info, manager, reference, after: "a failed rotation", progress: call.progress) }
            throw error
        }
    }

    /// An earlier rotation still in its grace period: finished when the grace is over; else
    /// it holds this one (true), refused when a rotation is asked for outright.
    private static func holdsOn(earlierRotationOf name: String, _ vault: inout GoogleRotation.VaultView, due: Due, link: GoogleRotation.GoogleLink,
                                _ manager: SecretManagerClient, _ reference: SecretReference) throws -> Bool {
        if let pending = vault.key.link, let rotation = pending.rotation, rotation.isPending {
            if Clock.now() >= rotation.finishAfter {
                try complete(name: name, vault: vault, link: link, manager, reference)
                vault = try vault.reloaded()
            } else if case .always = due {
                throw RotationError.failed("'\(name)' was rotated to version \(pending.version) of \(reference.resource); its grace period runs until \(Clock.localDate(rotation.finishAfter))",
                                     hint: "'gemvault key rotate --finish \(name)' waits for it and finishes; then rotate again")
            } else {
                vault.progress.note("the rotation of '\(name)' to version \(pending.version) is in its grace period until \(Clock.localDate(rotation.finishAfter)): nothing else to do")
                return true
            }
        }
        return false
    }

    /// The claim annotation turned into the record of the version this run added.
    private static func recordRotated(to version: UInt64, _ heartbeat: ClaimHeartbeat, _ manager: SecretManagerClient, _ reference: SecretReference,
                                      progress: any RotationProgress) {
        let latest = heartbeat.stop()
        var done = latest.annotations
        done[claimAnnotation] = Claim.rotated(to: version, at: heartbeat.googleNow())
        if (try? manager.annotate(reference, done, etag: latest.etag)) == nil {
            progress.warning("could not record version \(version) in the annotation \(claimAnnotation) of \(reference.resource)")
        }
    }

    /// How old the newest version may grow before a rotation is due; nil: always due.
    private static func dueLimit(_ due: Due, _ info: SecretInfo, _ link: GoogleRotation.GoogleLink) -> (seconds: Int64, from: String)? {
        switch due {
        case .always: return nil
        case .olderThan(let days): return (days.multipliedReportingOverflow(by: 86400).overflow ? Int64.max : days * 86400, "--if-older-than")
        case .byPeriod:
            // Google documents 1 hour to 100 years; anything else is not a period.
            return info.rotationPeriod.flatMap { Int64(exactly: $0.rounded(.down)) }.flatMap { (3600...3_155_760_000).contains($0) ? $0 : nil }
                .map { ($0, "the secret's rotation period") } ?? (Int64(link.settings[.rotationDays]) * 86400, "rotation_days")
        }
    }

    /// The claim annotation patched under the etag read; nil when another rotator came first.
    private static func claim(_ info: SecretInfo, _ call: RotationRequest, _ reference: SecretReference, _ manager: SecretManagerClient,
                              name: String, now: Int64, versionAge: Int64, stuckAfter: Int64?) throws -> SecretInfo? {
        var annotations = info.annotations
        annotations[claimAnnotation] = Claim.claiming(since: now, at: now)
        switch Result(catching: { () throws(GoogleError) in try manager.annotate(reference, annotations, etag: info.etag) }) {
        case .success(let answer): return answer
        case .failure(let error) where error.reason == SecretManagerClient.etagConflict:
            // Another rotator came first: judged again as found now (a person's --create refuses it).
            let again = try manager.secret(reference)
            if try judge(again.annotations[claimAnnotation], call, reference, name: name, now: GoogleClock(again).now(), versionAge: versionAge, stuckAfter: stuckAfter) {
                throw RotationError.failed("\(reference.resource) changed while this machine claimed it; nothing was rotated", hint: "run the command again")
            }
            return nil
        case .failure(let error): throw error
        }
    }

    /// The claim given back after a failed rotation: the annotation as it was before.
    private static func withdrawClaim(_ heartbeat: ClaimHeartbeat, restoring info: SecretInfo, _ manager: SecretManagerClient,
                                      _ reference: SecretReference, after reason: String, progress: any RotationProgress) {
        let latest = heartbeat.stop()
        var back = latest.annotations
        back[claimAnnotation] = info.annotations[claimAnnotation]
        if back[claimAnnotation] == nil { back.removeValue(forKey: claimAnnotation) }
        if heartbeat.lost == nil, (try? manager.annotate(reference, back, etag: latest.etag)) == nil {
            progress.warning("could not withdraw the claim on \(reference.resource) after \(reason); other rotators take it over once it is \(Clock.elapsedText(claimStaleAfter)) old")
        }
    }

    private static func rotate(_ call: RotationRequest, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink,
                               _ manager: SecretManagerClient, _ reference: SecretReference, grace: Double, verifyLimit: Double, age: Int64,
                               beforeAdding: () throws -> Void, rotated: (UInt64) -> Void) throws {
        // The value to replace is what the fleet uses now: the secret's latest version.
        var vault = start
        guard let startLink = start.key.link else { return }
        let latest = try takeLatest(of: name, &vault, startLink, manager, reference)

        // (1) The current key at Google and the new one made like it.
        let (current, foundByLookup) = try currentKey(call, name: name, vault: vault, link: link)
        let plan = try GoogleRotation.plan(call, name: name, vault: vault, link: link, current: current)
        let retire = call.flag(.keepOld) ? nil : plan.resource
        var intent = RotationJournal.Intent(action: .rotation, made: plan.planned, current: plan.planned, retire: retire, secret: reference.resource)
        let created = try GoogleRotation.make(plan, name: name, vault: vault, intent: intent)
        let newName = created.key?.name ?? plan.planned

        // Any failure from here until the vault holds the new key takes it back (takeBack).
        var added: UInt64?
        var made: SecretBytes?
        let secret: SecretBytes
        let finishAfter: Int64
        do {
            secret = try GoogleRotation.received(plan, created, newName)
            made = secret
            // (2) Checked against Gemini through the propagation window before any machine can
            // take it: a reader never gets a key Gemini still rejects.
            try plan.check.verify(secret, link: link, limit: verifyLimit)
            // (3) The new key as a new version of the secret, while the claim is still this run's.
            try beforeAdding()
            intent.adding = true
            try vault.journal.begin(intent)
            call.progress.note("adding the new key to \(reference.resource) as a new version")
            let version = try manager.addVersion(reference, value: secret)
            added = version
            intent.added = version
            try vault.journal.begin(intent)
            call.progress.note("added version \(version) to \(reference.resource); machines that fetch now take it")
            // (4) Stored, with the finish the grace period ends in.
            finishAfter = Clock.now() + Int64(grace.rounded(.up))
            let replaced = foundByLookup ? GoogleKeyRecord(resource: plan.resource!, serviceAccount: current?.serviceAccountEmail ?? "") : nil
            try storeRotated(secret, name: name, vault: vault, plan: plan, newName: newName, replaced: replaced,
                             link: SecretLink(reference: startLink.reference, version: version, fetched: Clock.now(),
                                              rotation: LinkedRotation(previousVersion: latest.version, retireKey: retire ?? "", finishAfter: finishAfter)))
        } catch {
            try takeBack(after: error, vault, newName: newName, plan: plan, added: added, made: made, intent: intent,
                         latest: latest.version, manager, reference, name: name)
            throw error
        }
        // From here the vault's record carries the finish.
        vault.journal.end()
        rotated(added!)
        call.progress.note("key '\(name)' is now \(secret.masked) (\(newName), version \(added!) of \(reference.resource)), which Gemini accepted; every machine takes it within secret_cache_ttl")
        call.progress.keyChanged(name)
        let report = Report(name: name, action: "created", old_key: plan.resource, new_key: newName, service_account: plan.serviceAccount, old_key_deleted: false,
                            age_days: age, secret: reference.resource, secret_version: added, previous_version: latest.version,
                            finish_after: Clock.isoDate(finishAfter))
        // (5) After the grace: the previous version disabled, the old key deleted.
        try finishAfterGrace(call, report, finishAfter: finishAfter, grace: grace, retire: retire, previous: latest.version,
                             added: added!, vault: vault, link: link, manager, reference)
    }

    /// Step (4): the vault holds the new key, its version and the finish to come.
    private static func storeRotated(_ secret: SecretBytes, name: String, vault: GoogleRotation.VaultView, plan: GoogleRotation.NewKeyPlan, newName: String,
                                     replaced: GoogleKeyRecord?, link: SecretLink) throws {
        _ = try vault.apply(.rotateLinkedKey(name: name, secret: secret, now: Clock.now(),
                                             google: GoogleKeyRecord(resource: newName, serviceAccount: plan.serviceAccount), replacedGoogle: replaced,
                                             link: link))
    }

    /// The finish: recorded for later with --no-wait, else waited for and done now.
    private static func finishAfterGrace(_ call: RotationRequest, _ report: Report, finishAfter: Int64, grace: Double, retire: String?, previous: UInt64,
                                         added: UInt64, vault: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink,
                                         _ manager: SecretManagerClient, _ reference: SecretReference) throws {
        let name = report.name
        if call.flag(.noWait) {
            call.progress.note("the finish is recorded in the vault: the first 'gemvault key rotate \(name)' after \(Clock.localDate(finishAfter)) (or 'gemvault key rotate --finish \(name)') disables version \(previous)"
                         + (retire.map { " and deletes \($0) at Google" } ?? ""))
            return try call.progress.finished(report)
        }
        try waitOut(until: finishAfter, seconds: grace, name: name, version: added, progress: call.progress)
        var report = report
        report.old_key_deleted = try complete(name: name, vault: try vault.reloaded(), link: link, manager, reference)
        try call.progress.finished(report)
    }

    /// The secret's latest version, taken into the vault first when it is not the one held:
    /// the rotation replaces what the fleet uses now.
    private static func takeLatest(of name: String, _ vault: inout GoogleRotation.VaultView, _ startLink: SecretLink,
                                   _ manager: SecretManagerClient, _ reference: SecretReference) throws -> FetchedSecret {
        let latest = try manager.accessKey(reference)
        guard latest.version >= startLink.version else {
            throw GoogleError(.badData, "Secret Manager answered version \(latest.version) of \(reference.resource), older than version \(startLink.version) the vault has; nothing was rotated")
        }
        try manager.confirmNewer(latest, than: startLink.version, reference)
        if latest.version != startLink.version || !latest.value.isEqual(to: vault.key.secret) {
            _ = try vault.apply(.refreshLink(name: name, secret: latest.value, now: Clock.now(),
                                             link: SecretLink(reference: startLink.reference, version: latest.version, fetched: Clock.now()), since: startLink.fetched))
            vault = try vault.reloaded()
            vault.progress.note("took version \(latest.version) of '\(name)' from \(reference.resource) first: the rotation replaces what the fleet uses now")
        }
        return latest
    }

    /// The key at Google the vault's value is: by its record, else looked up (then true).
    private static func currentKey(_ call: RotationRequest, name: String, vault: GoogleRotation.VaultView,
                                   link: GoogleRotation.GoogleLink) throws -> (GoogleKey?, Bool) {
        var current: GoogleKey?
        var foundByLookup = false
        if let record = vault.google {
            current = try GoogleRotation.liveKey(try link.client(project: call.value(.project) ?? record.project), record.resource, name: name)
        } else {
            current = try GoogleRotation.lookUp(call, name: name, vault: vault, link: link)
            foundByLookup = current != nil
        }
        return (current, foundByLookup)
    }

    /// A rotation that failed before the vault held its new key, taken back: the version
    /// added disabled (with the old value added again first when it was the newest, so
    /// `latest` keeps answering) and the new key deleted.
    private static func takeBack(after error: any Error, _ vault: GoogleRotation.VaultView, newName: String, plan: GoogleRotation.NewKeyPlan,
                                 added: UInt64?, made: SecretBytes?, intent: RotationJournal.Intent, latest: UInt64,
                                 _ manager: SecretManagerClient, _ reference: SecretReference, name: String) throws {
        var added = added
        if vault.currentGoogle()?.resource != newName {
            // An add whose answer was lost may have been made: the newest version says.
            if added == nil, intent.adding == true, let made {
                added = try versionHolding(made, newerThan: latest, manager, reference, name: name, after: error)
            }
            if let added {
                guard withdraw(manager, reference, version: added, restoring: vault.key.secret, progress: vault.progress) else {
                    throw GoogleError((error as? GoogleError)?.category ?? .network,
                                      "\((error as? GoogleError)?.message ?? "\(error)"); version \(added) of \(reference.resource) still holds the new key, which is kept (not deleted at Google) so that no machine is left with a deleted key",
                                      hint: "the next 'gemvault key rotate --finish \(name)' withdraws the version and deletes the key")
                }
            }
            GoogleRotation.undoCreate(plan.client, newName, progress: vault.progress)
            vault.journal.end()
        }
    }
}
