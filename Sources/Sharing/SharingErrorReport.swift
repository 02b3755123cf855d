import AgeFormat
import VaultCore

extension SharingError: ReportableError {
    public var report: FailureReport {
        switch self {
        case .badRecipient(let what):
            FailureReport(.usage, what, hint: "a recipient is an age1… recipient ('gemvault identity' prints this vault's), an ssh-ed25519 public key line, or a .pub file with one")
        case .malformed(let detail): FailureReport(.damaged, "the share is not what gemvault writes: \(detail); nothing was stored")
        case .age(let age): age.report
        case .signing: FailureReport(.failure, "the vault's sharing identity could not sign the share")
        case .notPostQuantum(let classic):
            FailureReport(.usage, "--pq-only: \(classic.joined(separator: ", ")) \(classic.count == 1 ? "is a classic recipient" : "are classic recipients"), not post-quantum; nothing was written",
                          hint: "ask for their age1pq1… recipient ('gemvault identity' or 'age-keygen -pq' prints one), or share without --pq-only")
        }
    }
}

/// A share its checks refuse is treated as a damaged one (exit 4): nothing of it is stored.
extension ShareRefusal: ReportableError {
    public var report: FailureReport { FailureReport(.damaged, message, hint: hint) }
}
