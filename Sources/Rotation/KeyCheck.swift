import GoogleAuth
import GoogleHTTP
import VaultCore

/// How a new key made by `key rotate --create` is checked: with the cheapest Gemini call its
/// API restrictions allow (listing the models, else counting tokens, else a one-token reply),
/// through Google's propagation window.
struct KeyCheck {
    static let geminiService = "generativelanguage.googleapis.com"


    /// The calls the key may make, cheapest first.
    let probes: [KeyProbe]

    /// Refuses, before anything is made, a key whose restrictions allow no call gemvault can check it with.
    init(restrictions: JSONValue, name: String) throws {
        guard case .array(let targets)? = restrictions["apiTargets"], !targets.isEmpty else {
            probes = KeyProbe.allCases
            return
        }
        let services = targets.compactMap { $0["service"]?.stringValue }
        guard let gemini = targets.first(where: { $0["service"]?.stringValue == Self.geminiService }) else {
            throw GoogleError(.refused, "the key of '\(name)' is restricted to \(services.joined(separator: ", ")), not to the Generative Language API: Gemini would refuse a copy of it",
                              hint: "add \(Self.geminiService) to the key's API restrictions in the Cloud console, or rotate by hand with 'gemvault key rotate \(name)'")
        }
        guard case .array(let methods)? = gemini["methods"], !methods.isEmpty else {
            probes = KeyProbe.allCases
            return
        }
        let patterns = methods.compactMap(\.stringValue)
        probes = KeyProbe.allCases.filter { probe in patterns.contains { Self.matches($0, probe) } }
        guard !probes.isEmpty else {
            throw GoogleError(.refused, "the key of '\(name)' may call only \(patterns.joined(separator: ", ")) of the Generative Language API, and gemvault checks a new key with ListModels, CountTokens or GenerateContent",
                              hint: "allow one of those methods in the key's API restrictions, or rotate by hand with 'gemvault key rotate \(name)'")
        }
    }

    /// A method selector: a full or short name, `*` as its last character a wildcard.
    static func matches(_ pattern: String, _ probe: KeyProbe) -> Bool {
        let names = [probe.rawValue, probe.shortName, geminiService + "." + probe.shortName]
        if pattern.hasSuffix("*") { return names.contains { $0.hasPrefix(pattern.dropLast()) } }
        return names.contains(pattern)
    }

    /// Tries the key until Google has propagated it or `limit` seconds have passed, with the
    /// checker the command supplies for the settings the key will be used with.
    func verify(_ key: SecretBytes, link: GoogleRotation.GoogleLink, limit: Double) throws {
        let checker = try link.call.checker(link.settings, link.transport)
        try checker.verify(key, probes: probes, limit: limit, note: { link.call.progress.note($0) })
    }
}
