import GemvaultTesting
import GoogleHTTP
import Testing
import VaultCore

/// The one JSON call every unary call to Google goes through, against a scripted transport.
@Suite struct GoogleExchangeTests {
    struct Failed: Error, Equatable {
        let what: String
        var status: Int? = nil
    }

    let policy = RetryPolicy(maxAttempts: 3, retryOn: [.noAnswer, .rateLimit, .serverErrors], backoff: .linear(step: 0))

    func call(_ transport: FakeTransport, maxAnswer: Int = GoogleExchange.maxAnswer, secretFields: Set<String> = [],
              body: HTTPRequest.Body = .none) throws(Failed) -> GoogleExchange.Dated {
        let request = GoogleExchange.JSONRequest("POST", .plain("https://example.test/v1/x"), headers: ["X-Extra: 1"],
                                                 credential: GoogleExchange.bearer(SecretBytes(utf8: "ya29.token")), body: body, secretFields: secretFields)
        return try GoogleExchange(transport: transport, timeout: 5, maxAnswer: maxAnswer).call(request, policy: policy, unanswered: { (error: GoogleExchange.TransportFailure) throws(Failed) -> (Failed, RetryPolicy.Failure) in
            if error.tooLarge { throw Failed(what: "too large") }
            return (Failed(what: "no answer"), .noAnswer)
        }, malformed: { response in response.status == 200 ? Failed(what: "malformed", status: 200) : nil }, refused: { response, envelope in
            (Failed(what: envelope?.googleReason?.name ?? "no envelope", status: response.status), .answer(response.status, envelope, retryAfter: response.retryAfter))
        }, wait: { (_: Double, _: Int, _: Failed) throws(Failed) in })
    }

    @Test func anAnswerHasItsSecretFieldsTakenOutAndTheHeadersAreSet() throws {
        let transport = FakeTransport([.json(200, #"{"name": "keys/1", "keyString": "AQ.secret"}"#)])
        let answer = try call(transport, secretFields: ["keyString"], body: .plain(Array("{}".utf8)))
        #expect(answer.json.secrets["keyString"].map { $0.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } } == "AQ.secret")
        #expect(String(decoding: answer.json.plain, as: UTF8.self) == #"{"name": "keys/1", "keyString": ""}"#)
        #expect(transport.sent.first?.headers == ["Accept: application/json", "X-Extra: 1", "Content-Type: application/json; charset=utf-8"])
        #expect(transport.sent.first?.secretHeader == "Authorization: Bearer ya29.token")
    }

    @Test func aServerErrorIsTriedAgainAndARefusalIsDecodedOnce() {
        let unavailable = #"{"error": {"code": 503, "message": "busy", "status": "UNAVAILABLE"}}"#
        let denied = #"{"error": {"code": 403, "message": "no", "status": "PERMISSION_DENIED"}}"#
        let transport = FakeTransport([.json(503, unavailable), .outcome(.transportError("reset")), .json(403, denied), .json(200, "{}")])
        #expect(throws: Failed(what: "PERMISSION_DENIED", status: 403)) { try call(transport) }
        #expect(transport.sent.count == 3)
    }

    @Test func noAnswerAfterEveryAttemptIsTheUnansweredFailure() {
        let transport = FakeTransport([.outcome(.idleTimeout(status: 0)), .outcome(.connectionRefused("nothing")), .outcome(.transportError("reset"))])
        #expect(throws: Failed(what: "no answer")) { try call(transport) }
        #expect(transport.sent.count == 3)
    }

    @Test func aMalformedBodyIsMalformedsToThrowOrARefusalWithoutEnvelope() {
        #expect(throws: Failed(what: "malformed", status: 200)) { try call(FakeTransport([.json(200, #"{"name": "unterminated"#)])) }
        #expect(throws: Failed(what: "no envelope", status: 400)) { try call(FakeTransport([.json(400, #"{"error": "unterminated"#)])) }
    }

    @Test func anAnswerPastTheLimitIsNotKept() {
        let transport = FakeTransport([.json(200, "{\"pad\": \"" + String(repeating: "x", count: 5000) + "\"}")])
        #expect(throws: Failed(what: "too large")) { try call(transport, maxAnswer: 4096) }
        #expect(transport.sent.count == 1)
    }

    @Test func aBearerTokenWithALineBreakIsNeverSent() {
        let transport = FakeTransport([.json(200, "{}")])
        #expect(throws: GoogleExchange.TransportFailure.self) {
            try GoogleExchange(transport: transport, timeout: 5).perform("GET", .plain("https://example.test/"), headers: [], bearer: SecretBytes(utf8: "ya29.a\r\nX: y"))
        }
        #expect(transport.sent.isEmpty)
    }
}
