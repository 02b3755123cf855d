import VaultCore

extension ChatErrorKind {
    /// The one place a provider's failure kind becomes an outcome (and so an exit code).
    public var outcome: FailureOutcome {
        switch self {
        case .refused: .apiRefused
        case .network: .network
        case .interrupted: .interrupted
        }
    }
}

extension ChatFailure {
    public var report: FailureReport { FailureReport(kind.outcome, message, hint: hint) }
}

extension HistoryStore.Failure: ReportableError {
    public var report: FailureReport {
        switch self {
        case .notFound, .ambiguous: FailureReport(.failure, description, hint: "'gemvault history list' shows the ids")
        case .damaged: FailureReport(.damaged, description)
        case .broken(let path, let detail): FailureReport(.damaged, "\(path) is damaged: \(detail)", hint: "'gemvault history show' shows what came before it")
        default: FailureReport(.failure, description)
        }
    }
}
