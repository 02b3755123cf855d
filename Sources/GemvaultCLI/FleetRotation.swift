import GoogleAuth
import GoogleHTTP
import GoogleKeys
import Settings
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

/// `key rotate --create`, `--finish` and `--undo` of a key linked to Secret Manager: the new
/// key goes to the fleet as a new version of the secret, and the old one keeps working for a
/// grace period, so every machine that fetches within it moves over before anything is
/// retired (Docs/fleet.md, "Rotation through Secret Manager"). The steps at Google are
/// GoogleRotation's; this file adds the secret's steps and orders them so that an
/// interruption leaves a vault with the old or the new value and a record the next run finishes.
enum FleetRotation {
    /// How long the old key keeps working when --grace is not given.
    static let defaultGrace = 900.0
    /// The secret's annotation a rotator claims with, and leaves the new version's number in.
    static let claimAnnotation = "gemvault-rotation"
    /// A claim older than this that added no version is a rotator that died.
    static let claimLifetime: Int64 = 3600

    /// When `--create` rotates: always, or only when the secret's newest version is old enough.
    enum Due {
        case always
        case olderThan(days: Int64)
        case byPeriod
    }

    /// A rotator's claim, as the annotation holds it: `claimed host=H pid=P time=T` while it
    /// runs, `rotated version=N time=T` once done.
    struct Claim {
        let state: String
        let fields: [String: String]

        init?(_ text: String?) {
            guard let words = text?.split(separator: " "), let first = words.first else { return nil }
            state = String(first)
            var fields: [String: String] = [:]
            for word in words.dropFirst() {
                let parts = word.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { fields[String(parts[0])] = String(parts[1]) }
            }
            self.fields = fields
        }

        var time: Int64 { fields["time"].flatMap { Int64($0) } ?? 0 }
        var host: String { fields["host"] ?? "?" }
        var pid: Int32? { fields["pid"].flatMap { Int32($0) } }
        var who: String { "\(host) (process \(pid.map(String.init) ?? "?"))" }

        /// A claim this machine made in a process that is gone: a run that was killed.
        var isLeftHere: Bool { host == Self.thisHost && !(pid.map(ProcessIdentity.isRunning) ?? false) }

        static var thisHost: String { String(CurrentUser.host.map { $0 == " " || $0 == "=" ? "-" : $0 }.prefix(64)) }
        static func claiming(at now: Int64) -> String { "claimed host=\(thisHost) pid=\(ProcessIdentity.current) time=\(now)" }
        static func rotated(to version: UInt64, at now: Int64) -> String { "rotated version=\(version) time=\(now)" }
    }

    static func reference(of link: SecretLink, name: String) throws -> SecretReference {
        guard let reference = SecretReference(parsing: link.reference) else {
            throw VaultError.payloadDamaged(path: "the vault", detail: "the Secret Manager link of '\(name)' is not a gsm:// reference")
        }
        guard reference.version == nil else {
            throw CommandFailure(.failure, "'\(name)' is pinned to version \(reference.version!) of \(reference.resource); a rotation adds a version, which a pinned key would never take",
                                 hint: "link it to the secret's latest version first: gemvault key set \(name) --from \(SecretReference.scheme + reference.resource)")
        }
        return reference
    }

    /// --grace, at least secret_cache_ttl: a machine fetches at most that long after the new version is added.
    static func grace(_ call: Invocation, _ settings: Settings) throws -> Double {
        let ttl = settings[.secretCacheTTL]
        guard let text = call.value(.grace) else { return max(defaultGrace, ttl) }
        guard let seconds = DurationText.seconds(text), seconds >= 0, seconds <= 7 * 86400 else {
            throw UsageError("--grace takes a duration up to 7 days (like 15m or 1h), not '\(text)'", command: call.command)
        }
        guard seconds >= ttl else {
            throw UsageError("--grace \(text) is shorter than secret_cache_ttl (\(DurationText.text(ttl))): a machine could keep the old key after it is deleted", command: call.command)
        }
        return seconds
    }

    struct Report: Encodable {
        let name: String
        let action: String
        @Nullable var old_key: String?
        @Nullable var new_key: String?
        @Nullable var service_account: String?
        var old_key_deleted: Bool
        let age_days: Int64
        let secret: String
        var secret_version: UInt64?
        var previous_version: UInt64?
        var finish_after: String?
    }

    // MARK: key rotate --create

    static func create(_ call: Invocation, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink,
                       verifyLimit: Double, due: Due) throws {
        guard let startLink = start.key.link else { return }
        let reference = try reference(of: startLink, name: name)
        let grace = try grace(call, link.settings)
        let manager = try link.secretManager()
        try finishInterrupted(start, link, manager, reference, name: name)
        var vault = try start.reloaded()
        let age = max(0, Output.now() - vault.key.updated) / 86400
        func skipped(_ action: String) throws {
            try finish(call, Report(name: name, action: action, old_key: vault.google?.resource, new_key: nil, service_account: nil, old_key_deleted: false,
                                    age_days: age, secret: reference.resource, secret_version: vault.key.link?.version))
        }

        // A finish an earlier rotation left: done when its grace is over, else it holds this one.
        if let pending = vault.key.link, let rotation = pending.rotation, rotation.isPending {
            if Output.now() >= rotation.finishAfter {
                try complete(name: name, vault: vault, link: link, manager, reference)
                vault = try vault.reloaded()
            } else if case .always = due {
                throw CommandFailure(.failure, "'\(name)' was rotated to version \(pending.version) of \(reference.resource); its grace period runs until \(Output.isoDate(rotation.finishAfter))",
                                     hint: "'gemvault key rotate --finish \(name)' waits for it and finishes; then rotate again")
            } else {
                Console.note("the rotation of '\(name)' to version \(pending.version) is in its grace period until \(Output.isoDate(rotation.finishAfter)): nothing else to do")
                return try skipped("skipped")
            }
        }

        // Whether it is due: the secret's newest enabled version against the period.
        let info = try manager.secret(reference)
        let enabled = try manager.versions(reference, enabledOnly: true)
        guard let newest = enabled.max(by: { $0.number < $1.number }) else {
            throw GoogleError(.refused, "\(reference.resource) has no enabled version to rotate from",
                              hint: "enable the version that holds the current key: gcloud secrets versions enable N --secret \(reference.secret) --project \(reference.project)")
        }
        let now = Output.now()
        let versionAge = max(0, now - (newest.created ?? now))
        let limit: (seconds: Int64, from: String)?
        switch due {
        case .always: limit = nil
        case .olderThan(let days): limit = (days * 86400, "--if-older-than")
        case .byPeriod:
            limit = info.rotationPeriod.map { (Int64($0), "the secret's rotation period") }
                ?? (Int64(link.settings[.rotationDays]) * 86400, "rotation_days")
        }
        if let limit {
            guard limit.seconds > 0, versionAge >= limit.seconds else {
                Console.note("version \(newest.number) of \(reference.resource) is \(Clock.elapsedText(versionAge)) old, "
                             + (limit.seconds > 0 ? "younger than \(Clock.elapsedText(limit.seconds)) (\(limit.from))" : "and rotation_days is 0 (never)") + ": nothing to do")
                return try skipped("skipped")
            }
        }

        // The claim: of several rotators that read the same etag, exactly one patches it.
        if let claim = Claim(info.annotations[claimAnnotation]), claim.state == "claimed" {
            let claimAge = now - claim.time
            let rotatedSince = (newest.created ?? 0) > claim.time
            if claimAge < claimLifetime && !claim.isLeftHere && !rotatedSince {
                Console.note("rotated elsewhere: \(claim.who) claimed the rotation of \(reference.resource) \(Clock.elapsedText(claimAge)) ago; this machine takes the new version within secret_cache_ttl")
                return try skipped("elsewhere")
            }
            Console.note("taking over the rotation of \(reference.resource) that \(claim.who) claimed \(Clock.elapsedText(claimAge)) ago"
                         + (claim.isLeftHere ? ", in a run that is gone" : " and did not finish within an hour"))
        }
        var annotations = info.annotations
        annotations[claimAnnotation] = Claim.claiming(at: now)
        let claimed: SecretInfo
        switch Result(catching: { () throws(GoogleError) in try manager.annotate(reference, annotations, etag: info.etag) }) {
        case .success(let answer): claimed = answer
        case .failure(let error) where error.reason == SecretManagerClient.etagConflict:
            Console.note("rotated elsewhere: \(reference.resource) changed while this machine claimed it (another rotator came first); this machine takes the new version within secret_cache_ttl")
            return try skipped("elsewhere")
        case .failure(let error): throw error
        }
        Console.note("claimed the rotation of \(reference.resource) (annotation \(claimAnnotation))")
        let release = { (reason: String) in
            var back = claimed.annotations
            back[claimAnnotation] = info.annotations[claimAnnotation]
            if back[claimAnnotation] == nil { back.removeValue(forKey: claimAnnotation) }
            if (try? manager.annotate(reference, back, etag: claimed.etag)) == nil {
                Console.warning("could not withdraw the claim on \(reference.resource) after \(reason); other rotators wait an hour before taking it over")
            }
        }

        do {
            try rotate(call, name: name, vault: vault, link: link, manager, reference, grace: grace, verifyLimit: verifyLimit, age: age) { version in
                var done = claimed.annotations
                done[claimAnnotation] = Claim.rotated(to: version, at: Output.now())
                if (try? manager.annotate(reference, done, etag: claimed.etag)) == nil {
                    Console.warning("could not record version \(version) in the annotation \(claimAnnotation) of \(reference.resource)")
                }
            }
        } catch {
            release("a failed rotation")
            throw error
        }
    }

    private static func rotate(_ call: Invocation, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink,
                               _ manager: SecretManagerClient, _ reference: SecretReference, grace: Double, verifyLimit: Double, age: Int64,
                               rotated: (UInt64) -> Void) throws {
        // The value to replace is what the fleet uses now: the secret's latest version.
        var vault = start
        guard let startLink = start.key.link else { return }
        let latest = try manager.accessKey(reference)
        guard latest.version >= startLink.version else {
            throw GoogleError(.badData, "Secret Manager answered version \(latest.version) of \(reference.resource), older than version \(startLink.version) the vault has; nothing was rotated")
        }
        if latest.version != startLink.version || !latest.value.isEqual(to: start.key.secret) {
            _ = try vault.apply(.refreshLink(name: name, secret: latest.value, now: Output.now(),
                                             link: SecretLink(reference: startLink.reference, version: latest.version, fetched: Output.now()), since: startLink.fetched))
            vault = try vault.reloaded()
            Console.note("took version \(latest.version) of '\(name)' from \(reference.resource) first: the rotation replaces what the fleet uses now")
        }

        // (1) The current key at Google and the new one made like it.
        var current: GoogleKey?
        var foundByLookup = false
        if let record = vault.google {
            current = try GoogleRotation.liveKey(try link.client(project: call.value(.project) ?? record.project), record.resource, name: name)
        } else {
            current = try GoogleRotation.lookUp(call, name: name, vault: vault, link: link)
            foundByLookup = current != nil
        }
        let plan = try GoogleRotation.plan(call, name: name, vault: vault, link: link, current: current)
        let retire = call.flag(.keepOld) ? nil : plan.resource
        var intent = RotationJournal.Intent(action: "rotation", made: plan.planned, current: plan.planned, retire: retire, secret: reference.resource)
        let created = try GoogleRotation.make(plan, name: name, vault: vault, intent: intent)
        let newName = created.key?.name ?? plan.planned

        // Any failure from here until the vault holds the new key takes it back: the version
        // added is disabled (with the old value added again first when it was the newest, so
        // `latest` keeps answering) and the new key deleted.
        var added: UInt64?
        let secret: SecretBytes
        let finishAfter: Int64
        do {
            secret = try GoogleRotation.received(plan, created, newName)
            // (2) The new key as a new version of the secret.
            intent.adding = true
            try vault.journal.begin(intent)
            Console.note("adding the new key to \(reference.resource) as a new version")
            let version = try manager.addVersion(reference, value: secret)
            added = version
            intent.added = version
            try vault.journal.begin(intent)
            Console.note("added version \(version) to \(reference.resource); machines that fetch now take it")
            // (3) Checked against Gemini through the propagation window.
            try plan.check.verify(secret, settings: link.settings, limit: verifyLimit, transport: link.transport)
            // (4) Stored, with the finish the grace period ends in.
            finishAfter = Output.now() + Int64(grace.rounded(.up))
            let rotation = LinkedRotation(previousVersion: latest.version, retireKey: retire ?? "", finishAfter: finishAfter)
            let replaced = foundByLookup ? GoogleKeyRecord(resource: plan.resource!, serviceAccount: current?.serviceAccountEmail ?? "") : nil
            _ = try vault.apply(.rotateLinkedKey(name: name, secret: secret, now: Output.now(),
                                                 google: GoogleKeyRecord(resource: newName, serviceAccount: plan.serviceAccount), replacedGoogle: replaced,
                                                 link: SecretLink(reference: startLink.reference, version: version, fetched: Output.now(), rotation: rotation)))
        } catch {
            if vault.currentGoogle()?.resource != newName {
                if let added { withdraw(manager, reference, version: added, restoring: vault.key.secret) }
                GoogleRotation.undoCreate(plan.client, newName)
                vault.journal.end()
            }
            throw error
        }
        // From here the vault's record carries the finish.
        vault.journal.end()
        rotated(added!)
        Console.note("key '\(name)' is now \(secret.masked) (\(newName), version \(added!) of \(reference.resource)), which Gemini accepted; every machine takes it within secret_cache_ttl")
        ShareCommand.reshareAfterRotation(call.context.vault, name: name)
        var report = Report(name: name, action: "created", old_key: plan.resource, new_key: newName, service_account: plan.serviceAccount, old_key_deleted: false,
                            age_days: age, secret: reference.resource, secret_version: added, previous_version: latest.version,
                            finish_after: Output.isoDate(finishAfter))
        // (5) After the grace: the previous version disabled, the old key deleted.
        if call.flag(.noWait) {
            Console.note("the finish is recorded in the vault: the first 'gemvault key rotate \(name)' after \(Output.isoDate(finishAfter)) (or 'gemvault key rotate --finish \(name)') disables version \(latest.version)"
                         + (retire.map { " and deletes \($0) at Google" } ?? ""))
            return try finish(call, report)
        }
        try waitOut(until: finishAfter, seconds: grace, name: name, version: added!)
        report.old_key_deleted = try complete(name: name, vault: try vault.reloaded(), link: link, manager, reference)
        try finish(call, report)
    }

    /// Waits out the grace with a progress line; stopping it leaves the finish recorded.
    static func waitOut(until deadline: Int64, seconds: Double, name: String, version: UInt64) throws {
        guard seconds > 0 else { return }
        Console.note("waiting \(DurationText.text(seconds)) (until \(Output.isoDate(deadline))) so that every machine takes version \(version) while the old key still works; "
                     + "stopping now leaves the finish to the next 'gemvault key rotate \(name)'")
        let progress = ProgressLine.start("grace period for the fleet, until \(Output.isoDate(deadline))")
        defer { progress?.stop() }
        WaitClock.standard.sleep(seconds)
    }

    /// Disables the version a failed or interrupted run added; when it is the newest, the value
    /// the vault keeps is added again first, since a disabled newest version makes `latest` fail
    /// for every machine instead of falling back.
    static func withdraw(_ manager: SecretManagerClient, _ reference: SecretReference, version: UInt64, restoring value: SecretBytes) {
        do {
            let newest = try manager.versions(reference, enabledOnly: false).map(\.number).max() ?? version
            if newest == version {
                let restored = try manager.addVersion(reference, value: value)
                Console.note("added the key the vault keeps to \(reference.resource) again as version \(restored), so that 'latest' answers")
            }
            try manager.setVersion(reference, version, enabled: false)
            Console.note("disabled version \(version) of \(reference.resource), which held the new key")
        } catch {
            Console.warning("could not withdraw version \(version) of \(reference.resource) (\(error.message)); disable it by hand once 'latest' holds a working key: "
                            + "gcloud secrets versions disable \(version) --secret \(reference.secret) --project \(reference.project)")
        }
    }

    // MARK: The finish

    /// Disables the previous version and deletes the old key, then records it; whether the old
    /// key was deleted (or already gone).
    @discardableResult
    static func complete(name: String, vault: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink,
                         _ manager: SecretManagerClient, _ reference: SecretReference) throws -> Bool {
        guard let current = vault.key.link, let rotation = current.rotation, rotation.isPending else { return false }
        guard rotation.previousVersion < current.version else {
            throw CommandFailure(.failure, "the rotation of '\(name)' would disable version \(rotation.previousVersion), which is not older than version \(current.version) the vault holds; nothing was disabled")
        }
        let disabling = Result { () throws(GoogleError) in try manager.setVersion(reference, rotation.previousVersion, enabled: false) }
        switch disabling {
        case .success: Console.note("disabled version \(rotation.previousVersion) of \(reference.resource), which held the old key")
        case .failure(let error) where error.status == 400 && error.reason == "FAILED_PRECONDITION":
            Console.note("version \(rotation.previousVersion) of \(reference.resource) is already destroyed")
        case .failure(let error) where error.status == 404:
            Console.note("version \(rotation.previousVersion) of \(reference.resource) is gone")
        case .failure(let error):
            throw GoogleError(error.category, "the rotation of '\(name)' is stored, but disabling version \(rotation.previousVersion) of \(reference.resource) failed: \(error.message)",
                              hint: "'gemvault key rotate --finish \(name)' tries again", status: error.status, reason: error.reason)
        }
        var deleted = false
        if !rotation.retireKey.isEmpty {
            let client = try link.client(project: GoogleKeyRecord(resource: rotation.retireKey, serviceAccount: "").project)
            do {
                switch try GoogleRotation.deleteAtGoogle(client, rotation.retireKey) {
                case .deleted: Console.note("deleted the old key \(rotation.retireKey) at Google ('gemvault key rotate --undo \(name)' can bring it back for 30 days)")
                case .alreadyDeleted, .gone: Console.note("the old key \(rotation.retireKey) was already deleted at Google")
                }
                deleted = true
            } catch let error as GoogleError {
                throw GoogleError(error.category, "version \(rotation.previousVersion) is disabled, but deleting the old key \(rotation.retireKey) failed: \(error.message)",
                                  hint: "'gemvault key rotate --finish \(name)' tries again, or delete it by hand: \(GoogleRotation.byHand(rotation.retireKey))",
                                  status: error.status, reason: error.reason)
            }
        }
        _ = try vault.apply(.finishLinkedRotation(name: name, version: current.version))
        Console.note("finished the rotation of '\(name)' to version \(current.version)")
        return deleted
    }

    /// `key rotate --finish [NAME]`.
    static func finishCommand(_ call: Invocation, name: String) throws {
        try GoogleRotation.withVault(call.context, name: name) { start in
            guard let startLink = start.key.link else {
                throw CommandFailure(.failure, "'\(name)' is not linked to Secret Manager: its rotations finish as they run",
                                     hint: "--finish is for a key rotated through its secret with --no-wait (Docs/fleet.md)")
            }
            let reference = try reference(of: startLink, name: name)
            let link = GoogleRotation.GoogleLink(call, try GoogleRotation.settings(call, vault: start.settings), transport: CurlTransport())
            let manager = try link.secretManager()
            try finishInterrupted(start, link, manager, reference, name: name)
            let vault = try start.reloaded()
            guard let current = vault.key.link, let rotation = current.rotation, rotation.isPending else {
                Console.note("no rotation of '\(name)' waits for its finish")
                return
            }
            let left = rotation.finishAfter - Output.now()
            if left > 0 {
                if call.flag(.noWait) {
                    Console.note("the grace period of '\(name)' runs until \(Output.isoDate(rotation.finishAfter)) (\(Clock.elapsedText(left)) more): nothing done")
                    return
                }
                try waitOut(until: rotation.finishAfter, seconds: Double(left), name: name, version: current.version)
            }
            let deleted = try complete(name: name, vault: vault, link: link, manager, reference)
            try finish(call, Report(name: name, action: "finished", old_key: rotation.retireKey.nonEmpty, new_key: vault.google?.resource,
                                    service_account: vault.google?.serviceAccount.nonEmpty, old_key_deleted: deleted,
                                    age_days: max(0, Output.now() - vault.key.updated) / 86400, secret: reference.resource,
                                    secret_version: current.version, previous_version: rotation.previousVersion))
        }
    }

    static func finish(_ call: Invocation, _ report: Report) throws {
        if call.flag(.json) { try Output.json(report, schema: .keyRotate) }
    }

    // MARK: key rotate --undo

    static func undo(_ call: Invocation, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink) throws {
        guard let startLink = start.key.link else { return }
        let reference = try reference(of: startLink, name: name)
        let manager = try link.secretManager()
        try finishInterrupted(start, link, manager, reference, name: name)
        let vault = try start.reloaded()
        guard let current = vault.key.link, let rotation = current.rotation, let newer = vault.google else {
            throw CommandFailure(.failure, "the current value of '\(name)' was not made by 'key rotate --create' through \(reference.resource); nothing to undo",
                                 hint: "add the version you want to the secret, and every machine takes it")
        }
        // The previous version's key comes back first: it must work before the fleet is sent to it.
        try vault.journal.begin(.init(action: "--undo", made: nil, current: rotation.retireKey.nonEmpty ?? newer.resource, retire: call.flag(.keepOld) ? nil : newer.resource,
                                      secret: reference.resource))
        if !rotation.retireKey.isEmpty {
            let client = try link.client(project: GoogleKeyRecord(resource: rotation.retireKey, serviceAccount: "").project)
            if try client.get(rotation.retireKey).isDeleted {
                Console.note("undeleting \(rotation.retireKey) at Google")
                _ = try client.wait(try client.undelete(rotation.retireKey), what: "undeleting \(rotation.retireKey)")
            }
        }
        try manager.setVersion(reference, rotation.previousVersion, enabled: true)
        Console.note("enabled version \(rotation.previousVersion) of \(reference.resource) again")
        let previous = try manager.accessKey(SecretReference(parsing: "\(reference)/versions/\(rotation.previousVersion)")!)
        guard let earlier = vault.summary.earlier.first, earlier.masked == previous.value.masked else {
            throw CommandFailure(.failure, "the previous value in the vault's history of '\(name)' is not version \(rotation.previousVersion) of \(reference.resource); nothing was undone in the vault",
                                 hint: "add the version you want to the secret, and every machine takes it")
        }
        // Added again as the newest version: `latest` would fail, not fall back, once the newer one is disabled.
        let restored = try manager.addVersion(reference, value: previous.value)
        Console.note("added the previous key to \(reference.resource) again as version \(restored), so that every machine takes it")
        _ = try vault.apply(.rollBackLinked(name: name, now: Output.now(), link: SecretLink(reference: current.reference, version: restored, fetched: Output.now())))
        Console.note("key '\(name)' is back to its previous value (\(rotation.retireKey.nonEmpty ?? "version \(rotation.previousVersion)"))")
        ShareCommand.reshareAfterRotation(call.context.vault, name: name)
        try manager.setVersion(reference, current.version, enabled: false)
        Console.note("disabled version \(current.version) of \(reference.resource)")
        var deleted = false
        if !call.flag(.keepOld) {
            let client = try link.client(project: newer.project)
            if try GoogleRotation.deleteAtGoogle(client, newer.resource) == .deleted {
                Console.note("deleted the newer key \(newer.resource) at Google; Google may still accept it for up to about 25 minutes")
            }
            deleted = true
        }
        vault.journal.end()
        try finish(call, Report(name: name, action: "undone", old_key: newer.resource, new_key: rotation.retireKey.nonEmpty, service_account: newer.serviceAccount.nonEmpty,
                                old_key_deleted: deleted, age_days: max(0, Output.now() - start.key.updated) / 86400, secret: reference.resource,
                                secret_version: restored, previous_version: current.version))
    }

    // MARK: A run a kill interrupted

    /// What the last holder of the key's rotation lock left: a rotation killed before its vault
    /// write has its version withdrawn and its key deleted; one killed after it has its finish
    /// recorded in the vault already. An interrupted --undo is named: running it again completes it.
    static func finishInterrupted(_ vault: GoogleRotation.VaultView, _ link: GoogleRotation.GoogleLink, _ manager: SecretManagerClient,
                                  _ reference: SecretReference, name: String) throws {
        guard let intent = vault.journal.interrupted else { return }
        guard intent.secret == reference.resource else {
            // A run from before the key was linked: the API Keys steps only.
            return try GoogleRotation.finishInterrupted(vault, link, name: name)
        }
        let version = vault.key.link?.version ?? 0
        let written = vault.google.map { GoogleRotation.sameKey($0.resource, intent.current) } ?? false
        if intent.action == "--undo" {
            if !written {
                Console.warning("the last --undo of '\(name)' was interrupted before the vault was written; 'gemvault key rotate --undo \(name)' completes it")
            } else if let retire = intent.retire {
                Console.warning("the last --undo of '\(name)' was interrupted after the vault was written; the newer key \(retire) may still work: \(GoogleRotation.byHand(retire))")
            }
            return vault.journal.end()
        }
        if written {
            Console.note("the last rotation of '\(name)' was interrupted after the vault stored version \(version); its finish is recorded"
                         + (vault.key.link?.rotation.map { " for after \(Output.isoDate($0.finishAfter))" } ?? ""))
            return vault.journal.end()
        }
        if let added = intent.added, version >= added {
            Console.warning("the vault took version \(added) of \(reference.resource), which an interrupted rotation added, before that rotation stored it; it is kept, and the key it replaced still works"
                            + (intent.retire.map { ": delete it once every machine has version \(added): \(GoogleRotation.byHand($0))" } ?? ""))
            return vault.journal.end()
        }
        var found = intent.added
        if found == nil, intent.adding == true, let made = intent.made,
           let madeString = try? link.client(project: GoogleKeyRecord(resource: made, serviceAccount: "").project).keyString(made) {
            // Killed while the version was being added: the newest version is the run's when it holds the run's key.
            if let latest = try? manager.accessKey(reference), latest.version > version, latest.value.isEqual(to: madeString) { found = latest.version }
        }
        if let found {
            Console.note("the last rotation of '\(name)' was interrupted before it stored its new key; it had added version \(found) of \(reference.resource)")
            withdraw(manager, reference, version: found, restoring: vault.key.secret)
        } else if intent.adding == true {
            Console.warning("the last rotation of '\(name)' was interrupted while adding a version to \(reference.resource); no enabled version newer than \(version) holds its key")
        }
        try GoogleRotation.finishInterrupted(vault, link, name: name)
    }
}
