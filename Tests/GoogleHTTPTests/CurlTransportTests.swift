import GoogleHTTP
import Testing
import VaultCore

/// The curl transport's own checks, none of which reaches the network (a request would load
/// libcurl into the test process, which GeminiClientTests checks it does not; the Retry-After
/// header is read from a real server in Tests/EndToEnd/test_ask.py).
@Suite struct CurlTransportTests {
    @Test func aSecretHeaderWithALineBreakIsNeverSent() {
        // Nothing listens at port 9: a request that went out would fail to connect instead.
        let request = HTTPRequest(method: "GET", target: .plain("http://127.0.0.1:9/"),
                                  secretHeader: .init(prefix: "x-goog-api-key: ", value: SecretBytes(utf8: "AQ.key\r\nX-Injected: yes")), idleTimeout: 2)
        #expect(CurlTransport().perform(request, onData: { _, _ in .more }, onTick: nil) == .refusedHeader)
    }

    @Test func loopbackHTTPBypassesProxiesWhateverTheQuery() {
        #expect(HTTPRequest(method: "GET", target: .plain("http://127.0.0.1:8080/v2/keys?pageSize=300"), idleTimeout: 1).bypassesProxy)
        #expect(HTTPRequest(method: "GET", target: .secret(SecretBytes(utf8: "http://localhost/v2/keys:lookupKey?keyString=AQ.x")), idleTimeout: 1).bypassesProxy)
        #expect(!HTTPRequest(method: "GET", target: .plain("https://apikeys.googleapis.com/v2/keys?x=1"), idleTimeout: 1).bypassesProxy)
        #expect(!HTTPRequest(method: "GET", target: .plain("http://example.com/v2"), idleTimeout: 1).bypassesProxy)
    }
}
