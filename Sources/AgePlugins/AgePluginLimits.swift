public import SystemIO

/// The bounds on one plugin run: no plugin, broken or hostile, makes gemvault wait forever or
/// hold unbounded memory.
public struct AgePluginLimits: Sendable {
    /// Seconds the plugin may take to answer each command or read each of ours: generous, as a
    /// hardware key waits for a touch or a PIN (GEMVAULT_AGE_PLUGIN_TIMEOUT sets it, 1 to 3600).
    public var stepSeconds: Double
    /// Seconds one whole run may last, prompts answered included.
    public var runSeconds: Double
    /// The longest command line (a stanza's arguments: an ML-KEM ciphertext is 1,452 characters).
    public var lineBytes = 16 << 10
    /// The largest command body, decoded.
    public var bodyBytes = 64 << 10
    /// The most commands the plugin may send in one run (a plugin repeating `msg` stops there).
    public var commandLimit = 4096
    /// How much of its stderr is kept to show when it fails.
    public var errorBytes = 4096
    public var clock: WaitClock

    public static let defaultStepSeconds = 120.0
    public static let defaultRunSeconds = 900.0

    public init(stepSeconds: Double = defaultStepSeconds, runSeconds: Double = defaultRunSeconds, clock: WaitClock = .standard) {
        self.stepSeconds = stepSeconds
        self.runSeconds = runSeconds
        self.clock = clock
    }

    /// The limits `environment` asks for: GEMVAULT_AGE_PLUGIN_TIMEOUT sets the step (and the
    /// run is at least five steps).
    public static func from(_ environment: [String: String]) -> AgePluginLimits {
        guard let step = environment["GEMVAULT_AGE_PLUGIN_TIMEOUT"].flatMap(Double.init), step.isFinite else { return AgePluginLimits() }
        let bounded = min(max(step, 1), 3600)
        return AgePluginLimits(stepSeconds: bounded, runSeconds: max(defaultRunSeconds, 5 * bounded))
    }
}
