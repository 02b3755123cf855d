// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "gemvault",
    products: [
        .executable(name: "gemvault", targets: ["gemvault"]),
        /// The libFuzzer entry (Fuzz/run builds it with the sanitizers), or a replayer of inputs.
        .executable(name: "gemvault-fuzz", targets: ["gemvault-fuzz"]),
    ],
    targets: [
        // MARK: C libraries and shims

        /// libsodium from the Debian package, reached only through VaultCore's `Sodium` wrapper.
        .systemLibrary(name: "CSodium", providers: [.apt(["libsodium-dev"])]),
        /// libedit for the chat prompt's line editing (BSD licence; clean Ctrl-C behaviour).
        .systemLibrary(name: "CEditLine", providers: [.apt(["libedit-dev"])]),
        /// cmark-gfm, to parse the model's markdown (with GitHub's table extension).
        .systemLibrary(name: "CCmark", providers: [.apt(["libcmark-gfm-dev", "libcmark-gfm-extensions-dev"])]),
        /// OpenSSL's libcrypto: RS256 for a service account's token request, RSA for ssh slots,
        /// SHA-3/SHAKE and P-256 for age's post-quantum and tagged recipients.
        .systemLibrary(name: "COpenSSL", providers: [.apt(["libssl-dev"])]),
        /// zlib, for the unit tests only: some of the C2SP age vectors are stored compressed.
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        /// prctl, termios and signal glue that Swift cannot call directly.
        .target(name: "CSystemShims"),
        /// libcurl loaded with dlopen on first use, so vault commands never map the network stack.
        .target(name: "CCurlStream", linkerSettings: [.linkedLibrary("dl")]),

        // MARK: Library modules

        /// Descriptors with EINTR-safe I/O, the trusted-file open, folders, atomic writes, locks,
        /// the one process spawner and helper runner. Every system call that is not crypto or terminal lives here.
        .target(name: "SystemIO", dependencies: ["CSystemShims"]),

        /// The shapes of Google's credentials (auth keys, standard keys, access tokens), defined once.
        .target(name: "GoogleKeys"),
        /// Secret bytes, the libsodium wrapper, the vault file format and the on-disk store.
        .target(name: "VaultCore", dependencies: ["CSodium", "SystemIO", "GoogleKeys"]),
        /// The controlling terminal: hidden prompts, capabilities, colour, escape neutralising.
        .target(name: "TerminalIO", dependencies: ["VaultCore", "SystemIO", "CSystemShims"]),
        /// Paths, the settings schema and layers, config.json, and their errors: low enough for the agent.
        .target(name: "Settings", dependencies: ["VaultCore", "SystemIO"]),
        /// The age v1 file format (age-encryption.org/v1): X25519, ssh-ed25519 and hybrid
        /// post-quantum (ML-KEM-768 + X25519) recipients and identities, tagged P-256 recipients,
        /// HPKE, the header and its MAC, the STREAM payload, armor. For sharing keys.
        .target(name: "AgeFormat", dependencies: ["VaultCore", "COpenSSL"],
                // ML-KEM-768 optimised in debug builds too: its 10,000-test accumulated run takes
                // about a minute unoptimised, which the suite would pay every time.
                swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        /// The age plugin client (age-plugin.md): `age-plugin-NAME` found on PATH and run with
        /// recipient-v1 or identity-v1, its requests answered on the terminal, every step bounded.
        .target(name: "AgePlugins", dependencies: ["AgeFormat", "SystemIO", "TerminalIO", "VaultCore"]),
        /// Sharing keys: the vault's identity in age and Ed25519 form, the signed share document,
        /// recipient lists (plugin recipients through AgePlugins). No terminal or file code of its own.
        .target(name: "Sharing", dependencies: ["AgeFormat", "AgePlugins", "VaultCore", "GoogleKeys"]),
        /// The one way to Google over HTTP: the transport (libcurl, or a fake in tests), the one JSON
        /// call, the retry policy, paged lists, the decoder of Google's error envelope and its typed
        /// reasons, percent-encoding and base64url.
        .target(name: "GoogleHTTP", dependencies: ["CCurlStream", "SystemIO", "VaultCore", "GoogleKeys"]),
        /// The Gemini REST client, Gemini's `ChatProvider`: wire types and their mapping to the
        /// neutral ones, SSE parsing, errors. No terminal code.
        .target(name: "GeminiClient", dependencies: ["Conversations", "Settings", "VaultCore", "SystemIO", "GoogleHTTP", "GoogleKeys"]),
        /// Google credentials and access tokens (token_command, credential files, the metadata
        /// server) and the API Keys service's client. No terminal code.
        .target(name: "GoogleAuth", dependencies: ["COpenSSL", "GoogleHTTP", "VaultCore", "SystemIO", "GoogleKeys"]),
        /// The session agent: its socket protocol, the server that holds an unlocked vault, the client.
        .target(name: "Agent", dependencies: ["Settings", "VaultCore", "SystemIO", "GoogleKeys", "CSystemShims", "AgeFormat", "Sharing"]),
        /// The one home for reaching a vault: its file rules, the session or the passphrase, the
        /// narrow questions and the changes every command makes.
        .target(name: "VaultAccess", dependencies: ["Agent", "AgeFormat", "Sharing", "SSHAgent", "VaultCore", "SystemIO"]),
        /// The ssh-agent protocol, spoken over SSH_AUTH_SOCK with bounded reads: list keys, sign (and
        /// check the signature: libsodium for Ed25519, libcrypto for RSA).
        .target(name: "SSHAgent", dependencies: ["COpenSSL", "VaultCore", "SystemIO"]),
        /// Key sources, their order and provenance (`KeyResolver`), and the doctor's checks.
        .target(name: "KeyResolution", dependencies: ["Settings", "VaultAccess", "VaultCore", "SystemIO", "GoogleKeys", "GoogleAuth", "GoogleHTTP"]),
        /// The conversation model, its encrypted history, the provider seam (the neutral request,
        /// reply, usage, finish reason, failure kind, capabilities and the `ChatProvider` protocol),
        /// and the check of a structured reply against its JSON Schema.
        .target(name: "Conversations", dependencies: ["VaultCore", "SystemIO", "TerminalIO"]),
        /// What each key spends: the usage ledger (sealed like history), the price table, budgets.
        .target(name: "Spending", dependencies: ["Conversations", "Settings", "VaultCore", "SystemIO"]),
        /// Key rotation: API Keys rotation, rotation through Secret Manager for a fleet (the claim,
        /// the grace and its finish), the journal a killed run leaves, the check of a new key.
        .target(name: "Rotation", dependencies: ["GoogleAuth", "GoogleHTTP", "GoogleKeys", "KeyResolution", "Settings", "SystemIO", "VaultAccess", "VaultCore"]),
        /// The terminal renderers ask, chat and history share: markdown, live replies, bubbles, line breaking.
        .target(name: "Rendering", dependencies: ["CCmark", "CSystemShims", "SystemIO", "TerminalIO"]),
        /// The chat REPL and its slash commands.
        .target(name: "ChatUI", dependencies: ["Conversations", "Rendering", "TerminalIO", "VaultCore", "SystemIO", "CEditLine", "CSystemShims", "GoogleKeys"]),
        /// Secrets for other tools handed to programs (`exec --secret`), and MCP clients' config files
        /// scanned and rewritten to run their servers through gemvault (`gemvault mcp`).
        .target(name: "ToolSecrets", dependencies: ["VaultAccess", "VaultCore", "SystemIO"]),
        /// A command line's machinery, for any table of commands: option and command specs, the
        /// parser, "did you mean", help, the Markdown reference and the manual's commands.
        .target(name: "CommandLineKit", dependencies: ["Settings"]),
        /// The command table, the command functions and the one error-to-exit-code map.
        .target(name: "GemvaultCLI", dependencies: ["CommandLineKit", "SystemIO", "VaultCore", "Agent", "Conversations", "Rendering", "TerminalIO", "Settings", "KeyResolution", "GeminiClient", "ChatUI", "CSystemShims", "GoogleKeys", "VaultAccess", "GoogleAuth", "GoogleHTTP", "AgeFormat", "AgePlugins", "Sharing", "Spending", "SSHAgent", "Rotation", "ToolSecrets"]),

        /// The parsers that read bytes from others, by harness name, for Fuzz/run and the corpus replay tests.
        .target(name: "FuzzHarnesses", dependencies: ["Agent", "Conversations", "GeminiClient", "Settings", "Rendering", "SSHAgent", "ToolSecrets", "VaultCore"]),

        /// For test targets only: temporary folders, a test vault, a real agent on a temporary
        /// socket in the test process, a transport that answers from a script, a chat provider that
        /// answers from a script, standard streams captured, shared expectations.
        .target(name: "GemvaultTesting", dependencies: ["Agent", "Conversations", "GoogleHTTP", "VaultCore"]),

        // MARK: Executable

        .executableTarget(name: "gemvault", dependencies: ["GemvaultCLI"]),
        .executableTarget(name: "gemvault-fuzz", dependencies: ["FuzzHarnesses", "SystemIO"]),

        // MARK: Tests

        .testTarget(name: "SystemIOTests", dependencies: ["SystemIO", "GemvaultTesting"]),
        .testTarget(name: "GoogleKeysTests", dependencies: ["GoogleKeys"], exclude: ["Fixtures"]),
        .testTarget(name: "AgentTests", dependencies: ["Agent", "AgeFormat", "SystemIO", "VaultCore"]),
        .testTarget(name: "SSHAgentTests", dependencies: ["SSHAgent", "VaultCore", "SystemIO"]),
        .testTarget(name: "VaultAccessTests", dependencies: ["VaultAccess", "Agent", "AgeFormat", "Sharing", "VaultCore", "SystemIO", "GemvaultTesting"]),
        .testTarget(name: "VaultCoreTests", dependencies: ["VaultCore", "SystemIO", "GemvaultTesting"], exclude: ["Fixtures"]),
        .testTarget(name: "AgeFormatTests", dependencies: ["AgeFormat", "VaultCore", "CZlib", "GemvaultTesting"], exclude: ["Fixtures"]),
        .testTarget(name: "AgePluginsTests", dependencies: ["AgePlugins", "AgeFormat", "VaultCore"]),
        .testTarget(name: "SharingTests", dependencies: ["Sharing", "AgeFormat", "GoogleKeys", "VaultCore"]),
        .testTarget(name: "TerminalIOTests", dependencies: ["TerminalIO"]),
        .testTarget(name: "SettingsTests", dependencies: ["Settings", "SystemIO"]),
        .testTarget(name: "KeyResolutionTests", dependencies: ["SystemIO", "KeyResolution", "Settings", "VaultAccess", "Agent", "VaultCore", "GoogleKeys", "GemvaultTesting"]),
        .testTarget(name: "GoogleHTTPTests", dependencies: ["GoogleHTTP", "GemvaultTesting", "SystemIO", "VaultCore"], exclude: ["Fixtures"]),
        .testTarget(name: "GeminiClientTests", dependencies: ["GeminiClient", "Conversations", "GoogleHTTP", "GoogleKeys", "VaultCore", "GemvaultTesting"], exclude: ["Fixtures"]),
        .testTarget(name: "ConversationsTests", dependencies: ["Conversations", "VaultCore", "GemvaultTesting"], exclude: ["Fixtures"]),
        .testTarget(name: "RenderingTests", dependencies: ["Rendering", "TerminalIO"], exclude: ["Fixtures"]),
        .testTarget(name: "SpendingTests", dependencies: ["Spending", "Conversations", "VaultCore", "SystemIO", "Settings", "GemvaultTesting"]),
        .testTarget(name: "ChatUITests", dependencies: ["ChatUI", "Conversations", "Rendering", "TerminalIO"]),
        .testTarget(name: "GemvaultCLITests", dependencies: ["GemvaultCLI", "CommandLineKit", "AgeFormat", "Sharing", "Conversations", "GeminiClient", "Settings", "KeyResolution", "GoogleAuth", "Rotation", "SystemIO", "VaultCore", "GemvaultTesting"], exclude: ["Fixtures"]),
        .testTarget(name: "GoogleAuthTests", dependencies: ["GoogleAuth", "GoogleHTTP", "GemvaultTesting", "SystemIO", "VaultCore"], exclude: ["Fixtures"]),
        .testTarget(name: "RotationTests", dependencies: ["Rotation", "GeminiClient", "GemvaultTesting", "GoogleAuth", "GoogleHTTP", "Settings", "SystemIO", "VaultAccess", "VaultCore"],
                    exclude: ["Fixtures"]),
        .testTarget(name: "ToolSecretsTests", dependencies: ["ToolSecrets", "VaultCore", "SystemIO"], exclude: ["Fixtures"]),
        .testTarget(name: "CommandLineKitTests", dependencies: ["CommandLineKit"]),
        .testTarget(name: "FuzzHarnessesTests", dependencies: ["FuzzHarnesses", "Rendering"]),
    ]
)
