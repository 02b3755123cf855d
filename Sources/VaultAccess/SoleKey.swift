import VaultCore

extension VaultAccess {
    /// When no key was named and the vault has none by the default name: its only key, if it
    /// holds exactly one, and the names of those it holds (for the error that lists them).
    public func soleKey(markUsed: Bool) throws -> (key: StoredKey?, held: [String]) {
        let held = try keySummaries().map(\.name)
        guard held.count == 1 else { return (nil, held) }
        return (try key(held[0], markUsed: markUsed), held)
    }
}
