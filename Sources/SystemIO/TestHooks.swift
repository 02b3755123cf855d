import Glibc

/// The end-to-end suite's hooks into the binary, each an environment variable read here and
/// nowhere else. Only a debug build reads them; a release build compiles the names out, so a
/// variable left set can never weaken or distort an installed gemvault.
public enum TestHooks {
    /// `GEMVAULT_TEST_KDF_FLOOR`: each Argon2 preset at a few KiB (`KDFParameters.Preset`).
    public static let kdfFloor: Bool = {
        #if DEBUG
        return getenv("GEMVAULT_TEST_KDF_FLOOR") != nil
        #else
        return false
        #endif
    }()

    /// `GEMVAULT_TEST_CLOCK_OFFSET`: whole seconds added to the wall clock (`Clock.now`), so a
    /// test moves time on instead of sleeping: key ids carry the second.
    public static let clockOffset: Int64 = {
        #if DEBUG
        return getenv("GEMVAULT_TEST_CLOCK_OFFSET").flatMap { Int64(String(cString: $0)) } ?? 0
        #else
        return 0
        #endif
    }()

    /// `GEMVAULT_TEST_WAIT_SPEEDUP`: how many times faster the clock of `WaitClock.standard`
    /// runs, so a two-minute wait for Google takes a second of real time and the same steps.
    public static let waitSpeedup: Double? = {
        #if DEBUG
        return getenv("GEMVAULT_TEST_WAIT_SPEEDUP").flatMap { Double(String(cString: $0)) }.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
        #else
        return nil
        #endif
    }()
}
