import Synchronization

/// Argon2 takes seconds by design. A front end installs a handler here to show that it is
/// working; VaultCore itself never prints. The handler returns the function that ends it.
public enum KeyDerivationProgress {
    /// Why Argon2 runs: to open an existing slot, or to make a new one.
    public enum Purpose: Sendable { case unlocking, sealing }

    public typealias Begin = @Sendable (Purpose) -> @Sendable () -> Void

    private static let handler = Mutex<Begin?>(nil)

    public static func install(_ begin: @escaping Begin) { handler.withLock { $0 = begin } }

    /// Runs around every Argon2 derivation.
    static func begin(_ purpose: Purpose) -> @Sendable () -> Void {
        handler.withLock { $0 }?(purpose) ?? {}
    }
}
