import Testing
import GoogleHTTP

/// The byte scan that spares a healthy stream's events a second JSON decode: it must never
/// say no to anything that decodes as an error envelope.
@Suite struct EnvelopeScanTests {
    private func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func everyErrorEnvelopeIsAMaybe() {
        let envelopes = [
            #"{"error": {"code": 500, "message": "boom", "status": "INTERNAL"}}"#,
            #"[{"error":{"code":429,"status":"RESOURCE_EXHAUSTED"}}]"#,
            #"{"\u0065rror": {"code": 503, "status": "UNAVAILABLE"}}"#,
            #"{"err\u006fr": {"code": 400}}"#,
        ]
        for text in envelopes {
            #expect(GoogleStatus.mayBeEnvelope(bytes(text)), "\(text)")
            #expect(GoogleStatus.decode(bytes(text)) != nil, "\(text)")
        }
    }

    @Test func aHealthyEventIsNot() {
        let event = #"{"candidates": [{"content": {"parts": [{"text": "no errors here, error-free"}], "role": "model"}}], "modelVersion": "gemini-3.6-flash"}"#
        #expect(!GoogleStatus.mayBeEnvelope(bytes(event)))
        #expect(!GoogleStatus.mayBeEnvelope(bytes("")))
        #expect(!GoogleStatus.mayBeEnvelope(bytes("\"error")))
        // Any member of that name is a maybe; the decode then decides, as before.
        #expect(GoogleStatus.mayBeEnvelope(bytes(#"{"candidates": [], "error": null}"#)))
    }
}
