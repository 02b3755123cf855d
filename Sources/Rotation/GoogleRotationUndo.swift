import GoogleAuth
import GoogleHTTP
import GoogleKeys
import Settings
import SystemIO
import VaultAccess
import VaultCore

/// `key rotate --undo` and `key rm --revoke`: the commands beside a rotation.
extension GoogleRotation {
    // MARK: key rotate --undo

    public static func undo(_ call: RotationRequest, name: String) throws {
        try withVault(call, name: name) { vault in
            let age = max(0, Clock.now() - vault.key.updated) / 86400
            let settings = try settings(call, vault: vault.settings)
            let link = GoogleLink(call, settings, transport: call.transport)
            if vault.key.link != nil { return try FleetRotation.undo(call, name: name, vault: vault, link: link) }
            if call.flag(.grace) || call.flag(.noWait) {
                throw RotationError.usage("\(call.flag(.grace) ? "--grace" : "--no-wait") goes with a key linked to Secret Manager ('\(name)' is not)")
            }
            try finishInterrupted(vault, link, name: name)
            guard let newer = vault.google else {
                throw RotationError.failed("the current value of '\(name)' was not made by 'key rotate --create'; nothing to undo at Google",
                                     hint: "'gemvault key rollback \(name)' makes the previous value current in the vault only")
            }
            guard let previous = vault.summary.earlier.first?.google else {
                throw RotationError.failed("the previous value of '\(name)' has no key at Google that gemvault knows",
                                     hint: "'gemvault key rollback \(name)' makes it current in the vault only")
            }
            let client = try link.client(project: previous.project)
            let old = try client.get(previous.resource)
            if old.isDeleted {
                call.progress.note("undeleting \(previous.resource) at Google")
                _ = try client.wait(try client.undelete(previous.resource), what: "undeleting \(previous.resource)")
            }
            try vault.journal.begin(.init(action: .undo, made: nil, current: previous.resource, retire: call.flag(.keepOld) ? nil : newer.resource))
            _ = try vault.apply(.rollBack(name: name, now: Clock.now()))
            call.progress.note("key '\(name)' is back to its previous value (\(previous.resource))")
            call.progress.keyChanged(name)
            var deleted = false
            if !call.flag(.keepOld) {
                do {
                    if try deleteAtGoogle(client, newer.resource) == .deleted {
                        call.progress.note("deleted the newer key \(newer.resource) at Google; Google may still accept it for up to about 25 minutes")
                    }
                    deleted = true
                } catch let error as GoogleError {
                    throw GoogleError(error.category, "the previous key is current again, but deleting the newer key \(newer.resource) failed: \(error.message)",
                                      hint: "the next 'gemvault key rotate --create \(name)' deletes it, or delete it by hand: \(byHand(newer.resource))",
                                      status: error.status, reason: error.reason)
                }
            }
            vault.journal.end()
            try call.progress.finished(Report(name: name, action: "undone", old_key: newer.resource, new_key: previous.resource,
                                    service_account: previous.serviceAccount.isEmpty ? nil : previous.serviceAccount, old_key_deleted: deleted, age_days: age))
        }
    }

    // MARK: key rm --revoke

    public static func revoke(_ call: RotationRequest, name: String) throws {
        try withVault(call, name: name) { vault in
            let link = GoogleLink(call, try settings(call, vault: vault.settings), transport: call.transport)
            try finishInterrupted(vault, link, name: name)
            var client = try link.client(project: vault.google?.project)
            var resources = [vault.google?.resource].compactMap { $0 }
            if resources.isEmpty {
                call.progress.note("looking the key of '\(name)' up at Google (keys:lookupKey)")
                resources.append(try client.lookup(vault.key.secret))
                // The same token, billed to the project the key turned out to be in.
                client = try link.client(project: GoogleKeyRecord(resource: resources[0], serviceAccount: "").project)
            }
            resources += vault.summary.earlier.compactMap { $0.google?.resource }
            for resource in resources {
                switch try deleteAtGoogle(client, resource) {
                case .deleted: call.progress.note("deleted \(resource) at Google (Google may still accept it for up to about 25 minutes; it can be undeleted for 30 days)")
                case .alreadyDeleted: call.progress.note("\(resource) was already deleted at Google")
                case .gone: call.progress.note("\(resource) is gone from Google (deleted more than 30 days ago)")
                }
            }
            _ = try vault.apply(.removeKey(name: name))
            call.progress.note("removed key '\(name)'")
        }
    }
}
