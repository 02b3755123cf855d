import GeminiClient
import GoogleAuth
import GoogleHTTP
import GoogleKeys
import Settings
import SystemIO
import TerminalIO
import VaultAccess
import VaultCore

/// `key rotate --undo`, `key rm --revoke` and `key which --google`: the commands beside a rotation.
extension GoogleRotation {
    // MARK: key rotate --undo

    static func undo(_ call: Invocation, name: String, transport: any HTTPTransport = CurlTransport()) throws {
        try withVault(call.context, name: name) { vault in
            let age = max(0, Output.now() - vault.key.updated) / 86400
            let settings = try settings(call, vault: vault.settings)
            let link = GoogleLink(call, settings, transport: transport)
            if vault.key.link != nil { return try FleetRotation.undo(call, name: name, vault: vault, link: link) }
            if call.flag(.grace) || call.flag(.noWait) {
                throw UsageError("\(call.flag(.grace) ? "--grace" : "--no-wait") goes with a key linked to Secret Manager ('\(name)' is not)", command: call.command)
            }
            try finishInterrupted(vault, link, name: name)
            guard let newer = vault.google else {
                throw CommandFailure(.failure, "the current value of '\(name)' was not made by 'key rotate --create'; nothing to undo at Google",
                                     hint: "'gemvault key rollback \(name)' makes the previous value current in the vault only")
            }
            guard let previous = vault.summary.earlier.first?.google else {
                throw CommandFailure(.failure, "the previous value of '\(name)' has no key at Google that gemvault knows",
                                     hint: "'gemvault key rollback \(name)' makes it current in the vault only")
            }
            let client = try link.client(project: previous.project)
            let old = try client.get(previous.resource)
            if old.isDeleted {
                Console.note("undeleting \(previous.resource) at Google")
                _ = try client.wait(try client.undelete(previous.resource), what: "undeleting \(previous.resource)")
            }
            try vault.journal.begin(.init(action: "--undo", made: nil, current: previous.resource, retire: call.flag(.keepOld) ? nil : newer.resource))
            _ = try vault.apply(.rollBack(name: name, now: Output.now()))
            Console.note("key '\(name)' is back to its previous value (\(previous.resource))")
            ShareCommand.reshareAfterRotation(call.context.vault, name: name)
            var deleted = false
            if !call.flag(.keepOld) {
                do {
                    if try deleteAtGoogle(client, newer.resource) == .deleted {
                        Console.note("deleted the newer key \(newer.resource) at Google; Google may still accept it for up to about 25 minutes")
                    }
                    deleted = true
                } catch let error as GoogleError {
                    throw GoogleError(error.category, "the previous key is current again, but deleting the newer key \(newer.resource) failed: \(error.message)",
                                      hint: "the next 'gemvault key rotate --create \(name)' deletes it, or delete it by hand: \(byHand(newer.resource))",
                                      status: error.status, reason: error.reason)
                }
            }
            vault.journal.end()
            try finish(call, Report(name: name, action: "undone", old_key: newer.resource, new_key: previous.resource,
                                    service_account: previous.serviceAccount.isEmpty ? nil : previous.serviceAccount, old_key_deleted: deleted, age_days: age))
        }
    }

    // MARK: key rm --revoke

    static func revoke(_ call: Invocation, name: String, transport: any HTTPTransport = CurlTransport()) throws {
        try withVault(call.context, name: name) { vault in
            let link = GoogleLink(call, try settings(call, vault: vault.settings), transport: transport)
            try finishInterrupted(vault, link, name: name)
            var client = try link.client(project: vault.google?.project)
            var resources = [vault.google?.resource].compactMap { $0 }
            if resources.isEmpty {
                Console.note("looking the key of '\(name)' up at Google (keys:lookupKey)")
                resources.append(try client.lookup(vault.key.secret))
                // The same token, billed to the project the key turned out to be in.
                client = try link.client(project: GoogleKeyRecord(resource: resources[0], serviceAccount: "").project)
            }
            resources += vault.summary.earlier.compactMap { $0.google?.resource }
            for resource in resources {
                switch try deleteAtGoogle(client, resource) {
                case .deleted: Console.note("deleted \(resource) at Google (Google may still accept it for up to about 25 minutes; it can be undeleted for 30 days)")
                case .alreadyDeleted: Console.note("\(resource) was already deleted at Google")
                case .gone: Console.note("\(resource) is gone from Google (deleted more than 30 days ago)")
                }
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
            ?? (call.context.canOpenVault ? try call.context.vault.settings() : nil) {
            layers.vaultSettings = vaultSettings
            layers.vaultPath = call.context.vaultPath
        }
        let settings = try Settings.resolve(layers)
        let source = try credentials(call, settings).source()
        var text = "google credential: \(source.label)\nkind:              \(source.kind)\napi keys endpoint: \(settings[.apikeysEndpoint])\n"
        if source.isUserCredential {
            text += "quota project:     \(settings[.quotaProject] ?? "the credential's quota_project_id, else the key's project")\n"
        }
        text += "key age:           Google's createTime (a key whose Google name the vault lacks is looked up first); the date set in the vault only when Google cannot find the key\n"
        try Console.out(text)
    }
}
