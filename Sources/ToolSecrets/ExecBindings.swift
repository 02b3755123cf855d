/// Why `exec`'s --secret, --secret-file or --env was refused (a usage mistake, exit 64).
public enum ExecBindingError: Error, Equatable {
    /// `option` was given `text`, which is not VAR=NAME.
    case notABinding(option: String, text: String)
    /// `option` names a variable the dynamic loader or the C library reads.
    case readByTheLoader(option: String, variable: String)
    case givenTwice(variable: String)
    /// --env was given `text`, which is not a variable name.
    case notAVariable(text: String)
    /// --env names a variable the loader reads, which would take the key for a path or a setting.
    case keyReadByTheLoader(variable: String)
    /// --env with --secret but without --key: no key is passed.
    case envWithoutKey
    /// The key's variable is also a secret's.
    case keyAndSecret(variable: String)
    /// Inside another `exec` without --secret or --force (exit 1).
    case nested
}

/// Which variables `exec` may set: each binding once, and none the loader or libc reads.
extension SecretBinding {
    /// The variable the key is put in unless --env names another.
    public static let defaultKeyVariable = "GEMINI_API_KEY"

    /// Besides every LD_ name: what glibc removes from the environment of setuid programs
    /// (its "unsecure" list), since the loader or libc reads each as a path or an option.
    /// `LD_PRELOAD=KEY`, for one, makes ld.so print the key in an error on every start.
    /// A list, not a `Set<String>`: a set's first use makes the Swift runtime look its type up,
    /// which cost `exec` more than searching thirteen names (Docs/performance.md).
    public static let loaderVariables: [String] = [
        "GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH", "MALLOC_TRACE",
        "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TMPDIR", "TZDIR",
    ]

    public static func isReadByTheLoader(_ variable: String) -> Bool {
        variable.hasPrefix("LD_") || loaderVariables.contains(variable)
    }

    /// The variable --env names (`given`), else GEMINI_API_KEY, checked.
    public static func keyVariable(_ given: String?) throws(ExecBindingError) -> String {
        let variable = given ?? defaultKeyVariable
        guard isVariableName(variable) else { throw .notAVariable(text: variable) }
        if isReadByTheLoader(variable) { throw .keyReadByTheLoader(variable: variable) }
        return variable
    }

    /// --secret's and --secret-file's values (`option` names each), each VAR=NAME, no variable
    /// twice, none the loader reads.
    public static func bindings(_ given: [(text: String, asFile: Bool, option: String)]) throws(ExecBindingError) -> [SecretBinding] {
        var bindings: [SecretBinding] = []
        for (text, asFile, option) in given {
            guard let binding = SecretBinding(parsing: text, asFile: asFile) else { throw .notABinding(option: option, text: text) }
            if isReadByTheLoader(binding.variable) { throw .readByTheLoader(option: option, variable: binding.variable) }
            guard !bindings.contains(where: { $0.variable == binding.variable }) else { throw .givenTwice(variable: binding.variable) }
            bindings.append(binding)
        }
        return bindings
    }
}

/// What `exec` hands its command, decided from its options before anything is fetched: the
/// secrets, and whether the API key goes too and in which variable.
public struct ExecPlan {
    /// Set in the command's environment: a program it starts that runs `exec` again is nested.
    public static let nestingVariable = "GEMVAULT_EXEC"

    public let bindings: [SecretBinding]
    /// Without --secret, or when --key (or --key-file) names a key.
    public let passesKey: Bool
    public let keyVariable: String

    /// `secrets` are --secret's and --secret-file's values (see `SecretBinding.bindings`);
    /// `environment` is gemvault's own. A server wrapped with --secret may be started by a
    /// program that itself runs under exec, so only a key-passing exec refuses to nest.
    public init(secrets: [(text: String, asFile: Bool, option: String)], env: String?, keyNamed: Bool, environment: [String: String],
                forceNested: Bool) throws(ExecBindingError) {
        bindings = try SecretBinding.bindings(secrets)
        if bindings.isEmpty && environment[Self.nestingVariable] != nil && !forceNested { throw .nested }
        passesKey = bindings.isEmpty || keyNamed
        if !passesKey && env != nil { throw .envWithoutKey }
        keyVariable = try SecretBinding.keyVariable(env)
        if passesKey, bindings.contains(where: { $0.variable == keyVariable }) { throw .keyAndSecret(variable: keyVariable) }
    }

    /// What the command's environment changes from gemvault's (nil removes a variable): marked
    /// as nested, TLS sessions never logged, and nothing that could shadow the key when it is passed.
    public var environmentChanges: [(name: String, value: String?)] {
        [("SSLKEYLOGFILE", nil), (Self.nestingVariable, "1")] + (passesKey ? [("GOOGLE_API_KEY", nil)] : [])
    }
}
