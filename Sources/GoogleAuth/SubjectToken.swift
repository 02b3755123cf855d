import FoundationEssentials
import GoogleHTTP
import SystemIO
import VaultCore

/// Where an `external_account` takes the token it proves its identity with.
enum SubjectTokenSource {
    enum Format {
        case text
        case json(field: String)
    }

    case file(path: String, format: Format)
    /// A GET; an `Authorization` header's value is held as a secret.
    case url(String, headers: [String], authorization: SecretBytes?, format: Format)
    case executable(command: String, timeout: Double, outputFile: String?)
    /// A CI variable holding the token (GitLab's `id_tokens`).
    case environment(name: String)

    /// What asking needs: the exchange's audience and the running command's surroundings.
    struct Context {
        let audience: String
        let tokenType: String
        let impersonatedEmail: String?
        let settings: CredentialSettings
        let transport: any HTTPTransport
    }

    var label: String {
        switch self {
        case .file(let path, _): "file \(path)"
        case .url(let url, _, _, _):
            Self.base(of: url).map { $0.host.hasSuffix("actions.githubusercontent.com") ? "GitHub OIDC" : "url \($0.host)" } ?? "url"
        case .executable(let command, _, _): "executable \(KeyCommand.split(command)?.first ?? "?")"
        case .environment(let name): "$\(name)"
        }
    }

    static func parse(_ source: ExternalAccount.Fields.Source, secrets: [String: SecretBytes], path: String) throws(GoogleError) -> SubjectTokenSource {
        let format: Format
        switch source.format?.type ?? "text" {
        case "text": format = .text
        case "json":
            guard let field = source.format?.subject_token_field_name, !field.isEmpty else {
                throw GoogleError(.credentials, "the external_account file \(path) has format json without subject_token_field_name")
            }
            format = .json(field: field)
        case let other: throw GoogleError(.credentials, "the external_account file \(path) has credential_source format '\(other)'; it is text or json")
        }
        if let file = source.file { return .file(path: file, format: format) }
        if let url = source.url {
            let headers = (source.headers ?? [:]).filter { $0.key.lowercased() != "authorization" }.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            return .url(url, headers: headers, authorization: secrets["Authorization"] ?? secrets["authorization"], format: format)
        }
        if let executable = source.executable {
            guard let command = executable.command, KeyCommand.split(command)?.first?.hasPrefix("/") == true else {
                throw GoogleError(.credentials, "the external_account file \(path) has an executable credential source whose command is not an absolute path")
            }
            let millis = executable.timeout_millis ?? 30_000
            guard (5_000...120_000).contains(millis) else {
                throw GoogleError(.credentials, "the external_account file \(path) has executable timeout_millis \(millis); it is 5000 to 120000")
            }
            if let output = executable.output_file, !output.hasPrefix("/") {
                throw GoogleError(.credentials, "the external_account file \(path) has an executable output_file that is not an absolute path")
            }
            return .executable(command: command, timeout: Double(millis) / 1000, outputFile: executable.output_file)
        }
        throw GoogleError(.credentials, "the external_account file \(path) has a credential_source with none of file, url or executable")
    }

    func fetch(_ context: Context) throws(GoogleError) -> SecretBytes {
        let token: SecretBytes
        switch self {
        case .file(let path, let format):
            guard let content = try TrustedRead.file(path, what: "the subject token file") else {
                throw GoogleError(.credentials, "the subject token file \(path) does not exist")
            }
            token = try Self.take(content, format, from: "the subject token file \(path)")
        case .url(let url, let headers, let authorization, let format):
            token = try Self.take(fetchURL(url, headers: headers, authorization: authorization, context), format, from: "the subject token URL \(url)")
        case .executable(let command, let timeout, let outputFile):
            token = try ExecutableSource(command: command, timeout: timeout, outputFile: outputFile, context: context).run()
        case .environment(let name):
            guard let value = context.settings.environment[name], !value.isEmpty else {
                throw GoogleError(.credentials, "the CI variable \(name) (oidc_token_env) holds no token",
                                  hint: "declare it under the job's id_tokens with the provider's audience")
            }
            token = try Self.take(SecretBytes(utf8: value), .text, from: "$\(name)")
        }
        Redaction.register(token)
        return token
    }

    /// A plain-http URL off this machine is refused outright: the subject token proves who we are.
    func fetchURL(_ url: String, headers: [String], authorization: SecretBytes?, _ context: Context) throws(GoogleError) -> SecretBytes {
        guard let parsed = Self.base(of: url) else { throw GoogleError(.credentials, "the subject token URL \(url) is not an http or https URL") }
        guard parsed.isSecure else {
            throw GoogleError(.credentials, "refusing the subject token URL \(url): plain http off this machine would let anyone on the way take the token",
                              hint: "use https, or a loopback address")
        }
        var request = GoogleExchange.JSONRequest("GET", .plain(url), headers: headers)
        request.credential = authorization.map(Self.authorizationHeader)
        let response: GoogleExchange.Response
        do {
            response = try GoogleExchange(transport: context.transport, timeout: context.settings.timeout).perform(request)
        } catch {
            throw GoogleError(.network, "the subject token URL \(parsed.host) did not answer: \(error.message)")
        }
        guard response.status == 200 else {
            throw GoogleError(.refused, "the subject token URL \(parsed.host) answered HTTP \(response.status)", status: response.status)
        }
        return response.body
    }

    /// `Authorization: Bearer T` with the scheme in the plain prefix and only the credential secret.
    static func authorizationHeader(_ value: SecretBytes) -> HTTPRequest.SecretHeader {
        let space = value.withUnsafeBytes { $0.firstIndex(of: 0x20) }
        guard let space, space > 0 else { return HTTPRequest.SecretHeader(prefix: "Authorization: ", value: value) }
        let scheme = value.withUnsafeBytes { String(decoding: $0[..<space], as: UTF8.self) }
        return HTTPRequest.SecretHeader(prefix: "Authorization: \(scheme) ", value: SecretBytes(slicing: value, range: (space + 1)..<value.count))
    }

    /// The scheme and host of a URL that may carry a query (GitHub's request URL does).
    static func base(of url: String) -> EndpointURL? { EndpointURL(String(url.prefix { $0 != "?" })) }

    /// The token in `content`: the whole text trimmed, or one field of a JSON object.
    static func take(_ content: SecretBytes, _ format: Format, from what: String) throws(GoogleError) -> SecretBytes {
        let value: SecretBytes?
        switch format {
        case .text: value = content
        case .json(let field): value = SecretJSON.split(content, secretFields: [field])?.secrets[field]
        }
        guard let value, let line = value.singleLineCredential() else {
            throw GoogleError(.credentials, "\(what) holds no usable token" + { if case .json(let field) = format { " (no field \(field))" } else { "" } }())
        }
        return line
    }
}
