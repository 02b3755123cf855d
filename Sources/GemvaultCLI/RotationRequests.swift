import GoogleHTTP
import Rotation
import Settings
import SystemIO
import TerminalIO
import VaultAccess

/// What the rotation workflow says, shown as every command shows it: notes and warnings on
/// stderr, the grace period's progress line, the key re-shared after a new value, `--json`.
struct ConsoleRotationProgress: RotationProgress {
    let json: Bool
    let vault: VaultAccess

    func note(_ text: String) { Console.note(text) }
    func warning(_ text: String) { Console.warning(text) }

    func wait(_ seconds: Double, showing label: String) {
        let line = ProgressLine.start(label)
        defer { line?.stop() }
        WaitClock.standard.sleep(seconds)
    }

    func keyChanged(_ name: String) { vault.reshareAfterRotation(name: name, ConsoleShareOutput()) }

    func finished(_ report: RotationReport) throws {
        if json { try Output.json(report, schema: .keyRotate) }
    }
}

extension Invocation {
    /// The options a rotation reads, and the table's constant for each.
    private static let rotationOptions: [(RotationRequest.Option, OptionSpec)] = [
        (.ifOlderThan, .ifOlderThan), (.ifDue, .ifDue), (.keepOld, .keepOld), (.project, .project), (.serviceAccount, .serviceAccount),
        (.verifyTimeout, .verifyTimeout), (.grace, .grace), (.noWait, .noWait), (.forceClaim, .forceClaim), (.allowInsecureEndpoint, .allowInsecureEndpoint),
    ]

    /// This command as the rotation workflow takes it; `transport` is libcurl but in unit tests.
    func rotationRequest(transport: any HTTPTransport = CurlTransport()) -> RotationRequest {
        var given: [RotationRequest.Option: String] = [:]
        for (option, spec) in Self.rotationOptions where options.flag(spec) { given[option] = options.value(spec) ?? "" }
        return RotationRequest(given: given, vault: context.vault, stateHome: context.paths.stateHome, environment: context.environment,
                               home: context.paths.home, resolve: { try settings(vault: $0) },
                               progress: ConsoleRotationProgress(json: command.offers(.json) && flag(.json), vault: context.vault), transport: transport,
                               checker: ProviderChoice.keyChecker)
    }

    /// The command's settings with the vault's own (token_command, quota_project, endpoints).
    func settings(vault: [String: String]) throws -> Settings {
        var layers = try context.settingLayers(self)
        layers.vaultSettings = vault
        layers.vaultPath = context.vaultPath
        return try Settings.resolve(layers)
    }
}
