import VaultCore

extension MCPWrapError: ReportableError {
    public var report: FailureReport {
        switch self {
        case .changedSinceRead(let path):
            FailureReport(.failure, "\(path) changed while gemvault read it; it was not written (the secrets are in the vault)", hint: "run the command again")
        case .writeFailed(let path, let reason): FailureReport(.failure, "could not write \(path): \(reason); it is unchanged")
        case .noBackup(let path): FailureReport(.failure, "no file replaced by 'gemvault mcp wrap' is kept for \(path)")
        case .editedSinceWrap(let path):
            FailureReport(.failure, "\(path) was edited since 'gemvault mcp wrap' wrote it; putting the old file back would lose those edits",
                          hint: "run 'gemvault mcp unwrap --config \(path) --force' to put it back anyway")
        }
    }
}

/// `exec`'s --secret, --secret-file or --env refused: a usage mistake (64); the CLI adds `exec`'s usage line.
extension ExecBindingError: ReportableError {
    public var report: FailureReport {
        switch self {
        case .notABinding(let option, let text): FailureReport(.usage, "\(option) takes VAR=NAME (a variable name, '=', a secret's name), not '\(text)'")
        case .readByTheLoader(let option, let variable): FailureReport(.usage, "\(option) \(variable): the dynamic loader or the C library reads \(variable)")
        case .givenTwice(let variable): FailureReport(.usage, "\(variable) is given twice")
        case .notAVariable(let text): FailureReport(.usage, "--env takes a variable name, not '\(text)'")
        case .keyReadByTheLoader(let variable):
            FailureReport(.usage, "--env \(variable): the dynamic loader or the C library reads \(variable), and would take the key for a file name or a setting (and may print it)")
        }
    }
}
