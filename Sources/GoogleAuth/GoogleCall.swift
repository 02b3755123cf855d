import GoogleHTTP
import SystemIO
import VaultCore

extension GoogleExchange {
    /// One JSON call to a Google REST service with `policy`'s retries; the answer with the
    /// values of `secretFields` taken out into secret memory. `service` names the service in
    /// messages ("the API Keys service"), `setting` the setting that points at it.
    func call(_ method: String, _ target: HTTPRequest.Target, body: HTTPRequest.Body, headers: [String], bearer: SecretBytes, policy: RetryPolicy,
              clock: WaitClock, service: String, setting: String, what: String, secretFields: Set<String>,
              refusal: (Int, GoogleStatus?) -> GoogleError) throws(GoogleError) -> SecretJSON {
        try dated(method, target, body: body, headers: headers, bearer: bearer, policy: policy, clock: clock, service: service, setting: setting, what: what,
                  secretFields: secretFields, refusal: refusal).json
    }

    /// `call`, with the Date header of the answer.
    func dated(_ method: String, _ target: HTTPRequest.Target, body: HTTPRequest.Body, headers: [String], bearer: SecretBytes, policy: RetryPolicy,
               clock: WaitClock, service: String, setting: String, what: String, secretFields: Set<String>,
               refusal: (Int, GoogleStatus?) -> GoogleError) throws(GoogleError) -> Dated {
        let request = JSONRequest(method, target, headers: headers, credential: Self.bearer(bearer), body: body, secretFields: secretFields)
        return try call(request, policy: policy, unanswered: { (error: TransportFailure) throws(GoogleError) -> (GoogleError, RetryPolicy.Failure) in
            if error.tooLarge { throw GoogleError(.badData, "\(service) answered \(what) with more than \(maxAnswer >> 10) KiB, which no Google API sends") }
            return (GoogleError(.network, "\(service) did not answer while \(what): \(error.message)", hint: "check the network, or the \(setting) setting",
                                reason: .answerLost), .noAnswer)
        }, malformed: { response in
            GoogleError(response.status >= 500 ? .network : .refused, "\(service) answered \(what) with a malformed body (HTTP \(response.status))", status: response.status)
        }, refused: { response, envelope in
            (refusal(response.status, envelope), .answer(response.status, envelope, retryAfter: response.retryAfter))
        }, wait: { (delay: Double, _: Int, _: GoogleError) throws(GoogleError) in clock.sleep(delay) })
    }
}
