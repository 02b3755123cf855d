import Conversations
import GoogleHTTP
import Settings
import VaultCore

/// Gemini's answer to "does this new key work": the cheapest call the key may make, repeated
/// through Google's propagation window; a method the key turns out not to allow passes the
/// check on to the next probe.
public struct GeminiKeyChecker: KeyChecker {
    let settings: Settings
    let transport: any HTTPTransport

    public init(settings: Settings, transport: any HTTPTransport = CurlTransport()) {
        self.settings = settings
        self.transport = transport
    }

    public func verify(_ key: SecretBytes, probes: [KeyProbe], limit: Double, note: (String) -> Void) throws {
        let client = try GeminiClient(settings: settings, apiKey: key, keyOrigin: "the new key",
                                      keyReplaceHint: "Google may need a few more minutes; nothing was changed", transport: transport)
        let model = settings[.model]
        var remaining = probes[...]
        // Set by each attempt that failed: what the note and the final error report.
        var refused: GeminiError?
        let polling = PollPolicy(backoff: .exponential(initial: 1, max: 15, jitter: false), limit: limit)
        try polling.run({ (_: Int, _: Double) throws -> Void? in
            while let probe = remaining.first {
                do {
                    try call(probe, client, model: model)
                    return ()
                } catch let error as GeminiError where error.cause == .google(.apiKeyServiceBlocked) && remaining.count > 1 {
                    note("the new key may not call \(probe.shortName); checking it with \(remaining.dropFirst().first!.shortName)")
                    remaining = remaining.dropFirst()
                } catch is CutReply {
                    // A one-token reply ends early by design; any reply means Gemini took the key.
                    return ()
                } catch let error as GeminiError where error.category != .interrupted {
                    refused = error
                    return nil
                }
            }
            return ()
        }, waiting: { delay, elapsed in
            let error = refused!
            note("the new key is not accepted yet (\(error.status.map { "HTTP \($0) " } ?? "")\(error.reason)); new keys can take up to 5 minutes, trying again in \(Int(delay)) s (\(Int(elapsed)) of \(Int(limit)) s)")
        }, gaveUp: { elapsed in
            let error = refused!
            return GeminiError(category: error.category, message: "the new key was still refused after \(Int(elapsed)) s: \(error.message)",
                               hint: "Google can take up to 5 minutes before a new key works; try again with a longer --verify-timeout",
                               status: error.status, cause: error.cause)
        })
    }

    private func call(_ probe: KeyProbe, _ client: GeminiClient, model: String) throws {
        switch probe {
        case .listModels: _ = try client.listModels()
        case .countTokens: _ = try client.countTokens(model: model, request: GenerateContentRequest(contents: [Content(role: "user", text: "ok")]))
        case .generateContent:
            _ = try client.generateContent(model: model, request: GenerateContentRequest(contents: [Content(role: "user", text: "Say ok.")],
                                                                                      generationConfig: GenerationConfig(maxOutputTokens: 1)),
                                           handlers: StreamHandlers())
        }
    }
}
