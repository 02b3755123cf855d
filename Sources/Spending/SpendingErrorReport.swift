import VaultCore

/// A budget's refusal is the API refusing (6); prices that cannot be used are a usage mistake (64).
extension SpendingError: ReportableError {
    public var report: FailureReport {
        switch self {
        case .refused(let message, let hint): FailureReport(.apiRefused, message, hint: hint)
        case .unusablePrices(let message, let hint): FailureReport(.usage, message, hint: hint)
        }
    }
}
