import VaultCore

extension AgentError: ReportableError {
    /// A session unlocked by an older gemvault speaks an older protocol after an upgrade.
    static let olderAgentHint = "if gemvault was upgraded while this session was unlocked, run 'gemvault lock' and unlock again"

    public var report: FailureReport {
        switch self {
        case .busy:
            FailureReport(.failure, "the session is busy: its agent dropped this command's connection unanswered, also when asked again (many clients at once)",
                          hint: "try again in a moment; the session is still unlocked")
        case .notRunning: FailureReport(.failure, "no unlocked session for this vault", hint: "run 'gemvault unlock'")
        case .locked: FailureReport(.failure, "the session is locked", hint: "run 'gemvault unlock'")
        case .lockedWithPIN: FailureReport(.failure, "the session is locked; its PIN opens it again", hint: "run 'gemvault unlock' on a terminal to type the PIN")
        case .stale: FailureReport(.failure, "the vault kept changing while this command tried to save; nothing was changed", hint: "try again")
        case .rolledBack(let generation, let seen):
            FailureReport(.damaged, "the vault went back from generation \(seen) to \(generation): an old copy was restored over a newer one",
                          hint: "run the command with --accept-rollback and without the session ('gemvault lock') if you restored it on purpose")
        case .wrongKey:
            FailureReport(.wrongSecret, "the session's key no longer opens the vault (its passphrase was changed elsewhere)", hint: "run 'gemvault unlock' again")
        case .refused(let failure): FailureReport(.failure, failure.message, hint: failure.fix)
        case .untrusted(let detail): FailureReport(.failure, "refusing the agent's socket: \(detail)", hint: Self.olderAgentHint)
        case .failed(let detail): FailureReport(.failure, "the agent failed: \(detail)", hint: Self.olderAgentHint)
        case .noSuchKey(let name): VaultError.keyNotFound(name: name).report
        case .changeRefused(let refusal): refusal.report
        case .wrongPIN(let left) where left > 0:
            FailureReport(.wrongSecret, "wrong PIN (\(left) \(left == 1 ? "try" : "tries") left)", hint: "press Enter at the PIN prompt to use the passphrase instead")
        case .wrongPIN:
            FailureReport(.wrongSecret, "wrong PIN; the agent wiped the PIN after too many wrong tries", hint: "the passphrase opens the vault; 'gemvault pin set' sets a new PIN")
        }
    }
}
