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

    /// A rotator's claim, as the annotation holds it: `claimed host=H machine=M pid=P time=T`
    /// while it runs, `rotated version=N time=T` once done. Another writer's text is read
    /// defensively: odd characters are dropped from what is shown, and a time in the future
    /// counts as no time.
    struct Claim {
        let state: String
        let fields: [String: String]

        init?(_ text: String?) {
            guard let text, text.utf8.count <= 1024, case let words = text.split(separator: " "), let first = words.first else { return nil }
            state = Self.plain(first)
            var fields: [String: String] = [:]
            for word in words.dropFirst() {
                let parts = word.split(separator: "=", maxSplits: 1)
                if parts.count == 2 { fields[Self.plain(parts[0])] = Self.plain(parts[1]) }
            }
            self.fields = fields
        }

        /// Letters, digits, `.`, `-` and `_`, at most 64: nothing that could reach a terminal as a control.
        static func plain(_ text: Substring) -> String {
            String(text.unicodeScalars.filter { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || ".-_".unicodeScalars.contains($0)) }
                .prefix(64).map(Character.init))
        }

        /// Unix seconds, or 0 when missing, unreadable or later than a few minutes from now.
        func time(now: Int64) -> Int64 {
            guard let time = fields["time"].flatMap({ Int64($0) }), time >= 0, time <= now + 300 else { return 0 }
            return time
        }
        var host: String { fields["host"] ?? "?" }
        var pid: Int32? { fields["pid"].flatMap { Int32($0) } }
        var who: String { "\(host) (process \(pid.map(String.init) ?? "?"))" }

        /// A claim this machine made in a process that is gone: a run that was killed. The machine
        /// is told by its id, not its host name, which cloned machines share.
        var isLeftHere: Bool {
            guard let machine = fields["machine"], machine == Self.thisMachine else { return false }
            return !(pid.map(ProcessIdentity.isRunning) ?? false)
        }

        static var thisHost: String { plain(Substring(CurrentUser.host)).nonEmpty ?? "host" }
        /// A fingerprint of /etc/machine-id (the host name where there is none).
        static var thisMachine: String {
            Sodium.fingerprint(PlainFile.readText("/etc/machine-id", limit: 256).map { plain(Substring($0)) }?.nonEmpty ?? thisHost)
        }
        static func claiming(at now: Int64) -> String {
            "claimed host=\(thisHost) machine=\(thisMachine) pid=\(ProcessIdentity.current) time=\(now)"
        }
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
        guard let seconds = DurationText.seconds(text), seconds >= 0, seconds <= 30 * 86400 else {
            throw UsageError("--grace takes a duration up to 30 days (like 15m or 1h), not '\(text)'", command: call.command)
        }
        guard seconds >= ttl else {
            throw UsageError("--grace \(text) is shorter than secret_cache_ttl (\(DurationText.text(ttl))): a machine could keep the old key after it is deleted", command: call.command)
        }
        return seconds
    }

    typealias Report = GoogleRotation.Report

    /// What every command on a linked key starts with: its secret, the grace, Secret Manager,
    /// and the vault once an interrupted run is dealt with.
    static func prepare(_ call: Invocation, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink)
        throws -> (reference: SecretReference, grace: Double, manager: SecretManagerClient, vault: GoogleRotation.VaultView) {
        guard let startLink = start.key.link else { throw VaultError.notLinked(name: name) }
        let reference = try reference(of: startLink, name: name)
        let grace = try grace(call, link.settings)
        let manager = try link.secretManager()
        try finishInterrupted(start, link, manager, reference, name: name)
        return (reference, grace, manager, try start.reloaded())
    }

    // MARK: key rotate --create

    static func create(_ call: Invocation, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink,
                       verifyLimit: Double, due: Due) throws {
        let (reference, grace, manager, prepared) = try prepare(call, name: name, vault: start, link: link)
        var vault = prepared
        let age = max(0, Output.now() - vault.key.updated) / 86400
        func skipped(_ action: String) throws {
            try GoogleRotation.finish(call, Report(name: name, action: action, old_key: vault.google?.resource, new_key: nil, service_account: nil, old_key_deleted: false,
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
        case .olderThan(let days): limit = (days.multipliedReportingOverflow(by: 86400).overflow ? Int64.max : days * 86400, "--if-older-than")
        case .byPeriod:
            // Google documents 1 hour to 100 years; anything else is not a period.
            limit = info.rotationPeriod.flatMap { Int64(exactly: $0.rounded(.down)) }.flatMap { (3600...3_155_760_000).contains($0) ? $0 : nil }
                .map { ($0, "the secret's rotation period") } ?? (Int64(link.settings[.rotationDays]) * 86400, "rotation_days")
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
            let claimAge = now - claim.time(now: now)
            if claimAge < claimLifetime && !claim.isLeftHere {
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

        var recorded = false
        do {
            try rotate(call, name: name, vault: vault, link: link, manager, reference, grace: grace, verifyLimit: verifyLimit, age: age) { version in
                recorded = true
                var done = claimed.annotations
                done[claimAnnotation] = Claim.rotated(to: version, at: Output.now())
                if (try? manager.annotate(reference, done, etag: claimed.etag)) == nil {
                    Console.warning("could not record version \(version) in the annotation \(claimAnnotation) of \(reference.resource)")
                }
            }
        } catch {
            // A failure after the new version was stored (its finish) leaves the claim recorded as done.
            if !recorded { release("a failed rotation") }
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
        var made: SecretBytes?
        let secret: SecretBytes
        let finishAfter: Int64
        do {
            secret = try GoogleRotation.received(plan, created, newName)
            made = secret
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
                // An add whose answer was lost may have been made: the newest version says.
                if added == nil, intent.adding == true, let made {
                    added = try versionHolding(made, newerThan: latest.version, manager, reference, after: error)
                }
                if let added {
                    guard withdraw(manager, reference, version: added, restoring: vault.key.secret) else {
                        throw GoogleError((error as? GoogleError)?.category ?? .network,
                                          "\((error as? GoogleError)?.message ?? "\(error)"); version \(added) of \(reference.resource) still holds the new key, which is kept (not deleted at Google) so that no machine is left with a deleted key",
                                          hint: "the next 'gemvault key rotate --finish \(name)' withdraws the version and deletes the key")
                    }
                }
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
            return try GoogleRotation.finish(call, report)
        }
        try waitOut(until: finishAfter, seconds: grace, name: name, version: added!)
        report.old_key_deleted = try complete(name: name, vault: try vault.reloaded(), link: link, manager, reference)
        try GoogleRotation.finish(call, report)
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

    /// The version newer than `known` that holds `key`, when the newest one does; nil when
    /// none does. When Secret Manager cannot say, `failure` (with what could not be told) is thrown.
    static func versionHolding(_ key: SecretBytes, newerThan known: UInt64, _ manager: SecretManagerClient, _ reference: SecretReference,
                               after failure: any Error) throws -> UInt64? {
        do {
            let latest = try manager.accessKey(reference)
            return latest.version > known && latest.value.isEqual(to: key) ? latest.version : nil
        } catch {
            throw GoogleError(error.category, "\((failure as? GoogleError)?.message ?? "\(failure)"); whether the new key was added to \(reference.resource) cannot be told (\(error.message)), so the key is kept",
                              hint: "the next 'gemvault key rotate --finish NAME' looks again and cleans up")
        }
    }

    /// Disables the version a failed or interrupted run added; when it is the newest, the value
    /// the vault keeps is added again first, since a disabled newest version makes `latest` fail
    /// for every machine instead of falling back. False when that could not be done.
    static func withdraw(_ manager: SecretManagerClient, _ reference: SecretReference, version: UInt64, restoring value: SecretBytes) -> Bool {
        do {
            let newest = try manager.versions(reference, enabledOnly: false).map(\.number).max() ?? version
            if newest == version {
                let restored = try manager.addVersion(reference, value: value)
                Console.note("added the key the vault keeps to \(reference.resource) again as version \(restored), so that 'latest' answers")
            }
            try manager.setVersion(reference, version, enabled: false)
            Console.note("disabled version \(version) of \(reference.resource), which held the new key")
            return true
        } catch {
            Console.warning("could not withdraw version \(version) of \(reference.resource) (\(error.message))")
            return false
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
            // Someone may have added the old key back meanwhile: what `latest` serves is never deleted.
            let latest = try manager.accessKey(reference)
            if let old = try? client.keyString(rotation.retireKey), latest.value.isEqual(to: old) {
                throw CommandFailure(.failure, "the old key \(rotation.retireKey) is what version \(latest.version) of \(reference.resource) holds now, so it is not deleted; the rotation's finish stays recorded",
                                     hint: "add the key you want the fleet to use as a new version; then 'gemvault key rotate --finish \(name)'")
            }
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
        _ = try vault.apply(.finishLinkedRotation(name: name, version: rotation.previousVersion))
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
            try GoogleRotation.finish(call, Report(name: name, action: "finished", old_key: rotation.retireKey.nonEmpty, new_key: vault.google?.resource,
                                    service_account: vault.google?.serviceAccount.nonEmpty, old_key_deleted: deleted,
                                    age_days: max(0, Output.now() - vault.key.updated) / 86400, secret: reference.resource,
                                    secret_version: current.version, previous_version: rotation.previousVersion))
        }
    }

    // MARK: key rotate --undo

    /// The previous key back for every machine: its version enabled to be read, added again as
    /// the newest (a disabled newest version would make `latest` fail, not fall back), and the
    /// newer version and key retired after the grace, as a rotation's are.
    static func undo(_ call: Invocation, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink) throws {
        let (reference, grace, manager, vault) = try prepare(call, name: name, vault: start, link: link)
        guard let current = vault.key.link, let rotation = current.rotation, let newer = vault.google,
              let earlier = vault.summary.earlier.first else {
            throw CommandFailure(.failure, "the current value of '\(name)' was not made by 'key rotate --create' through \(reference.resource); nothing to undo",
                                 hint: "add the version you want to the secret, and every machine takes it")
        }
        let previousKey = rotation.retireKey.nonEmpty ?? earlier.google?.resource
        try vault.journal.begin(.init(action: "--undo", made: nil, current: previousKey ?? newer.resource, retire: call.flag(.keepOld) ? nil : newer.resource,
                                      secret: reference.resource))
        // The previous key must work again before the fleet is sent to it.
        if let previousKey {
            let client = try link.client(project: GoogleKeyRecord(resource: previousKey, serviceAccount: "").project)
            if try client.get(previousKey).isDeleted {
                Console.note("undeleting \(previousKey) at Google")
                _ = try client.wait(try client.undelete(previousKey), what: "undeleting \(previousKey)")
            }
        }
        try manager.setVersion(reference, rotation.previousVersion, enabled: true)
        let previous = try manager.accessKey(SecretReference(parsing: "\(reference)/versions/\(rotation.previousVersion)")!)
        // Read, it goes back to disabled: the copy added below is the one every machine takes.
        try manager.setVersion(reference, rotation.previousVersion, enabled: false)
        guard earlier.masked == previous.value.masked else {
            throw CommandFailure(.failure, "the previous value in the vault's history of '\(name)' is not version \(rotation.previousVersion) of \(reference.resource); nothing was undone",
                                 hint: "add the version you want to the secret, and every machine takes it")
        }
        let restored = try manager.addVersion(reference, value: previous.value)
        Console.note("added the previous key to \(reference.resource) again as version \(restored); machines that fetch now take it")
        let finishAfter = Output.now() + Int64(grace.rounded(.up))
        let retirement = LinkedRotation(previousVersion: current.version, retireKey: call.flag(.keepOld) ? "" : newer.resource, finishAfter: finishAfter)
        _ = try vault.apply(.rollBackLinked(name: name, now: Output.now(),
                                            link: SecretLink(reference: current.reference, version: restored, fetched: Output.now(), rotation: retirement)))
        vault.journal.end()
        Console.note("key '\(name)' is back to its previous value (\(previousKey ?? "version \(rotation.previousVersion)")), as version \(restored)")
        ShareCommand.reshareAfterRotation(call.context.vault, name: name)
        var report = Report(name: name, action: "undone", old_key: newer.resource, new_key: previousKey, service_account: newer.serviceAccount.nonEmpty,
                            old_key_deleted: false, age_days: max(0, Output.now() - start.key.updated) / 86400, secret: reference.resource,
                            secret_version: restored, previous_version: current.version, finish_after: Output.isoDate(finishAfter))
        if call.flag(.noWait) {
            Console.note("the finish is recorded in the vault: the first 'gemvault key rotate \(name)' after \(Output.isoDate(finishAfter)) (or 'gemvault key rotate --finish \(name)') disables version \(current.version)"
                         + (call.flag(.keepOld) ? "" : " and deletes \(newer.resource) at Google"))
            return try GoogleRotation.finish(call, report)
        }
        try waitOut(until: finishAfter, seconds: grace, name: name, version: restored)
        report.old_key_deleted = try complete(name: name, vault: try vault.reloaded(), link: link, manager, reference)
        try GoogleRotation.finish(call, report)
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
        if intent.adding == true, let made = intent.made {
            // Killed while the version was being added: the newest version is the run's when it
            // holds the run's key. A key Google no longer has cannot be in use.
            let client = try link.client(project: GoogleKeyRecord(resource: made, serviceAccount: "").project)
            let madeString = Result { () throws(GoogleError) in try client.keyString(made) }
            if case .failure(let error) = madeString, error.status != 404, error.status != 403, error.status != 400 { throw error }
            if case .success(let key) = madeString {
                if vault.key.secret.isEqual(to: key) {
                    Console.warning("the vault took the key an interrupted rotation of '\(name)' added to \(reference.resource) before that rotation stored it; it is kept"
                                    + (intent.retire.map { ", and the key it replaced still works: delete it once every machine has the new version: \(GoogleRotation.byHand($0))" } ?? ""))
                    return vault.journal.end()
                }
                if found == nil { found = try versionHolding(key, newerThan: version, manager, reference, after: CommandFailure(.failure, "an interrupted rotation of '\(name)'")) }
            }
        }
        if let found {
            Console.note("the last rotation of '\(name)' was interrupted before it stored its new key; it had added version \(found) of \(reference.resource)")
            guard withdraw(manager, reference, version: found, restoring: vault.key.secret) else {
                throw CommandFailure(.network, "version \(found) of \(reference.resource), which an interrupted rotation added, could not be withdrawn; its key is kept",
                                     hint: "'gemvault key rotate --finish \(name)' tries again")
            }
        }
        try GoogleRotation.finishInterrupted(vault, link, name: name)
    }
}
