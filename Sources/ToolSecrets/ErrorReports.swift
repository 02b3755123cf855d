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

/// `exec`'s --secret, --secret-file or --env refused: a usage mistake (64), the CLI adding `exec`'s usage line; or a nested exec (1).
extension ExecBindingError: ReportableError {
    private static func usageMistake(_ message: String) -> FailureReport { FailureReport(.usage, message, commandPath: ["exec"]) }

    public var report: FailureReport {
        switch self {
        case .notABinding(let option, let text): Self.usageMistake("\(option) takes VAR=NAME (a variable name, '=', a secret's name), not '\(text)'")
        case .readByTheLoader(let option, let variable): Self.usageMistake("\(option) \(variable): the dynamic loader or the C library reads \(variable)")
        case .givenTwice(let variable): Self.usageMistake("\(variable) is given twice")
        case .notAVariable(let text): Self.usageMistake("--env takes a variable name, not '\(text)'")
        case .keyReadByTheLoader(let variable):
            Self.usageMistake("--env \(variable): the dynamic loader or the C library reads \(variable), and would take the key for a file name or a setting (and may print it)")
        case .envWithoutKey: Self.usageMistake("with --secret, the API key is passed only when --key names it: --env goes with --key")
        case .keyAndSecret(let variable): Self.usageMistake("\(variable) would get both the API key and a secret")
        case .nested:
            FailureReport(.failure, "already inside 'gemvault exec' (\(ExecPlan.nestingVariable) is set)", hint: "run the command directly, or pass --force to nest on purpose")
        }
    }
}
