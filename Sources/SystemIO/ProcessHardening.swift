import CSystemShims

/// Process-wide protections that must be in place before any secret is read.
public enum ProcessHardening {
    /// Sets RLIMIT_CORE to 0 and clears the dumpable flag, which also keeps other processes of
    /// the same user from attaching with ptrace or reading /proc/<pid>/mem and environ.
    @discardableResult
    public static func disableCoreDumps() -> Bool { gv_disable_core_dumps() == 0 }

    public static var isDumpable: Bool { gv_is_dumpable() == 1 }
}
