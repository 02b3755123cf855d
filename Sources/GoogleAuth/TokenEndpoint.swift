import GoogleHTTP
import SystemIO
import VaultCore

/// The answer of a token endpoint (OAuth's or the metadata server's): `access_token` in secret memory.
enum TokenEndpoint {
    struct Answer: Decodable {
        let error: String?
        let error_description: String?
    }

    /// `expires_in`, a number (or, from some servers, a string of one).
    struct Lifetime: Decodable {
        let expires_in: Double?
        enum CodingKeys: CodingKey { case expires_in }
        init(from decoder: Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            if let number = try? container.decode(Double.self, forKey: .expires_in) { expires_in = number }
            else { expires_in = (try? container.decode(String.self, forKey: .expires_in)).flatMap(Double.init) }
        }
    }

    /// A token and when it stops working (Unix seconds), when the endpoint said.
    struct Minted {
        let token: SecretBytes
        let expiresAt: Int64?
    }

    /// Connection failures (but a timeout) and 5xx are tried again, three attempts in all, 1 s then 2 s apart.
    static let retryPolicy = RetryPolicy(maxAttempts: 3, retryOn: [.noAnswer, .serverErrors], backoff: .linear(step: 1))

    static let secretFields: Set<String> = ["access_token", "id_token", "refresh_token"]

    /// The token in the answer to `method` `url`, with its expiry; a body is a form (`grant_type=…`).
    static func mint(what: String, method: String, url: String, headers: [String], body: HTTPRequest.Body,
                     exchange: GoogleExchange) throws(GoogleError) -> Minted {
        var request = GoogleExchange.JSONRequest(method, .plain(url), headers: headers, body: body, secretFields: secretFields)
        request.bodyType = "application/x-www-form-urlencoded"
        let answer = try exchange.call(request, policy: retryPolicy, unanswered: { (error: GoogleExchange.TransportFailure) throws(GoogleError) -> (GoogleError, RetryPolicy.Failure) in
            (GoogleError(.network, "\(what) did not answer: \(error.message)"), error.timedOut ? .final : .noAnswer)
        }, malformed: { _ in nil }, refused: { response, _ in
            (refusal(status: response.status, SecretJSON.split(response.body, secretFields: secretFields), what: what),
             .status(response.status, serverDelay: response.retryAfter, dailyQuota: false))
        }, wait: { (delay: Double, _: Int, _: GoogleError) throws(GoogleError) in Clock.sleep(delay) })
        guard let token = answer.json.secrets["access_token"], token.count > 0 else { throw refusal(status: 200, answer.json, what: what) }
        Redaction.register(token)
        // One header-safe line, as every key and token gemvault sends must be.
        guard let oneLine = token.singleLineCredential() else {
            throw GoogleError(.refused, "\(what) answered with a malformed access token (more than one line, or a space or a control character)")
        }
        let lifetime = answer.json.decode(Lifetime.self)?.expires_in
        return Minted(token: oneLine, expiresAt: lifetime.map { Clock.now() + Int64($0) })
    }

    static func refusal(status: Int, _ json: SecretJSON?, what: String) -> GoogleError {
        let answer = json?.decode(Answer.self)
        let detail = [answer?.error, answer?.error_description].compactMap { $0 }.joined(separator: ": ")
        let category: GoogleError.Category = status >= 500 ? .network : .refused
        return GoogleError(category, "\(what) refused the credential (HTTP \(status)\(detail.isEmpty ? "" : ", " + Redaction.redact(detail)))",
                           hint: status == 400 || status == 401
                             ? "the credential may be revoked or expired; for gcloud's, run 'gcloud auth application-default login' again" : nil,
                           status: status, reason: answer?.error.map(GoogleReason.oauth))
    }
}
