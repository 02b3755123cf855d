import VaultCore

/// A share file age cannot read: damage is exit 4; a file for someone else, or of a kind
/// gemvault does not read, is 1.
extension AgeError: ReportableError {
    public var report: FailureReport {
        switch kind {
        case .noMatch:
            FailureReport(.failure, "the file is not encrypted to this vault's identity (or to the -i identities given); nothing was stored",
                          hint: "ask the sender to share to the recipient 'gemvault identity' prints")
        case .unsupported: FailureReport(.failure, "\(detail); nothing was stored")
        case .wrongPassphrase: FailureReport(.wrongSecret, "\(detail); nothing was stored")
        // Neutralised where every error is printed: a plugin's words are its own.
        case .holderUnavailable: FailureReport(.failure, "\(detail); nothing was stored")
        case .plugin: FailureReport(.failure, detail, hint: "Docs/sharing.md says which plugins gemvault runs and how long it waits for them")
        default: FailureReport(.damaged, "the share file is damaged (\(kind.rawValue): \(detail)); nothing was stored")
        }
    }
}
