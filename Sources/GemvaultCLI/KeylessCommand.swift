import KeyResolution
import Settings
import SystemIO
import TerminalIO

/// `auth` = `google` in the commands (Docs/keyless.md): the identity instead of a key for chat,
/// ask and models; exec's refusal; `key which`'s view of the chain.
enum KeylessCommand {
    /// The key (or the identity's stand-in), the settings, and the token source when keyless.
    static func resolve(_ resolver: KeyResolver, _ call: Invocation) throws -> (ResolvedKey, Settings, GoogleIdentityToken?) {
        let wanted: GoogleIdentityWanted
        do {
            let (key, settings) = try resolver.resolve()
            return (key, settings, nil)
        } catch let identity as GoogleIdentityWanted {
            wanted = identity
        } catch let error as KeySourceError {
            guard case .noKey = error, let credential = resolver.offeredGoogleCredential else { throw error }
            let (code, message, hint) = ErrorReport.describe(error)
            throw CommandFailure(code, message, hint: (hint.map { $0 + "; or, with no key at all, " } ?? "")
                                 + "use the Google credential \(credential): --auth google (or 'gemvault config set auth google'; Docs/keyless.md)")
        }
        let (key, settings, token) = try resolver.resolveGoogleIdentity(wanted.settings)
        Console.note("no key: using \(key.source.label) for Gemini")
        return (key, settings, token)
    }

    /// exec hands its child a key; with a Google identity there is none to hand.
    static func execRefusal(_ variable: String) -> CommandFailure {
        CommandFailure(.usage, "exec has no key to put in \(variable): auth is 'google', and gemvault does not hand a Google access token to a child",
                       hint: "let the program find the credential itself: set GOOGLE_APPLICATION_CREDENTIALS for it (Docs/keyless.md), or run exec with --auth key")
    }

    /// The chain without fetching anything; `--token` fetches one and says until when it works.
    static func which(_ resolver: KeyResolver, _ wanted: GoogleIdentityWanted, _ call: Invocation) throws {
        if call.flag(.json) { throw UsageError("--json is not offered with auth 'google' yet; the text form names the chain", command: call.command) }
        let (key, _, identity) = try resolver.resolveGoogleIdentity(wanted.settings)
        var text = "source: \(key.source.label)\n"
        if case .googleIdentity(let principal, _) = key.source { text += "ledger: google:\(principal)\n" }
        if call.flag(.showToken) {
            let token = try identity.token()
            if let until = token.expiresAt { text += "token valid until \(Output.localTime(until))\n" } else { text += "token fetched (its expiry was not given)\n" }
            if let project = identity.userProject(token) { text += "quota project: \(project)\n" }
        }
        try Console.out(text)
    }
}
