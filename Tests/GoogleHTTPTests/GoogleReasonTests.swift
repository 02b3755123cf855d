import Foundation
@testable import GoogleHTTP
import Testing

/// The decoder is the one place Google's strings become `GoogleReason`s and `MessageSign`s:
/// on the envelopes and operations the fakes and the API Keys tests send, as Google sends them.
@Suite struct GoogleReasonTests {
    /// The API Keys and Secret Manager payloads of GoogleAuthTests, read in place.
    func authFixture(_ name: String) throws -> [UInt8] {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("GoogleAuthTests/Fixtures")
        return Array(try Data(contentsOf: folder.appendingPathComponent(name)))
    }

    @Test(arguments: [
        ("etag-mismatch.json", GoogleReason.status(.failedPrecondition)),
        ("secret-etag-stale.json", .status(.failedPrecondition)),
        ("permission-denied.json", .status(.permissionDenied)),
        ("unauthenticated.json", .status(.unauthenticated)),
        ("not-found.json", .status(.notFound)),
        ("service-disabled.json", .errorInfo(.serviceDisabled)),
        ("scope-insufficient.json", .errorInfo(.accessTokenScopeInsufficient)),
        ("secret-denied.json", .errorInfo(.other("IAM_PERMISSION_DENIED"))),
    ])
    func anEnvelopeGivesItsReasonFirstAndElseItsStatus(file: String, reason: GoogleReason) throws {
        let status = try #require(GoogleStatus.decode(try authFixture(file)))
        #expect(status.googleReason == reason)
    }

    @Test func theReasonsOfThisTargetsFixturesAreTyped() throws {
        #expect(GoogleStatus.decode(try fixture("api-key-invalid.json"))?.googleReason == .errorInfo(.apiKeyInvalid))
        #expect(GoogleStatus.decode(try fixture("rate-limit-per-minute.json"))?.googleReason == .status(.resourceExhausted))
        #expect(GoogleStatus.decode(try fixture("unavailable-in-array.json"))?.googleReason == .status(.unavailable))
        #expect(GoogleStatus.decode(try fixture("odd-detail.json"))?.googleReason == .errorInfo(.other("SOMETHING_NEW")))
        #expect(GoogleStatus.decode(try fixture("bad-gateway.html")) == nil)
    }

    @Test func aStatusNameOutsideTheCanonicalCodesIsKeptAsSent() throws {
        let status = try #require(GoogleStatus.decode(Array(#"{"error": {"code": 400, "status": "NEW_STATUS"}}"#.utf8)))
        #expect(status.googleReason == .otherStatus("NEW_STATUS") && status.googleReason?.name == "NEW_STATUS")
        #expect(GoogleStatus.decode(Array(#"{"error": {"code": 400}}"#.utf8))?.googleReason == nil)
    }

    @Test func everyCanonicalCodeRoundTripsByNameAndNumber() {
        for code in CanonicalCode.allCases {
            #expect(CanonicalCode(name: code.name) == code && CanonicalCode(rawValue: code.rawValue) == code)
        }
        #expect(CanonicalCode.allCases.count == 17 && CanonicalCode.internalError.name == "INTERNAL" && CanonicalCode(name: "internal") == nil)
    }

    /// A long-running operation's error is a google.rpc.Status too, with google.rpc.Code's number.
    @Test func anOperationsErrorIsDecodedByTheSameDecoder() throws {
        struct Operation: Decodable { let error: GoogleStatus? }
        let policy = try #require(try JSONDecoder().decode(Operation.self, from: Data(try authFixture("operation-failed-org-policy.json"))).error)
        #expect(policy.operationCode == .failedPrecondition && policy.says(.boundKeysForbidden) && !policy.says(.quotaProject))
        let exists = try #require(try JSONDecoder().decode(Operation.self, from: Data(try authFixture("operation-already-exists.json"))).error)
        #expect(exists.operationCode == .alreadyExists && !exists.says(.boundKeysForbidden))
        #expect(GoogleStatus(code: 99).operationCode == nil)
    }

    @Test func theMessageSignsAreReadOnlyFromTheMessage() throws {
        let unauthenticated = try #require(GoogleStatus.decode(try authFixture("unauthenticated.json")))
        #expect(unauthenticated.says(.expectsOAuthToken) && !unauthenticated.says(.boundKeysForbidden))
        let quota = GoogleStatus(code: 403, message: "Your application is authenticating by using local Application Default Credentials. The apikeys.googleapis.com API requires a quota project, which is not set by default.")
        #expect(quota.says(.quotaProject) && !quota.says(.expectsOAuthToken))
        #expect(!GoogleStatus(code: 403).says(.quotaProject))
    }

    @Test func aMessageMentionsWordsInAnyCase() {
        let status = GoogleStatus(code: 400, message: "Invalid JSON payload received. Unknown name \"thinkingLevel\" at 'generation_config.thinking_config'")
        #expect(status.messageMentions(any: ["thinkinglevel"]) && status.messageMentions(any: ["nothing", "generation_config"]))
        #expect(!status.messageMentions(any: ["responseschema"]) && !GoogleStatus(code: 400).messageMentions(any: ["x"]))
    }

    @Test func gemvaultsOwnOutcomesHaveTheirNames() {
        let names = [GoogleReason.answerLost, .stillPending, .etagConflict, .operationCode(9), .oauth("invalid_grant"), .status(.aborted)].map(\.name)
        #expect(names == ["answer-lost", "operation-pending", "etag-conflict", "code 9", "invalid_grant", "ABORTED"])
    }
}

/// The one loop over paged lists.
@Suite struct PaginationTests {
    struct Refused: Error, Equatable { let why: Pagination.Refusal }

    func pages(_ answers: [String?: ([Int], String?)], asked: inout [String?], maxPages: Int = 10, maxItems: Int = .max) throws(Refused) -> [Int] {
        var log: [String?] = []
        defer { asked = log }
        return try Pagination.collect(maxPages: maxPages, maxItems: maxItems, { (token: String?) throws(Refused) -> Pagination.Page<Int> in
            log.append(token)
            let answer = answers[token] ?? ([], nil)
            return Pagination.Page(answer.0, next: answer.1)
        }, refuse: { Refused(why: $0) })
    }

    @Test func everyPageIsFollowedInOrder() throws {
        var asked: [String?] = []
        let items = try pages([nil: ([1, 2], "b"), "b": ([3], "c"), "c": ([4, 5], nil)], asked: &asked)
        #expect(items == [1, 2, 3, 4, 5] && asked == [nil, "b", "c"])
    }

    @Test func anEmptyPageWithATokenIsNotTheEnd() throws {
        var asked: [String?] = []
        let items = try pages([nil: ([], "b"), "b": ([], "c"), "c": ([7], "")], asked: &asked)
        #expect(items == [7] && asked == [nil, "b", "c"])
    }

    @Test func aRepeatedTokenIsRefused() {
        var asked: [String?] = []
        #expect(throws: Refused(why: .repeatedToken)) { try pages([nil: ([1], "b"), "b": ([2], "c"), "c": ([3], "b")], asked: &asked) }
        #expect(asked == [nil, "b", "c"])
    }

    @Test func tooManyItemsAreRefusedAndThePageLimitStopsTheLoop() throws {
        var asked: [String?] = []
        #expect(throws: Refused(why: .tooManyItems)) { try pages([nil: ([1, 2], "b"), "b": ([3, 4], nil)], asked: &asked, maxItems: 3) }
        let endless = Dictionary(uniqueKeysWithValues: (0..<20).map { (Optional(String($0)), ([$0], Optional(String($0 + 1)))) } + [(nil, ([-1], "0"))])
        let items = try pages(endless, asked: &asked, maxPages: 3)
        #expect(items == [-1, 0, 1] && asked == [nil, "0", "1"])
    }
}
