import GoogleAuth
import GoogleHTTP
import GoogleKeys
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// What follows a linked key's new version: the grace and its finish, `--finish`, `--undo`,
/// and the clean-up of a run a kill interrupted (Docs/fleet.md).
extension FleetRotation {
    /// Waits out the grace with a progress line; stopping it leaves the finish recorded.
    static func waitOut(until deadline: Int64, seconds: Double, name: String, version: UInt64, progress: any RotationProgress) throws {
        guard seconds > 0 else { return }
        progress.note("waiting \(DurationText.text(seconds)) (until \(Clock.localDate(deadline))) so that every machine takes version \(version) while the old key still works; "
                     + "stopping now leaves the finish to the next 'gemvault key rotate \(name)'")
        progress.wait(seconds, showing: "grace period for the fleet, until \(Clock.localDate(deadline))")
    }

    /// The version newer than `known` that holds `key`, when the newest one does; nil when
    /// none does. When Secret Manager cannot say, `failure` (with what could not be told) is thrown.
    static func versionHolding(_ key: SecretBytes, newerThan known: UInt64, _ manager: SecretManagerClient, _ reference: SecretReference,
                               name: String, after failure: any Error) throws -> UInt64? {
        do {
            let latest = try manager.accessKey(reference)
            return latest.version > known && latest.value.isEqual(to: key) ? latest.version : nil
        } catch {
            throw GoogleError(error.category, "\((failure as? GoogleError)?.message ?? "\(failure)"); whether the new key was added to \(reference.resource) cannot be told (\(error.message)), so the key is kept",
                              hint: "the next 'gemvault key rotate --finish \(name)' looks again and cleans up")
        }
    }

    /// Disables the version a failed or interrupted run added; when it is the newest, the value
    /// the vault keeps is added again first, since a disabled newest version makes `latest` fail
    /// for every machine instead of falling back. False when that could not be done.
    static func withdraw(_ manager: SecretManagerClient, _ reference: SecretReference, version: UInt64, restoring value: SecretBytes,
                         progress: any RotationProgress) -> Bool {
        do {
            let newest = try manager.versions(reference, enabledOnly: false).map(\.number).max() ?? version
            if newest == version {
                let restored = try manager.addVersion(reference, value: value)
                progress.note("added the key the vault keeps to \(reference.resource) again as version \(restored), so that 'latest' answers")
            }
            try manager.setVersion(reference, version, enabled: false)
            progress.note("disabled version \(version) of \(reference.resource), which held the new key")
            return true
        } catch {
            progress.warning("could not withdraw version \(version) of \(reference.resource) (\(error.message))")
            return false
        }
    }

    // MARK: The finish

    /// Disables every enabled version older than `newest` (but `done`) that holds `retired`: a
    /// withdrawal adds the vault's key again as a version of its own, so the key a rotation
    /// retires can sit in more than one, and each would keep serving it. A version that cannot
    /// be read is never passed over in silence: one no longer enabled is done with, one that
    /// holds no key is named, and any other failure stops the finish, which tries again.
    static func disableCopies(of retired: SecretBytes, olderThan newest: UInt64, besides done: UInt64,
                              _ manager: SecretManagerClient, _ reference: SecretReference, progress: any RotationProgress) throws(GoogleError) {
        for version in try manager.versions(reference, enabledOnly: true) where version.number < newest && version.number != done {
            let copy: SecretBytes
            do throws(GoogleError) {
                copy = try manager.accessKey(reference.version(version.number)).value
            } catch where isNotEnabled(error) {
                continue
            } catch where error.category == .badData {
                progress.warning("version \(version.number) of \(reference.resource) could not be read as a key (\(error.message)); it is left enabled")
                continue
            } catch {
                throw GoogleError(error.category, "version \(version.number) could not be read to tell whether it holds the old key: \(error.message)", status: error.status, reason: error.reason)
            }
            guard copy.isEqual(to: retired) else { continue }
            try manager.setVersion(reference, version.number, enabled: false)
            progress.note("disabled version \(version.number) of \(reference.resource), which held the old key too")
        }
    }

    /// A version disabled or destroyed (400 FAILED_PRECONDITION), or gone (404): it serves nothing.
    static func isNotEnabled(_ error: GoogleError) -> Bool {
        (error.status == 400 && error.isStatus(.failedPrecondition)) || error.status == 404
    }

    /// The key a rotation retires, to find its other copies: the previous version's value or,
    /// once that version is disabled (a finish that failed after it), the old key at Google.
    /// Nil, with a warning, when neither can be read; a failure to reach Google stops the finish.
    static func retiredValue(of rotation: LinkedRotation, name: String, link: GoogleRotation.GoogleLink,
                             _ manager: SecretManagerClient, _ reference: SecretReference) throws -> SecretBytes? {
        do throws(GoogleError) {
            return try manager.accessKey(reference.version(rotation.previousVersion)).value
        } catch where isNotEnabled(error) || error.category == .badData {
            if !rotation.retireKey.isEmpty {
                let client = try link.client(project: GoogleKeyRecord(resource: rotation.retireKey, serviceAccount: "").project)
                if let old = try? client.keyString(rotation.retireKey) { return old }
            }
            link.progress.warning("version \(rotation.previousVersion) of \(reference.resource) cannot be read (\(error.message)), so other enabled versions holding the old key cannot be found; check them: gcloud secrets versions list \(reference.secret) --project \(reference.project)")
            return nil
        } catch {
            throw GoogleError(error.category, "the rotation of '\(name)' is stored, but reading version \(rotation.previousVersion) of \(reference.resource) failed: \(error.message)",
                              hint: "'gemvault key rotate --finish \(name)' tries again", status: error.status, reason: error.reason)
        }
    }

    /// Disables the previous version and deletes the old key, then records it; whether the old
    /// key was deleted (or already gone).
    @discardableResult
    static func complete(name: String, vault: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink,
                         _ manager: SecretManagerClient, _ reference: SecretReference) throws -> Bool {
        guard let current = vault.key.link, let rotation = current.rotation, rotation.isPending else { return false }
        guard rotation.previousVersion < current.version else {
            throw RotationError.failed("the rotation of '\(name)' would disable version \(rotation.previousVersion), which is not older than version \(current.version) the vault holds; nothing was disabled")
        }
        // Read before it is disabled: other versions holding the same key are disabled with it.
        let retired = try retiredValue(of: rotation, name: name, link: link, manager, reference)
        let disabling = Result { () throws(GoogleError) in try manager.setVersion(reference, rotation.previousVersion, enabled: false) }
        switch disabling {
        case .success: vault.progress.note("disabled version \(rotation.previousVersion) of \(reference.resource), which held the old key")
        case .failure(let error) where error.status == 400 && error.isStatus(.failedPrecondition):
            vault.progress.note("version \(rotation.previousVersion) of \(reference.resource) is already destroyed")
        case .failure(let error) where error.status == 404:
            vault.progress.note("version \(rotation.previousVersion) of \(reference.resource) is gone")
        case .failure(let error):
            throw GoogleError(error.category, "the rotation of '\(name)' is stored, but disabling version \(rotation.previousVersion) of \(reference.resource) failed: \(error.message)",
                              hint: "'gemvault key rotate --finish \(name)' tries again", status: error.status, reason: error.reason)
        }
        if let retired {
            do {
                try disableCopies(of: retired, olderThan: current.version, besides: rotation.previousVersion, manager, reference, progress: vault.progress)
            } catch {
                throw GoogleError(error.category, "the rotation of '\(name)' is stored, but disabling the other versions of \(reference.resource) that hold the old key failed: \(error.message)",
                                  hint: "'gemvault key rotate --finish \(name)' tries again", status: error.status, reason: error.reason)
            }
        }
        var deleted = false
        if !rotation.retireKey.isEmpty {
            let client = try link.client(project: GoogleKeyRecord(resource: rotation.retireKey, serviceAccount: "").project)
            // Someone may have added the old key back meanwhile: what `latest` serves is never deleted.
            let latest = try manager.accessKey(reference)
            if let old = try? client.keyString(rotation.retireKey), latest.value.isEqual(to: old) {
                throw RotationError.failed("the old key \(rotation.retireKey) is what version \(latest.version) of \(reference.resource) holds now, so it is not deleted; the rotation's finish stays recorded",
                                     hint: "add the key you want the fleet to use as a new version; then 'gemvault key rotate --finish \(name)'")
            }
            do {
                switch try GoogleRotation.deleteAtGoogle(client, rotation.retireKey) {
                case .deleted: vault.progress.note("deleted the old key \(rotation.retireKey) at Google ('gemvault key rotate --undo \(name)' can bring it back for 30 days)")
                case .alreadyDeleted, .gone: vault.progress.note("the old key \(rotation.retireKey) was already deleted at Google")
                }
                deleted = true
            } catch let error as GoogleError {
                throw GoogleError(error.category, "version \(rotation.previousVersion) is disabled, but deleting the old key \(rotation.retireKey) failed: \(error.message)",
                                  hint: "'gemvault key rotate --finish \(name)' tries again, or delete it by hand: \(GoogleRotation.byHand(rotation.retireKey))",
                                  status: error.status, reason: error.reason)
            }
        }
        _ = try vault.apply(.finishLinkedRotation(name: name, version: rotation.previousVersion))
        vault.progress.note("finished the rotation of '\(name)' to version \(current.version)")
        return deleted
    }

    /// `key rotate --finish [NAME]`.
    public static func finishCommand(_ call: RotationRequest, name: String) throws {
        try GoogleRotation.withVault(call, name: name) { start in
            guard start.key.link != nil else {
                throw RotationError.failed("'\(name)' is not linked to Secret Manager: its rotations finish as they run",
                                     hint: "--finish is for a key rotated through its secret with --no-wait (Docs/fleet.md)")
            }
            let link = GoogleRotation.GoogleLink(call, try GoogleRotation.settings(call, vault: start.settings), transport: call.transport)
            let (reference, _, manager, vault) = try prepare(call, name: name, vault: start, link: link)
            guard let current = vault.key.link, let rotation = current.rotation, rotation.isPending else {
                call.progress.note("no rotation of '\(name)' waits for its finish")
                return
            }
            let left = rotation.finishAfter - Clock.now()
            if left > 0 {
                if call.flag(.noWait) {
                    call.progress.note("the grace period of '\(name)' runs until \(Clock.localDate(rotation.finishAfter)) (\(Clock.elapsedText(left)) more): nothing done")
                    return
                }
                try waitOut(until: rotation.finishAfter, seconds: Double(left), name: name, version: current.version, progress: call.progress)
            }
            let deleted = try complete(name: name, vault: vault, link: link, manager, reference)
            try call.progress.finished(Report(name: name, action: "finished", old_key: rotation.retireKey.nonEmpty, new_key: vault.google?.resource,
                                    service_account: vault.google?.serviceAccount.nonEmpty, old_key_deleted: deleted,
                                    age_days: max(0, Clock.now() - vault.key.updated) / 86400, secret: reference.resource,
                                    secret_version: current.version, previous_version: rotation.previousVersion))
        }
    }

    // MARK: key rotate --undo

    /// The previous key back for every machine: its version enabled to be read, added again as
    /// the newest (a disabled newest version would make `latest` fail, not fall back), and the
    /// newer version and key retired after the grace, as a rotation's are.
    static func undo(_ call: RotationRequest, name: String, vault start: GoogleRotation.VaultView, link: GoogleRotation.GoogleLink) throws {
        let (reference, grace, manager, vault) = try prepare(call, name: name, vault: start, link: link)
        guard let current = vault.key.link, let rotation = current.rotation, let newer = vault.google,
              let earlier = vault.summary.earlier.first else {
            throw RotationError.failed("the current value of '\(name)' was not made by 'key rotate --create' through \(reference.resource); nothing to undo",
                                 hint: "add the version you want to the secret, and every machine takes it")
        }
        let previousKey = rotation.retireKey.nonEmpty ?? earlier.google?.resource
        try vault.journal.begin(.init(action: .undo, made: nil, current: previousKey ?? newer.resource, retire: call.flag(.keepOld) ? nil : newer.resource,
                                      secret: reference.resource))
        // The previous key must work again before the fleet is sent to it.
        if let previousKey {
            let client = try link.client(project: GoogleKeyRecord(resource: previousKey, serviceAccount: "").project)
            if try client.get(previousKey).isDeleted {
                call.progress.note("undeleting \(previousKey) at Google")
                _ = try client.wait(try client.undelete(previousKey), what: "undeleting \(previousKey)")
            }
        }
        try manager.setVersion(reference, rotation.previousVersion, enabled: true)
        let previous = try manager.accessKey(reference.version(rotation.previousVersion))
        // Read, it goes back to disabled: the copy added below is the one every machine takes.
        try manager.setVersion(reference, rotation.previousVersion, enabled: false)
        guard earlier.masked == previous.value.masked else {
            throw RotationError.failed("the previous value in the vault's history of '\(name)' is not version \(rotation.previousVersion) of \(reference.resource); nothing was undone",
                                 hint: "add the version you want to the secret, and every machine takes it")
        }
        let restored = try manager.addVersion(reference, value: previous.value)
        call.progress.note("added the previous key to \(reference.resource) again as version \(restored); machines that fetch now take it")
        let finishAfter = Clock.now() + Int64(grace.rounded(.up))
        let retirement = LinkedRotation(previousVersion: current.version, retireKey: call.flag(.keepOld) ? "" : newer.resource, finishAfter: finishAfter)
        _ = try vault.apply(.rollBackLinked(name: name, now: Clock.now(),
                                            link: SecretLink(reference: current.reference, version: restored, fetched: Clock.now(), rotation: retirement)))
        vault.journal.end()
        call.progress.note("key '\(name)' is back to its previous value (\(previousKey ?? "version \(rotation.previousVersion)")), as version \(restored)")
        call.progress.keyChanged(name)
        var report = Report(name: name, action: "undone", old_key: newer.resource, new_key: previousKey, service_account: newer.serviceAccount.nonEmpty,
                            old_key_deleted: false, age_days: max(0, Clock.now() - start.key.updated) / 86400, secret: reference.resource,
                            secret_version: restored, previous_version: current.version, finish_after: Clock.isoDate(finishAfter))
        if call.flag(.noWait) {
            call.progress.note("the finish is recorded in the vault: the first 'gemvault key rotate \(name)' after \(Clock.localDate(finishAfter)) (or 'gemvault key rotate --finish \(name)') disables version \(current.version)"
                         + (call.flag(.keepOld) ? "" : " and deletes \(newer.resource) at Google"))
            return try call.progress.finished(report)
        }
        try waitOut(until: finishAfter, seconds: grace, name: name, version: restored, progress: call.progress)
        report.old_key_deleted = try complete(name: name, vault: try vault.reloaded(), link: link, manager, reference)
        try call.progress.finished(report)
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
        if intent.action == .undo {
            if !written {
                vault.progress.warning("the last --undo of '\(name)' was interrupted before the vault was written; 'gemvault key rotate --undo \(name)' completes it")
            } else if let retire = intent.retire {
                vault.progress.warning("the last --undo of '\(name)' was interrupted after the vault was written; the newer key \(retire) may still work: \(GoogleRotation.byHand(retire))")
            }
            return vault.journal.end()
        }
        if written {
            vault.progress.note("the last rotation of '\(name)' was interrupted after the vault stored version \(version); its finish is recorded"
                         + (vault.key.link?.rotation.map { " for after \(Clock.localDate($0.finishAfter))" } ?? ""))
            return vault.journal.end()
        }
        if let added = intent.added, version >= added {
            vault.progress.warning("the vault took version \(added) of \(reference.resource), which an interrupted rotation added, before that rotation stored it; it is kept, and the key it replaced still works"
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
                    vault.progress.warning("the vault took the key an interrupted rotation of '\(name)' added to \(reference.resource) before that rotation stored it; it is kept"
                                    + (intent.retire.map { ", and the key it replaced still works: delete it once every machine has the new version: \(GoogleRotation.byHand($0))" } ?? ""))
                    return vault.journal.end()
                }
                if found == nil { found = try versionHolding(key, newerThan: version, manager, reference, name: name, after: RotationError.failed("an interrupted rotation of '\(name)'")) }
            }
        }
        if let found {
            vault.progress.note("the last rotation of '\(name)' was interrupted before it stored its new key; it had added version \(found) of \(reference.resource)")
            guard withdraw(manager, reference, version: found, restoring: vault.key.secret, progress: vault.progress) else {
                throw RotationError.unreachable("version \(found) of \(reference.resource), which an interrupted rotation added, could not be withdrawn; its key is kept",
                                     hint: "'gemvault key rotate --finish \(name)' tries again")
            }
        }
        try GoogleRotation.finishInterrupted(vault, link, name: name)
    }
}
