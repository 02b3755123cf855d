import VaultCore

/// Google refusing (4xx, an operation ended in an error) is 6 like Gemini refusing; no answer
/// after the retries is 7; no usable credential is 1, with what a token_command said.
extension GoogleError: ReportableError {
    public var report: FailureReport {
        switch category {
        case .refused: FailureReport(.apiRefused, message, hint: hint)
        case .network: FailureReport(.network, message, hint: hint)
        case .badData: FailureReport(.damaged, message, hint: hint)
        case .credentials: FailureReport(.failure, message + (commandStderr.isEmpty ? "" : "; its stderr: " + commandStderr), hint: hint)
        }
    }
}
