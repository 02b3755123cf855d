@testable import GoogleHTTP
import Testing

/// The one decoder of Google's error envelope, on payloads shaped as Google sends them.
@Suite struct GoogleStatusTests {
    @Test func aRateLimitCarriesItsDelayAndIsNotDaily() throws {
        let status = try #require(GoogleStatus.decode(try fixture("rate-limit-per-minute.json")))
        #expect(status.code == 429 && status.status == "RESOURCE_EXHAUSTED")
        #expect(status.message?.hasPrefix("You exceeded your current quota") == true)
        #expect(status.retryDelay == 38)
        #expect(!status.isDailyQuota)
        #expect(status.reasons.isEmpty && status.reason == nil)
        #expect(status.helpLink == "https://ai.google.dev/gemini-api/docs/rate-limits")
    }

    @Test func aDailyQuotaIsTold() throws {
        let status = try #require(GoogleStatus.decode(try fixture("quota-per-day.json")))
        #expect(status.isDailyQuota && status.retryDelay == 1.5)
    }

    @Test func reasonsAreTyped() throws {
        #expect(GoogleStatus.decode(try fixture("api-key-invalid.json"))?.reason == .apiKeyInvalid)
        #expect(GoogleStatus.decode(try fixture("scope-insufficient.json"))?.reason == .accessTokenScopeInsufficient)
        let disabled = try #require(GoogleStatus.decode(try fixture("apikeys-service-disabled.json")))
        #expect(disabled.reasons == [.serviceDisabled])
        #expect(disabled.metadata("consumer") == "projects/764086051850")
        #expect(disabled.helpLink == "https://console.developers.google.com/apis/api/apikeys.googleapis.com/overview?project=764086051850")
        #expect(GoogleErrorReason("SOMETHING_NEW") == .other("SOMETHING_NEW") && GoogleErrorReason("SERVICE_DISABLED").name == "SERVICE_DISABLED")
    }

    @Test func anEnvelopeInAnArrayIsRead() throws {
        let status = try #require(GoogleStatus.decode(try fixture("unavailable-in-array.json")))
        #expect(status.code == 503 && status.status == "UNAVAILABLE" && status.details.isEmpty)
    }

    @Test func anOddDetailFieldDoesNotHideTheEnvelope() throws {
        let status = try #require(GoogleStatus.decode(try fixture("odd-detail.json")))
        #expect(status.code == 400 && status.reason == .other("SOMETHING_NEW"))
        #expect(status.details.first?.metadata == nil && status.retryDelay == nil)
    }

    @Test func whatIsNoEnvelopeIsNil() throws {
        #expect(GoogleStatus.decode(try fixture("bad-gateway.html")) == nil)
        #expect(GoogleStatus.decode(Array(#"{"error": "invalid_grant", "error_description": "Bad Request"}"#.utf8)) == nil)
        #expect(GoogleStatus.decode([]) == nil)
    }

    @Test func retryDelaysInMillisecondsAndFractions() {
        func delay(_ text: String) -> Double? {
            GoogleStatus.decode(Array(#"{"error":{"code":429,"details":[{"@type":"x","retryDelay":"\#(text)"}]}}"#.utf8))?.retryDelay
        }
        #expect(delay("250ms") == 0.25 && delay("40s") == 40 && delay("1.5s") == 1.5 && delay("soon") == nil)
    }
}
