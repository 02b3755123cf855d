import Conversations
import GoogleHTTP
import GoogleKeys

/// Turns Google's error bodies and finish reasons into `GeminiError`s a person can act on.
///
/// Google's `DebugInfo` details can quote part of the key ("Invalid API key: AIzv…"), so
/// no text from `details` is shown (but a Help link), and key-shaped words are cut out.
public struct ErrorMapper: Sendable {
    /// Where the key came from, for "the key from X was rejected".
    public var keyOrigin: String
    /// How to replace a key from that source.
    public var keyReplaceHint: String
    /// The key's shape: a refusal means something else for a retired standard key.
    public var keyKind: GoogleKeyKind
    public var model: String
    public var apiVersion: String
    /// Where to look for the models a key can use: a command, or the chat's `/models`.
    public var modelsAdvice = "run 'gemvault models' to list the models your key can use"
    /// The request carried a Google identity's access token, not a key (`auth` = `google`).
    public var identity = false
    /// The option to change when a 400 names a request field (Gemini refuses a field the model lacks).
    public var optionAdvice: [OptionAdvice] = []

    /// Words of Google's message (lowercase) that point at one option, and what to do about it.
    public struct OptionAdvice: Sendable {
        public let words: [String]
        public let hint: String
        /// The hint goes on with the thinking levels the model takes, when gemvault knows them.
        public let namesThinkingLevels: Bool

        public init(words: [String], hint: String, namesThinkingLevels: Bool = false) {
            self.words = words
            self.hint = hint
            self.namesThinkingLevels = namesThinkingLevels
        }
    }

    /// An advice's hint, with the levels `model` takes when the advice asks for them.
    func hint(_ advice: OptionAdvice) -> String {
        guard advice.namesThinkingLevels, let levels = ModelCatalog.levels(of: model) else { return advice.hint }
        let taken = levels.isEmpty ? "\(model) takes a thinking budget (--think-budget), not a level" : "\(model) takes the thinking levels \(levels.joined(separator: ", "))"
        return advice.hint + " (\(taken))"
    }

    public init(keyOrigin: String, keyReplaceHint: String, keyKind: GoogleKeyKind, model: String, apiVersion: String) {
        self.keyOrigin = keyOrigin
        self.keyReplaceHint = keyReplaceHint
        self.keyKind = keyKind
        self.model = model
        self.apiVersion = apiVersion
    }

    /// The same, for a request to `model` (the chat's `/model` changes it after the start).
    public func about(_ model: String) -> ErrorMapper {
        var copy = self
        copy.model = model
        return copy
    }

    /// What a user of a standard key has to do, whatever error Google chose to send.
    var migrationHint: String {
        "Google no longer accepts standard (AIza…) keys: create an auth key at https://aistudio.google.com/apikey, then \(keyReplaceHint)"
    }

    /// An HTTP error status with its body (or an `{"error":…}` received inside a stream).
    public func apiError(status: Int, body: [UInt8]) -> GeminiError { apiError(status: status, envelope: GoogleStatus.decode(body)) }

    /// Decisions rest on the `ErrorInfo` reason; message text is read only where Google
    /// sends no reason (`authenticationReason`).
    func apiError(status: Int, envelope: GoogleStatus?) -> GeminiError {
        let code = envelope?.code ?? status
        let statusName = envelope?.status ?? "HTTP \(status)"
        let message = Self.redact(envelope?.message ?? "no error message")
        let reasons = envelope?.reasons ?? []
        let shown = "(\(code) \(reasons.first?.name ?? statusName))"
        if let refusal = keyRefusal(code: code, reasons: reasons, shown: shown, envelope: envelope) { return refusal }
        return byStatus(code: code, statusName: statusName, message: message, reasons: reasons, shown: shown, envelope: envelope)
    }

    /// The login that grants Gemini's scopes (a plain `application-default login` grants none).
    public static let scopedLogin = "gcloud auth application-default login --scopes=https://www.googleapis.com/auth/cloud-platform,https://www.googleapis.com/auth/generative-language.retriever"

    /// Step 1 with a token: a missing scope, a user's token without a quota project, a token refused.
    private func identityRefusal(code: Int, reasons: [GoogleErrorReason], shown: String, envelope: GoogleStatus?) -> GeminiError? {
        if reasons.contains(.accessTokenScopeInsufficient) {
            return GeminiError(category: .refused, message: "Gemini refused the access token of \(keyOrigin) \(shown): it lacks the generative-language scope",
                               hint: "for gcloud's credentials, log in with Gemini's scopes: \(Self.scopedLogin); for a service account, its token is asked with them already",
                               status: code, cause: .google(.accessTokenScopeInsufficient))
        }
        if reasons.contains(.serviceDisabled), envelope?.says(.quotaProject) == true {
            return GeminiError(category: .refused, message: "Gemini refused the user credential of \(keyOrigin) \(shown): a user's token needs a quota project",
                               hint: "set one: gemvault config set quota_project PROJECT (or export GOOGLE_CLOUD_QUOTA_PROJECT=PROJECT); you need serviceusage.services.use on it",
                               status: code, cause: .google(.serviceDisabled))
        }
        if code == 401 {
            return GeminiError(category: .refused, message: "Gemini refused the access token of \(keyOrigin) \(shown)",
                               hint: "the token may have expired or been revoked; an unlocked session keeps its token until five minutes before it expires, so run 'gemvault lock' to forget it, then check the credential with: gemvault key which --auth google --token",
                               status: code, cause: reasons.first.map { GeminiError.Cause.google($0) } ?? .status("UNAUTHENTICATED"))
        }
        return nil
    }

    /// Step 1: what Google's `ErrorInfo` reason says of the key (or of the project it belongs to).
    private func keyRefusal(code: Int, reasons: [GoogleErrorReason], shown: String, envelope: GoogleStatus?) -> GeminiError? {
        if identity { return identityRefusal(code: code, reasons: reasons, shown: shown, envelope: envelope) }
        if let reason = Self.authenticationReason(code: code, reasons: reasons, envelope: envelope) {
            if keyKind == .standard {
                return GeminiError(category: .refused, message: "the standard API key from \(keyOrigin) was refused \(shown): Google stopped accepting standard keys for the Gemini API in September 2026",
                                   hint: migrationHint, status: code, cause: .google(reason))
            }
            return GeminiError(category: .refused, message: "the auth key from \(keyOrigin) was refused \(shown): Google did not accept it as bound to a working service account",
                               hint: "in the Google Cloud console (APIs & Services > Credentials), check that the key's service account still exists and is enabled, and that the key belongs to the project you expect; or create a new key at https://aistudio.google.com/apikey",
                               status: code, cause: .google(reason))
        }
        if reasons.contains(.apiKeyInvalid) {
            if keyKind == .standard {
                return GeminiError(category: .refused, message: "the standard API key from \(keyOrigin) was rejected \(shown): Google rejects standard keys since September 2026",
                                   hint: migrationHint, status: code, cause: .google(.apiKeyInvalid))
            }
            return GeminiError(category: .refused, message: "the API key from \(keyOrigin) was rejected by Gemini \(shown): it is wrong, revoked or deleted",
                               hint: keyReplaceHint, status: code, cause: .google(.apiKeyInvalid))
        }
        if reasons.contains(.apiKeyServiceBlocked) {
            return GeminiError(category: .refused, message: "the key from \(keyOrigin) may not call the Gemini API \(shown): its API restrictions leave out the Generative Language API",
                               hint: "in the Google Cloud console (APIs & Services > Credentials > the key > API restrictions), allow \"Generative Language API\" (\"Gemini for Google Cloud API\" is a different one)",
                               status: code, cause: .google(.apiKeyServiceBlocked))
        }
        if reasons.contains(.serviceDisabled) {
            let link = envelope?.helpLink
            return GeminiError(category: .refused, message: "the Gemini API (Generative Language API) is not enabled for the key's project \(shown)",
                               hint: "enable it at \(link ?? "the Google Cloud console (APIs & Services > Library > Generative Language API)"); it takes a few minutes to reach Google's servers, then try again",
                               status: code, cause: .google(.serviceDisabled))
        }
        return nil
    }

    /// Step 2: without a reason gemvault acts on, the HTTP status decides.
    private func byStatus(code: Int, statusName: String, message: String, reasons: [GoogleErrorReason], shown: String, envelope: GoogleStatus?) -> GeminiError {
        switch code {
        case 401:
            return GeminiError(category: .refused, message: "the key from \(keyOrigin) was not accepted \(shown): \(message)",
                               hint: keyReplaceHint, status: code, cause: reasons.first.map { .google($0) } ?? .status(statusName))
        case 403:
            return GeminiError(category: .refused, message: "permission denied \(shown): \(message)",
                               hint: "check that the key from \(keyOrigin) may call the Gemini API", status: code, cause: reasons.first.map { .google($0) } ?? .status(statusName))
        case 404:
            return GeminiError(category: .refused, message: "model '\(model)' was not found for API version \(apiVersion) (\(code) \(statusName))",
                               hint: modelsAdvice, status: code, cause: .status(statusName))
        case 429:
            let final = envelope?.isDailyQuota ?? false
            return GeminiError(category: .refused,
                               message: final ? "the daily quota is used up (429 \(statusName)): \(message)" : "rate limited (429 \(statusName)): \(message)",
                               hint: final ? "wait for the quota to reset or use a key with a higher tier" : "wait a moment and try again",
                               status: code, cause: .status(statusName), serverMessage: message)
        case 499, 500...599:
            return GeminiError(category: .network, message: "the Gemini server failed (\(code) \(statusName)): \(message)",
                               hint: "try again later", status: code, cause: .status(statusName), serverMessage: message)
        default:
            // A refused field has no ErrorInfo reason: only Google's message names it.
            let advice = code == 400 ? optionAdvice.first { envelope?.messageMentions(any: $0.words) == true } : nil
            return GeminiError(category: .refused, message: "Gemini refused the request (\(code) \(statusName)): \(message)",
                               hint: advice.map(hint), status: code, cause: .status(statusName), serverMessage: message)
        }
    }

    /// A response that ended for a reason other than STOP, or a prompt that was blocked.
    /// Google's `finishMessage` says why in its own words, so it is shown; `thoughtTokens` with
    /// no text means thinking used the whole output budget.
    public func finishProblem(_ finish: FinishReason?, finishMessage: String? = nil, thoughtTokens: Int? = nil,
                              anyText: Bool = true) -> GeminiError? {
        guard let finish, let problem = finishProblem(finish, thinkingOnly: !anyText && (thoughtTokens ?? 0) > 0,
                                                      thoughtTokens: thoughtTokens ?? 0) else { return nil }
        guard let finishMessage, !finishMessage.allSatisfy(\.isWhitespace) else { return problem }
        let said = Self.redact(finishMessage)
        return GeminiError(category: problem.category, message: problem.message + "; Google says: " + said, hint: problem.hint,
                           status: problem.status, cause: problem.cause, serverMessage: said)
    }

    private func finishProblem(_ finish: FinishReason, thinkingOnly: Bool, thoughtTokens: Int) -> GeminiError? {
        switch finish {
        case .complete:
            return nil
        case .blocked(let blockReason):
            return GeminiError(category: .refused, message: "the prompt was blocked by Gemini (\(blockReason))",
                               hint: "rephrase the prompt", cause: .finish(finish))
        case .maxTokens where thinkingOnly:
            return GeminiError(category: .refused,
                               message: "the model spent the whole output token limit thinking (\(thoughtTokens) thought tokens) and wrote no answer (MAX_TOKENS)",
                               hint: "thinking counts against max_output_tokens: raise it well above the thinking the question needs, or ask something narrower",
                               cause: .finish(finish))
        case .maxTokens:
            return GeminiError(category: .refused, message: "the reply was cut off at the output token limit (MAX_TOKENS)",
                               hint: "raise max_output_tokens, or ask for a shorter answer", cause: .finish(finish))
        case .safety:
            return GeminiError(category: .refused, message: "the reply was stopped by Gemini's safety filters (SAFETY)",
                               hint: "rephrase the prompt", cause: .finish(finish))
        case .recitation:
            return GeminiError(category: .refused, message: "the reply was stopped because it recited source material (RECITATION)",
                               hint: "ask for a summary in your own words", cause: .finish(finish))
        case .other(let other):
            return GeminiError(category: .refused, message: "the reply ended early (\(other))", cause: .finish(finish))
        }
    }

    /// The reason of a refused credential, or nil. Google's 401 for a key it takes for the wrong
    /// kind of credential can arrive without an `ErrorInfo`; then, and only then, its message
    /// tells it apart.
    static func authenticationReason(code: Int, reasons: [GoogleErrorReason], envelope: GoogleStatus?) -> GoogleErrorReason? {
        if reasons.contains(.accessTokenTypeUnsupported) { return .accessTokenTypeUnsupported }
        if code == 401, reasons.isEmpty, envelope?.says(.expectsOAuthToken) == true { return .accessTokenTypeUnsupported }
        return nil
    }

    /// Drops any word that holds something shaped like a Google key or token, even in part,
    /// and shortens very long messages.
    static func redact(_ message: String) -> String { GoogleStatus.shown(message) }
}

