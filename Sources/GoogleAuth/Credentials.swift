import FoundationEssentials
import Glibc
import GoogleHTTP
import SystemIO
import VaultCore

/// The scope every API Keys call is made with.
public let cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"
public let defaultTokenURI = "https://oauth2.googleapis.com/token"

/// Where the access token comes from, in the order they are tried: `token_command`, the
/// file `GOOGLE_APPLICATION_CREDENTIALS` names, gcloud's application-default credentials
/// file, the metadata server.
public enum CredentialSource: Sendable, Equatable {
    case tokenCommand(program: String)
    case serviceAccountFile(path: String, email: String)
    case authorizedUserFile(path: String)
    case metadataServer(host: String)
    /// Workload Identity Federation: `chain` reads like "GitHub OIDC → sts → SA".
    case externalAccount(path: String, chain: String)
    case impersonatedAccount(path: String, email: String)

    public var label: String {
        switch self {
        case .tokenCommand(let program): "token_command (\(program))"
        case .serviceAccountFile(let path, let email): "service account \(email) from \(path)"
        case .authorizedUserFile(let path): "user credentials from \(path)"
        case .metadataServer(let host): "the metadata server at \(host)"
        case .externalAccount(let path, let chain): "external_account (\(chain)) from \(path)"
        case .impersonatedAccount(let path, let email): "impersonated_service_account \(email) from \(path)"
        }
    }

    public var kind: String {
        switch self {
        case .tokenCommand: "token-command"
        case .serviceAccountFile: "service-account"
        case .authorizedUserFile: "authorized-user"
        case .metadataServer: "metadata-server"
        case .externalAccount: "external-account"
        case .impersonatedAccount: "impersonated-service-account"
        }
    }

    /// What `key which` shows for `auth` = `google`: `external_account (GitHub OIDC → sts → SA)`.
    public var chainLabel: String {
        switch self {
        case .externalAccount(_, let chain): "external_account (\(chain))"
        case .impersonatedAccount(_, let email): "impersonated_service_account (→ \(email))"
        case .serviceAccountFile(_, let email): "service_account (\(email))"
        case .authorizedUserFile(let path): "authorized_user (\(path))"
        case .metadataServer(let host): "metadata server (\(host))"
        case .tokenCommand(let program): "token_command (\(program))"
        }
    }

    /// Who the token speaks for, as the ledger names it (`google:PRINCIPAL`).
    public var principal: String {
        switch self {
        case .tokenCommand: "token_command"
        case .serviceAccountFile(_, let email), .impersonatedAccount(_, let email): email
        case .authorizedUserFile: "user"
        case .metadataServer: "metadata-server"
        case .externalAccount(_, let chain): chain.components(separatedBy: " → ").last ?? chain
        }
    }

    /// User credentials bill API Keys calls to a quota project (`x-goog-user-project`).
    /// A token_command is taken for one (`gcloud auth print-access-token` prints a user's).
    public var isUserCredential: Bool {
        switch self {
        case .tokenCommand, .authorizedUserFile: true
        case .serviceAccountFile, .metadataServer, .externalAccount, .impersonatedAccount: false
        }
    }
}

/// An access token in locked memory, with what the credential said about billing.
public struct AccessToken {
    public let token: SecretBytes
    public let source: CredentialSource
    /// The credential file's `quota_project_id`, if any.
    public let quotaProject: String?
    /// When the token stops working (Unix seconds), when the issuer said.
    public var expiresAt: Int64?

    public init(token: SecretBytes, source: CredentialSource, quotaProject: String?, expiresAt: Int64? = nil) {
        self.token = token
        self.source = source
        self.quotaProject = quotaProject
        self.expiresAt = expiresAt
    }
}

/// What finding a credential needs from the command.
public struct CredentialSettings {
    public var tokenCommand: String?
    public var commandTimeout: Double
    public var environment: [String: String]
    public var home: String
    /// Seconds for each token request.
    public var timeout: Double
    /// Plain http to a non-loopback token_uri or metadata host is refused without it.
    public var allowInsecure: Bool
    public var warn: (String) -> Void
    /// The service the token is for, named when no credential is found.
    public var service = "the API Keys service"
    /// The scopes asked for (`cloud-platform` for the API Keys service and Secret Manager).
    public var scopes = [cloudPlatformScope]
    /// `sts_endpoint` and `iamcredentials_endpoint` when set (the caller checked them);
    /// nil: the URLs of the credential file, which must be Google's or loopback.
    public var stsEndpoint: String?
    public var iamCredentialsEndpoint: String?
    /// A CI job's federation from settings; it comes after token_command, before any file.
    public var federation: CIFederation?

    public init(tokenCommand: String?, commandTimeout: Double, environment: [String: String], home: String, timeout: Double,
                allowInsecure: Bool, warn: @escaping (String) -> Void) {
        self.tokenCommand = tokenCommand
        self.commandTimeout = commandTimeout
        self.environment = environment
        self.home = home
        self.timeout = timeout
        self.allowInsecure = allowInsecure
        self.warn = warn
    }
}

/// Finds the credential and exchanges it for an access token for `cloudPlatformScope`.
public struct GoogleCredentials {
    public let settings: CredentialSettings
    let transport: any HTTPTransport

    public init(_ settings: CredentialSettings, transport: any HTTPTransport = CurlTransport()) {
        self.settings = settings
        self.transport = transport
    }

    /// The file gcloud's `auth application-default login` writes.
    var applicationDefaultPath: String { Self.applicationDefaultPath(environment: settings.environment, home: settings.home) }

    public static func applicationDefaultPath(environment: [String: String], home: String) -> String {
        if let folder = environment["CLOUDSDK_CONFIG"], !folder.isEmpty { return folder + "/application_default_credentials.json" }
        return home + "/.config/gcloud/application_default_credentials.json"
    }

    /// The credential file this machine offers (GOOGLE_APPLICATION_CREDENTIALS, else gcloud's),
    /// looked at without reading it: for the hint when no key is found.
    public static func credentialFile(environment: [String: String], home: String) -> String? {
        if let path = environment["GOOGLE_APPLICATION_CREDENTIALS"], !path.isEmpty { return path }
        let path = applicationDefaultPath(environment: environment, home: home)
        return access(path, F_OK) == 0 ? path : nil
    }

    /// `GCE_METADATA_HOST` (host or host:port), else Google's name for it.
    var metadataHost: String {
        if let host = settings.environment["GCE_METADATA_HOST"], !host.isEmpty { return host }
        return "metadata.google.internal"
    }

    /// Which source would be used, without asking for a token. The metadata server counts
    /// only when it answers within a second.
    public func source() throws(GoogleError) -> CredentialSource {
        if let command = settings.tokenCommand, !command.isEmpty {
            return .tokenCommand(program: KeyCommand.split(command)?.first ?? "token_command")
        }
        if let account = try federatedJob() { return account.source }
        if let file = try credentialFile() { return file.source }
        if metadataAnswers() { return .metadataServer(host: metadataHost) }
        throw noCredential
    }

    /// Every source of the chain was tried, in its order, and none had a credential.
    var noCredential: GoogleError {
        GoogleError(.credentials, "no Google credentials for \(settings.service): tried token_command (not set), GOOGLE_APPLICATION_CREDENTIALS (not set), gcloud's application-default credentials (\(applicationDefaultPath): none) and the metadata server (\(metadataHost): no answer)",
                    hint: "set token_command to 'gcloud auth print-access-token', or run 'gcloud auth application-default login', or point GOOGLE_APPLICATION_CREDENTIALS at a service account's key file")
    }

    /// An access token from the first source that has one.
    public func token() throws(GoogleError) -> AccessToken {
        if let command = settings.tokenCommand, !command.isEmpty {
            let program = KeyCommand.split(command)?.first ?? "token_command"
            let token: SecretBytes
            do {
                token = try KeyCommand.secret(command, timeout: settings.commandTimeout, environment: settings.environment, setting: "token_command")
            } catch {
                throw GoogleError(.credentials, "token_command '\(error.program)' \(error.detail)", hint: "check the command with: gemvault config get token_command",
                                  commandStderr: error.stderr)
            }
            guard token.isHeaderSafe else {
                throw GoogleError(.credentials, "token_command '\(program)' printed something that is not an access token (one line, no spaces)")
            }
            Redaction.register(token)
            return AccessToken(token: token, source: .tokenCommand(program: program), quotaProject: nil)
        }
        if let account = try federatedJob() { return try account.token(settings: settings, transport: transport) }
        if let file = try credentialFile() { return try file.exchange(settings: settings, transport: transport) }
        if metadataAnswers() { return try metadataToken() }
        throw noCredential
    }

    /// The CI job's federation, when settings name one and the job offers a subject token.
    func federatedJob() throws(GoogleError) -> ExternalAccount? {
        guard let federation = settings.federation else { return nil }
        guard let account = try federation.account(environment: settings.environment) else {
            settings.warn("workload_identity_provider is set, but this job offers no OIDC token (no ACTIONS_ID_TOKEN_REQUEST_URL: give the job 'permissions: id-token: write'; or set oidc_token_env); trying the rest of the chain")
            return nil
        }
        return account
    }

    // MARK: Credential files

    /// GOOGLE_APPLICATION_CREDENTIALS (which must exist when set), else gcloud's ADC file when present.
    func credentialFile() throws(GoogleError) -> CredentialFile? {
        if let path = settings.environment["GOOGLE_APPLICATION_CREDENTIALS"], !path.isEmpty {
            guard let file = try CredentialFile.load(path, warn: settings.warn) else {
                throw GoogleError(.credentials, "GOOGLE_APPLICATION_CREDENTIALS names \(path), which does not exist")
            }
            return file
        }
        return try CredentialFile.load(applicationDefaultPath, warn: settings.warn)
    }

    // MARK: The metadata server

    func metadataBase() throws(GoogleError) -> String {
        let base = "http://" + metadataHost
        guard let url = EndpointURL(base) else { throw GoogleError(.credentials, "GCE_METADATA_HOST '\(metadataHost)' is not a host name") }
        // Plain http is the metadata server's way; anywhere else than Google's own name and
        // address it must stay on this machine.
        let google = url.host == "metadata.google.internal" || url.host == "169.254.169.254"
        guard google || url.isLoopback || settings.allowInsecure else {
            throw GoogleError(.credentials, "GCE_METADATA_HOST '\(metadataHost)' is not loopback; the access token would travel unencrypted",
                              hint: "use a loopback address, or pass --allow-insecure-endpoint if you really mean it")
        }
        return base
    }

    func metadataAnswers() -> Bool {
        let base: String
        do { base = try metadataBase() } catch {
            // Silence here would leave "no credentials" unexplained.
            settings.warn("the metadata server is not asked: " + error.message + (error.hint.map { " (\($0))" } ?? ""))
            return false
        }
        guard let answer = try? GoogleExchange(transport: transport, timeout: 1).perform("GET", .plain(base + "/computeMetadata/v1/"), headers: ["Metadata-Flavor: Google"]) else {
            return false
        }
        return answer.status == 200
    }

    func metadataToken() throws(GoogleError) -> AccessToken {
        let base = try metadataBase()
        let url = base + "/computeMetadata/v1/instance/service-accounts/default/token?scopes=" + PercentEncoding.encode(settings.scopes.joined(separator: ","))
        let minted = try TokenEndpoint.mint(what: "the metadata server", method: "GET", url: url, headers: ["Metadata-Flavor: Google"], body: .none,
                                            exchange: GoogleExchange(transport: transport, timeout: settings.timeout))
        return AccessToken(token: minted.token, source: .metadataServer(host: metadataHost), quotaProject: nil, expiresAt: minted.expiresAt)
    }
}

/// A credential file: a service account's key, a user's refresh token, a Workload Identity
/// Federation configuration (`external_account`), or an impersonation of a service account.
struct CredentialFile {
    indirect enum Kind {
        case serviceAccount, authorizedUser
        case externalAccount(ExternalAccount)
        case impersonated(ImpersonatedAccount)
    }

    struct Fields: Decodable {
        let type: String?
        let client_email: String?
        let client_id: String?
        let private_key_id: String?
        let token_uri: String?
        let project_id: String?
        let quota_project_id: String?
    }

    let path: String
    let kind: Kind
    let fields: Fields
    let secrets: [String: SecretBytes]

    var source: CredentialSource {
        switch kind {
        case .serviceAccount: .serviceAccountFile(path: path, email: fields.client_email ?? "?")
        case .authorizedUser: .authorizedUserFile(path: path)
        case .externalAccount(let account): .externalAccount(path: path, chain: account.chain)
        case .impersonated(let account): .impersonatedAccount(path: path, email: account.target.email)
        }
    }

    /// The header values of a `url` credential source count as secrets (GitHub's request token).
    static let secretFields: Set<String> = ["private_key", "client_secret", "refresh_token", "Authorization", "authorization"]

    /// Reads and checks the file: the user's own, in a folder of the user's, writable by
    /// nobody else (it says where a token is fetched); readable by others only with a warning.
    static func load(_ path: String, warn: (String) -> Void) throws(GoogleError) -> CredentialFile? {
        guard let buffer = try TrustedRead.file(path, what: "the credential file", warnIfReadable: warn) else { return nil }
        guard let split = SecretJSON.split(buffer, secretFields: secretFields), let fields = split.decode(Fields.self) else {
            throw GoogleError(.credentials, "the credential file \(path) is not a JSON object")
        }
        let kind = try kind(of: fields, split, path: path)
        for secret in split.secrets.values { Redaction.register(secret) }
        return CredentialFile(path: path, kind: kind, fields: fields, secrets: split.secrets)
    }

    static func kind(of fields: Fields, _ split: SecretJSON, path: String) throws(GoogleError) -> Kind {
        switch fields.type {
        case "service_account":
            guard fields.client_email != nil, split.secrets["private_key"] != nil else {
                throw GoogleError(.credentials, "the service account file \(path) lacks client_email or private_key")
            }
            return .serviceAccount
        case "authorized_user":
            guard fields.client_id != nil, split.secrets["client_secret"] != nil, split.secrets["refresh_token"] != nil else {
                throw GoogleError(.credentials, "the user credential file \(path) lacks client_id, client_secret or refresh_token")
            }
            return .authorizedUser
        case "external_account":
            return .externalAccount(try ExternalAccount.parse(split, path: path))
        case "impersonated_service_account":
            return .impersonated(try ImpersonatedAccount.parse(split, path: path))
        case let other:
            throw GoogleError(.credentials, "the credential file \(path) has type '\(other ?? "none")'; gemvault reads service_account, authorized_user, external_account and impersonated_service_account",
                              hint: "use token_command (for example 'gcloud auth print-access-token') for other kinds")
        }
    }

    func tokenURI(allowInsecure: Bool) throws(GoogleError) -> String {
        let uri = fields.token_uri ?? defaultTokenURI
        guard let url = EndpointURL(uri) else { throw GoogleError(.credentials, "the credential file \(path) has a token_uri that is not an http or https URL") }
        guard url.isSecure || allowInsecure else {
            throw GoogleError(.credentials, "the credential file \(path) has token_uri \(uri), plain http on a non-loopback host; the credential would travel unencrypted",
                              hint: "use https, or pass --allow-insecure-endpoint if you really mean it")
        }
        // A credential file is copied around and written by tools: it may not send the
        // credential to a host that is neither Google's nor this machine.
        guard !url.isCustom else {
            throw GoogleError(.credentials, "the credential file \(path) has token_uri \(uri), which is not Google's and not loopback; its credential is not sent there",
                              hint: "use Google's (\(defaultTokenURI)), or a token_command that prints a token from your own service")
        }
        return uri
    }

    func exchange(settings: CredentialSettings, transport: any HTTPTransport) throws(GoogleError) -> AccessToken {
        switch kind {
        case .externalAccount(let account): return try account.token(settings: settings, transport: transport)
        case .impersonated(let account): return try account.token(settings: settings, transport: transport)
        case .serviceAccount, .authorizedUser: break
        }
        let uri = try tokenURI(allowInsecure: settings.allowInsecure)
        let body: SecretBytes
        switch kind {
        case .serviceAccount:
            let assertion = try jwt(audience: uri, scopes: settings.scopes)
            body = PercentEncoding.join([.literal("grant_type=" + PercentEncoding.encode("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion="),
                                      .encoded(assertion)])
        case .authorizedUser:
            body = PercentEncoding.join([.literal("grant_type=refresh_token&client_id=" + PercentEncoding.encode(fields.client_id ?? "") + "&client_secret="),
                                      .encoded(secrets["client_secret"]!), .literal("&refresh_token="), .encoded(secrets["refresh_token"]!)])
        case .externalAccount, .impersonated: preconditionFailure("exchanged above")
        }
        let minted = try TokenEndpoint.mint(what: "the token endpoint \(uri)", method: "POST", url: uri, headers: [],
                                            body: .secret(body), exchange: GoogleExchange(transport: transport, timeout: settings.timeout))
        return AccessToken(token: minted.token, source: source, quotaProject: fields.quota_project_id, expiresAt: minted.expiresAt)
    }

    /// The signed JWT a service account trades for a token (RFC 7523), in secret memory.
    func jwt(audience: String, scopes: [String]) throws(GoogleError) -> SecretBytes {
        struct Header: Encodable { let alg = "RS256"; let typ = "JWT"; let kid: String? }
        struct Claims: Encodable { let iss: String; let scope: String; let aud: String; let iat: Int64; let exp: Int64 }
        let now = Int64(time(nil))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let header = try? encoder.encode(Header(kid: fields.private_key_id)),
              let claims = try? encoder.encode(Claims(iss: fields.client_email ?? "", scope: scopes.joined(separator: " "), aud: audience, iat: now, exp: now + 3600)) else {
            throw GoogleError(.credentials, "could not write the token request")
        }
        let signingInput = Base64URL.encode(Array(header)) + "." + Base64URL.encode(Array(claims))
        let signature: [UInt8]
        do {
            signature = try ServiceAccountSigner.sign(Array(signingInput.utf8), privateKeyPEM: secrets["private_key"]!)
        } catch {
            throw GoogleError(.credentials, "cannot sign with the service account file \(path): \(error.message)")
        }
        let assertion = SecretBytes(utf8: signingInput + "." + Base64URL.encode(signature))
        Redaction.register(assertion)
        return assertion
    }
}

