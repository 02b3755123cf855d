import GoogleHTTP
import Testing
import VaultCore
@testable import GoogleAuth

/// The last guard against header injection, where the headers are built: a value with a line
/// break never leaves the process, whatever checked it before (nothing listens at port 9, so a
/// request that went out would fail with a connection error instead).
@Suite struct HeaderGuardTests {
    private let nowhere = HTTPRequest.Target.plain("http://127.0.0.1:9/")
    private let exchange = GoogleExchange(transport: CurlTransport(), timeout: 2)

    @Test func aBearerTokenWithASecondLineIsNotSent() {
        let token = SecretBytes(utf8: "ya29.token\r\nX-Injected: yes")
        #expect {
            _ = try exchange.perform("GET", nowhere, headers: [], bearer: token)
        } throws: { error in
            (error as? GoogleExchange.TransportFailure)?.message.contains("nothing was sent") == true
        }
    }

    @Test func aPlainHeaderWithALineBreakIsRefusedByTheTransport() {
        #expect {
            _ = try exchange.perform("GET", nowhere, headers: ["X-Goog-User-Project: p\nX-Injected: yes"])
        } throws: { error in
            (error as? GoogleExchange.TransportFailure)?.message.contains("nothing was sent") == true
        }
    }

    @Test func aCredentialIsItsOneLineOrNothing() {
        func line(_ text: String) -> String? {
            SecretBytes(utf8: text).singleLineCredential().map { $0.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }
        }
        #expect(line("AQ.key\n") == "AQ.key")
        #expect(line("AQ.key\r\n\r\n") == "AQ.key")
        #expect(line("  AQ.key \n\n") == "AQ.key")
        #expect(line("AQ.key\nX-Injected: yes") == nil)
        #expect(line("AQ.key\r\nsecond\n") == nil)
        #expect(line("AQ key") == nil)
        #expect(line("AQ.k\u{7f}ey") == nil)
        #expect(line("AQ.clé") == nil)
        #expect(line("\n\n") == nil)
    }
}
