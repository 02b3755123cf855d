import VaultCore

extension ConfigError: ReportableError {
    public var report: FailureReport {
        switch self {
        case .invalidValue(let layer, let setting, let message, let fromFlag):
            FailureReport(fromFlag ? .usage : .failure, "\(layer): \(setting): \(message)")
        case .unknownSetting(let name): FailureReport(.usage, "unknown setting '\(name)'", hint: "settings: " + SettingsSchema.names.joined(separator: ", "))
        case .invalidFile(let path, let reason): FailureReport(.failure, "\(path): \(reason)")
        case .unreadable(let path, let reason): FailureReport(.failure, "cannot read \(path): \(reason)")
        case .insecureEndpoint(let url, let layer, let setting):
            FailureReport(.usage, "\(layer): \(setting): \(url) is plain http on a non-loopback host; \(setting == Setting.endpoint.name ? "the API key" : "the access token") would travel unencrypted",
                          hint: "use https, or pass --allow-insecure-endpoint if you really mean it")
        case .untrustedEndpoint(let url, let layer, let setting):
            FailureReport(.usage, "\(layer): \(setting): \(url) is not Google's and not loopback; the machine's Google access token would go there, and \(layer) is not trusted to send it away",
                          hint: "set it in the vault ('gemvault config set \(setting) URL') or give --\(String(setting.map { $0 == "_" ? "-" : $0 })) URL to the command, if you really mean it")
        case .refused(let failure): FailureReport(.failure, failure.message, hint: failure.fix)
        }
    }
}
