import VaultCore

extension SecretInputError: ReportableError {
    public var report: FailureReport {
        switch self {
        case .noTerminal:
            FailureReport(.failure, "the vault needs its passphrase, and there is no terminal to ask on and no unlocked session",
                          hint: "run 'gemvault unlock' first, or pass --passphrase-fd N or --passphrase-file PATH")
        case .empty: FailureReport(.usage, "an empty value was given")
        case .tooLong(let limit): FailureReport(.usage, "the value is longer than \(limit) bytes")
        case .mismatch: FailureReport(.usage, "the two entries do not match")
        case .notOneLine:
            FailureReport(.usage, "the key is more than one line, or holds a space or a control character; nothing was stored (a key is one line, and only a line break may follow it)",
                          hint: "give only the key, for example: pass show gemini | head -n 1 | gemvault key set")
        case .unreadable(let what): FailureReport(.failure, "cannot read \(what)")
        case .refused(let failure): FailureReport(.failure, failure.message, hint: failure.fix)
        }
    }
}
