import GoogleHTTP
import Testing

/// The Date header as Unix seconds: Google's clock, which a fleet's claim times are kept on
/// (the header is read from a real server in Tests/EndToEnd/test_fleet_claim_clock.py).
@Suite struct HTTPDateTests {
    @Test func anIMFFixdateIsUnixSeconds() {
        #expect(HTTPDate.seconds("Thu, 01 Jan 1970 00:00:00 GMT") == 0)
        #expect(HTTPDate.seconds("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(HTTPDate.seconds("Tue, 29 Feb 2028 23:59:59 GMT") == 1_835_481_599)
        #expect(HTTPDate.seconds("Mon, 07 Dec 2026 18:49:41 GMT") == 1_796_669_381)
    }

    @Test func anythingElseIsNoDate() {
        for text in ["", "Sun, 06 Nov 1994 08:49:37 UTC", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994",
                     "Sun, 6 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 8:49:37 GMT", "Sun, 31 Nov 1994 08:49:37 GMT",
                     "Sun, 29 Feb 2027 08:49:37 GMT", "Sun, 06 Nov 1969 08:49:37 GMT", "Sun, 06 Nov 1994 24:00:00 GMT",
                     "Sun, 06 Nov 1994 08:49:37 GMT ", "Xyz, 06 Nov 1994 08:49:37 GMT", "Sun, ٠٦ Nov 1994 08:49:37 GMT",
                     "Sun, 06 Nov +994 08:49:37 GMT"] {
            #expect(HTTPDate.seconds(text) == nil, "\(text)")
        }
    }
}
