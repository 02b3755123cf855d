import SystemIO

extension VaultError: ReportableError {
    public var report: FailureReport {
        switch self {
        case .notFound(let path):
            return FailureReport(.failure, "no vault at \(path)", hint: "create one with 'gemvault init'")
        case .alreadyExists(let path):
            return FailureReport(.failure, "a vault already exists at \(path)", hint: "use 'gemvault init --force' to replace it (the old file is kept beside it as \(path).replaced-TIME)")
        case .refused(let failure):
            return FailureReport(.failure, failure.message, hint: failure.fix)
        case .wrongPassphrase:
            return FailureReport(.wrongSecret, "wrong passphrase", hint: "if it is lost, run 'gemvault recover' with the recovery code")
        case .wrongRecoveryCode:
            return FailureReport(.wrongSecret, "wrong recovery code", hint: "the code has 32 characters in groups of four, as 'gemvault init' printed it")
        case .damaged, .slotsDamaged, .tampered, .unsupportedVersion, .unsupportedPayloadVersion, .payloadDamaged,
             .kdfParametersRejected, .rolledBack, .anotherVault:
            return damageReport
        case .lockTimedOut(let path, let seconds, let holder):
            return FailureReport(.failure, "another gemvault is writing the vault: \(path) stayed locked for \(Int(seconds)) s" + (holder.map { " (held by \($0))" } ?? ""),
                hint: "try again when it is done; GEMVAULT_LOCK_TIMEOUT sets how long to wait")
        case .writeFailed(let path, let reason):
            return FailureReport(.failure, "could not save the vault \(path): \(reason); the vault is unchanged")
        case .system(let error):
            return FailureReport(.failure, "\(error.operation) \(error.path): \(error.reason)")
        case .cryptoFailure(let detail):
            return FailureReport(.failure, "libsodium failed (\(detail)); the machine may be out of memory")
        case .slotRefused(let why):
            return FailureReport(.failure, why, hint: "'gemvault slot list' shows the vault's slots")
        case .keyNotFound(let name):
            return FailureReport(.failure, "no key named '\(name)' in the vault", hint: "list the keys with 'gemvault key list'")
        case .invalidName(let name):
            return FailureReport(.usage, "'\(name)' is not a valid name: use letters, digits, '.', '-' and '_', at most 128 bytes")
        case .valueTooLarge(let what):
            return FailureReport(.usage, "the value for \(what) is too large")
        case .noEarlierValue(let name):
            return FailureReport(.failure, "key '\(name)' has no earlier value to roll back to", hint: "'gemvault key history \(name)' lists what the vault keeps")
        case .linkedKey(let name, let reference):
            // A linked key changes in Secret Manager: changed here, the next fetch would undo it.
            return FailureReport(.failure, "'\(name)' is linked to Secret Manager (\(reference)): add a version with the new key there, and every machine takes it within secret_cache_ttl; nothing changed",
                hint: "gcloud secrets versions add SECRET --data-file=-  (or 'gemvault key set \(name)' to unlink the key and keep its value here)")
        case .notLinked(let name):
            return FailureReport(.failure, "key '\(name)' is not linked to the secret this rotation went through (it was set or linked again meanwhile); the rotation's change was not stored",
                hint: "'gemvault key which --key \(name)' shows where its value comes from now")
        case .noBackup(let path):
            return FailureReport(.failure, "there is no backup at \(path)")
        case .secretNotFound(let name):
            return FailureReport(.failure, "no secret named '\(name)' in the vault", hint: "list the secrets with 'gemvault secret list'")
        case .secretExists(let name):
            return FailureReport(.failure, "a secret named '\(name)' is already in the vault; nothing was changed", hint: "remove it first with 'gemvault secret rm \(name)', or choose another name")
        case .noEarlierSecretValue(let name):
            return FailureReport(.failure, "secret '\(name)' has no earlier value to roll back to", hint: "'gemvault secret history \(name)' lists what the vault keeps")
        case .invalidSecret(let name, let reason):
            return FailureReport(.usage, "the value for secret '\(name)' was refused: \(reason); nothing was stored",
                hint: "a secret is printable text of 1 to \(ToolSecret.maxBytes) bytes; --multiline allows line breaks (a PEM block)")
        }
    }

    /// A vault that is damaged, of an unknown version, or not the one seen there before.
    private var damageReport: FailureReport {
        switch self {
        case .damaged(let path, let detail):
            return FailureReport(.damaged, "the vault \(path) is damaged: \(detail)", hint: restoreHint(path))
        case .slotsDamaged(let path, let detail):
            return FailureReport(.damaged, "the vault \(path) has damaged key slots: \(detail)", hint: restoreHint(path))
        case .tampered(let path):
            return FailureReport(.damaged, "the vault \(path) failed authentication: it was modified after it was written", hint: restoreHint(path))
        case .unsupportedVersion(let path, let version):
            return FailureReport(.damaged, "the vault \(path) has file format version \(version), which this gemvault (reads 1 to \(Int(VaultFile.currentVersion))) does not know",
                hint: "upgrade gemvault if a newer one wrote it; otherwise the file is damaged")
        case .unsupportedPayloadVersion(let path, let version):
            return FailureReport(.damaged, "the vault \(path) opened, but its encrypted contents have version \(version), which this gemvault does not know",
                hint: "upgrade gemvault if a newer one wrote it")
        case .payloadDamaged(let path, let detail):
            return FailureReport(.damaged, "the vault \(path) opened, but its encrypted contents are not what gemvault writes: \(detail)", hint: restoreHint(path))
        case .kdfParametersRejected(let path, let detail):
            return FailureReport(.damaged, "the vault \(path) was refused before asking for the passphrase: \(detail)",
                hint: "a vault written by gemvault never has such parameters; " + (restoreHint(path) ?? "restore a trusted copy"))
        case .rolledBack(let path, let generation, let seen):
            return FailureReport(.damaged, "the vault \(path) is generation \(generation), but generation \(seen) of it was seen before: an old copy was restored over a newer one",
                hint: "if you restored it on purpose, run the command again with --accept-rollback")
        case .anotherVault(let path, let found, let seen):
            return FailureReport(.damaged, "the vault \(path) is not the vault seen there before (its id is \(found.prefix(8))…, the one seen there was \(seen.prefix(8))…): another vault was put in its place",
                hint: "if you put it there on purpose, run the command once with --accept-rollback")
        default:
            return FailureReport(.failure, "\(self)")
        }
    }

    /// Names the command that restores the backup, only when there is one to restore.
    private func restoreHint(_ path: String) -> String? {
        guard !path.hasSuffix(".bak"), FileStatus.of(link: path + ".bak") != nil else { return nil }
        return "the previous version is in \(path).bak: 'gemvault restore-backup' checks it and puts it back"
    }
}
