import Glibc
import GoogleHTTP
import SystemIO
import VaultCore

/// The `executable` credential source, run as Google's libraries run it: only when
/// GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1, without a shell, with the
/// GOOGLE_EXTERNAL_ACCOUNT_* variables, within its timeout; a still valid response in its
/// output file is taken instead of running it again.
struct ExecutableSource {
    struct Response: Decodable {
        let version: Int?
        let success: Bool?
        let token_type: String?
        let expiration_time: Int64?
        let code: String?
        let message: String?
    }

    static let optIn = "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES"
    static let tokenFields: Set<String> = ["id_token", "saml_response"]

    let command: String
    let timeout: Double
    let outputFile: String?
    let context: SubjectTokenSource.Context

    var program: String { KeyCommand.split(command)?.first ?? command }

    func run() throws(GoogleError) -> SecretBytes {
        guard context.settings.environment[Self.optIn] == "1" else {
            throw GoogleError(.credentials, "the credential file runs \(program) for its subject token, and executables run only when \(Self.optIn)=1",
                              hint: "read the command in the credential file; if you trust it, export \(Self.optIn)=1")
        }
        if let outputFile, let cached = try TrustedRead.file(outputFile, what: "the executable's output file"),
           let token = try? token(in: cached, requireExpiry: true, from: "the output file \(outputFile)") {
            return token
        }
        let output = SecretBytes(count: TrustedRead.limit)
        let outcome: ProcessRunner.Outcome
        do {
            outcome = try output.withUnsafeMutableBytes { buffer throws(ProcessRunner.Failure) in
                try ProcessRunner.run(KeyCommand.split(command) ?? [command], environment: environment, output: buffer, deadline: Deadline(after: timeout))
            }
        } catch {
            throw GoogleError(.credentials, "could not run the executable credential source \(program): \(error.system.reason)")
        }
        let errors = Redaction.redact(String(decoding: outcome.errors, as: UTF8.self))
        switch outcome.ending {
        case .timedOut: throw GoogleError(.credentials, "the executable credential source \(program) did not finish within \(Int(timeout)) s (timeout_millis)")
        case .outputTooLarge: throw GoogleError(.credentials, "the executable credential source \(program) printed more than 64 KiB")
        case .finished(let termination) where termination != .exited(0):
            throw GoogleError(.credentials, "the executable credential source \(program) failed (status \(termination.shellStatus))", commandStderr: errors)
        case .finished: break
        }
        output.truncate(to: outcome.outputCount)
        return try token(in: output, requireExpiry: outputFile != nil, from: "the executable credential source \(program)")
    }

    /// What the program is told (AIP-4117, and google-auth's extras); the caller's own
    /// environment otherwise, which holds no token of gemvault's.
    var environment: [String: String] {
        var variables = context.settings.environment
        variables["GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE"] = context.audience
        variables["GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE"] = context.tokenType
        variables["GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE"] = "0"
        if let email = context.impersonatedEmail { variables["GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL"] = email }
        if let outputFile { variables["GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE"] = outputFile }
        return variables
    }

    /// The token of a successful, unexpired version-1 response.
    func token(in content: SecretBytes, requireExpiry: Bool, from what: String) throws(GoogleError) -> SecretBytes {
        guard let split = SecretJSON.split(content, secretFields: Self.tokenFields), let response = split.decode(Response.self) else {
            throw GoogleError(.credentials, "\(what) did not answer with a JSON response")
        }
        guard response.version == 1 else { throw GoogleError(.credentials, "\(what) answered version \(response.version.map(String.init) ?? "none"); gemvault reads version 1") }
        guard response.success == true else {
            throw GoogleError(.credentials, "\(what) reported a failure: \(response.code ?? "no code"): \(Redaction.redact(response.message ?? "no message"))")
        }
        if let expiry = response.expiration_time {
            guard expiry > Clock.now() else { throw GoogleError(.credentials, "\(what) answered with an expired token") }
        } else if requireExpiry {
            throw GoogleError(.credentials, "\(what) answered without expiration_time, which a response with an output file must have")
        }
        guard let value = split.secrets["id_token"] ?? split.secrets["saml_response"], let token = value.singleLineCredential() else {
            throw GoogleError(.credentials, "\(what) answered without id_token or saml_response")
        }
        return token
    }
}
