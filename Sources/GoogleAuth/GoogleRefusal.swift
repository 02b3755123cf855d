import GoogleHTTP
import SystemIO
import VaultCore

/// A refusal by one of Google's REST services that gemvault manages (the API Keys service,
/// Secret Manager), worded once: the message names the service, the HTTP status and Google's
/// reason; the hint comes from the one table below.
struct GoogleRefusal {
    enum Service {
        /// `userCredential`: a gcloud user's token, which can name a quota project.
        case apiKeys(userCredential: Bool)
        /// `principal` is the token's source, named when access is denied.
        case secretManager(SecretReference, principal: String)

        var name: String {
            switch self {
            case .apiKeys: "the API Keys service"
            case .secretManager: "Secret Manager"
            }
        }
    }

    let service: Service
    let status: Int
    let envelope: GoogleStatus?

    static let boundKeysForbiddenHint = "the organisation may forbid keys bound to service accounts (the policy iam.managed.disableServiceAccountApiKeyCreation): "
        + "an organisation policy administrator can allow them for this project; until then, make the key by hand and store it with 'gemvault key rotate'"
    static let scopeHint = "the token lacks the cloud-platform scope: for gcloud, log in again; on a VM, give it the cloud-platform scope"
    static let changedHint = "the key changed at Google meanwhile; run the command again"

    /// The error for a refusal of `what`.
    func error(what: String) -> GoogleError {
        let reason = envelope?.googleReason
        let reasonName = reason.map { GoogleStatus.shown($0.name) }
        let message = GoogleStatus.shown(Redaction.redact(envelope?.message ?? "no message"))
        if case .secretManager(let reference, let principal) = service, status == 403, reason != .errorInfo(.accessTokenScopeInsufficient) {
            let permission = GoogleStatus.shown(envelope?.metadata("permission") ?? "secretmanager.versions.access")
            return GoogleError(.refused, "Secret Manager refused \(what): permission \(permission) denied to \(principal)", hint:
                "grant roles/secretmanager.secretAccessor on \(reference.resource) to that principal: gcloud secrets add-iam-policy-binding \(reference.secret) --project \(reference.project) --member=… --role=roles/secretmanager.secretAccessor",
                status: status, reason: reason)
        }
        let category: GoogleError.Category = status >= 500 || status == 429 ? .network : .refused
        return GoogleError(category, "\(service.name) refused \(what): HTTP \(status)\(reasonName.map { " " + $0 } ?? ""): \(message)", hint: hint(reason),
                           status: status, reason: reason)
    }

    /// The one table: what to do, by HTTP status and Google's reason, for each service.
    func hint(_ reason: GoogleReason?) -> String? {
        switch (service, status, reason) {
        case (.apiKeys, _, _) where envelope?.says(.boundKeysForbidden) == true:
            return Self.boundKeysForbiddenHint
        case (.apiKeys, 401, _):
            return "the access token was refused: fetch a new one (for gcloud: 'gcloud auth login' or 'gcloud auth application-default login')"
        case (.secretManager, 401, _):
            return "the access token was refused: fetch a new one (for gcloud: 'gcloud auth application-default login')"
        case (.apiKeys(let userCredential), 403, .errorInfo(.serviceDisabled)?):
            return serviceDisabledHint(userCredential: userCredential)
        case (_, 403, .errorInfo(.accessTokenScopeInsufficient)?):
            return Self.scopeHint
        case (.apiKeys, 403, _):
            return "the credential needs the API Keys Admin role (roles/serviceusage.apiKeysAdmin) on the key's project"
        case (.apiKeys, 404, _):
            return "the key or project does not exist, or the credential cannot see it"
        case (.secretManager, 404, _):
            return "check the gsm:// reference (key_secret, or the key's link): the secret or the version does not exist, or it has no versions"
        case (.apiKeys, 409, _), (.apiKeys, 412, _), (.apiKeys, 400, .status(.failedPrecondition)?), (.apiKeys, 400, .status(.aborted)?):
            return Self.changedHint
        case (.secretManager, 400, .status(.failedPrecondition)?):
            return "the version is disabled or destroyed: enable it, or name another version (or none, for the latest)"
        default:
            return nil
        }
    }

    /// SERVICE_DISABLED from the API Keys service: the quota project's, or the key project's.
    private func serviceDisabledHint(userCredential: Bool) -> String {
        if envelope?.says(.quotaProject) == true {
            return "set the quota_project setting (or quota_project_id in the credential file) to a project where you may use services"
        }
        let project = envelope?.metadata("consumer").map { $0.hasPrefix("projects/") ? String($0.dropFirst(9)) : $0 }
        let enable = "gcloud services enable apikeys.googleapis.com --project \(project ?? "PROJECT")"
        return userCredential
            ? "enable the API Keys API in project \(project ?? "of the key"): \(enable); or set quota_project to a project that has it enabled"
            : "enable the API Keys API in project \(project ?? "of the key"): \(enable)"
    }
}
