import Conversations
import GeminiClient
import GoogleAuth
import GoogleHTTP
import Settings
import SystemIO
import TerminalIO
import VaultCore

/// How a new key made by `key rotate --create` is checked: with the cheapest Gemini call its
/// API restrictions allow (listing the models, else counting tokens, else a one-token reply),
/// through Google's propagation window.
struct KeyCheck {
    static let geminiService = "generativelanguage.googleapis.com"

    enum Probe: String, CaseIterable {
        case listModels = "google.ai.generativelanguage.v1beta.ModelService.ListModels"
        case countTokens = "google.ai.generativelanguage.v1beta.GenerativeService.CountTokens"
        case generateContent = "google.ai.generativelanguage.v1beta.GenerativeService.GenerateContent"

        var shortName: String { String(rawValue.split(separator: ".").last!) }
    }

    /// The calls the key may make, cheapest first.
    let probes: [Probe]

    /// Refuses, before anything is made, a key whose restrictions allow no call gemvault can check it with.
    init(restrictions: JSONValue, name: String) throws {
        guard case .array(let targets)? = restrictions["apiTargets"], !targets.isEmpty else {
            probes = Probe.allCases
            return
        }
        let services = targets.compactMap { $0["service"]?.stringValue }
        guard let gemini = targets.first(where: { $0["service"]?.stringValue == Self.geminiService }) else {
            throw GoogleError(.refused, "the key of '\(name)' is restricted to \(services.joined(separator: ", ")), not to the Generative Language API: Gemini would refuse a copy of it",
                              hint: "add \(Self.geminiService) to the key's API restrictions in the Cloud console, or rotate by hand with 'gemvault key rotate \(name)'")
        }
        guard case .array(let methods)? = gemini["methods"], !methods.isEmpty else {
            probes = Probe.allCases
            return
        }
        let patterns = methods.compactMap(\.stringValue)
        probes = Probe.allCases.filter { probe in patterns.contains { Self.matches($0, probe) } }
        guard !probes.isEmpty else {
            throw GoogleError(.refused, "the key of '\(name)' may call only \(patterns.joined(separator: ", ")) of the Generative Language API, and gemvault checks a new key with ListModels, CountTokens or GenerateContent",
                              hint: "allow one of those methods in the key's API restrictions, or rotate by hand with 'gemvault key rotate \(name)'")
        }
    }

    /// A method selector: a full or short name, `*` as its last character a wildcard.
    static func matches(_ pattern: String, _ probe: Probe) -> Bool {
        let names = [probe.rawValue, probe.shortName, geminiService + "." + probe.shortName]
        if pattern.hasSuffix("*") { return names.contains { $0.hasPrefix(pattern.dropLast()) } }
        return names.contains(pattern)
    }

    /// Tries the key until Google has propagated it or `limit` seconds have passed; a method
    /// the key turns out not to allow passes the check on to the next one.
    func verify(_ key: SecretBytes, settings: Settings, limit: Double, transport: any HTTPTransport = CurlTransport()) throws {
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
                    switch probe {
                    case .listModels: _ = try client.listModels()
                    case .countTokens: _ = try client.countTokens(model: model, request: GenerateContentRequest(contents: [Content(role: "user", text: "ok")]))
                    case .generateContent:
                        _ = try client.generateContent(model: model, request: GenerateContentRequest(contents: [Content(role: "user", text: "Say ok.")],
                                                                                                  generationConfig: GenerationConfig(maxOutputTokens: 1)),
                                                       handlers: StreamHandlers())
                    }
                    return ()
                } catch let error as GeminiError where error.cause == .google(.apiKeyServiceBlocked) && remaining.count > 1 {
                    Console.note("the new key may not call \(probe.shortName); checking it with \(remaining.dropFirst().first!.shortName)")
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
            Console.note("the new key is not accepted yet (\(error.status.map { "HTTP \($0) " } ?? "")\(error.reason)); new keys can take up to 5 minutes, trying again in \(Int(delay)) s (\(Int(elapsed)) of \(Int(limit)) s)")
        }, gaveUp: { elapsed in
            let error = refused!
            return GeminiError(category: error.category, message: "the new key was still refused after \(Int(elapsed)) s: \(error.message)",
                               hint: "Google can take up to 5 minutes before a new key works; try again with a longer --verify-timeout",
                               status: error.status, cause: error.cause)
        })
    }
}
