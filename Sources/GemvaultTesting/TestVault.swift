import VaultCore

/// A vault file made for one test in a `TemporaryFolder`, with its generation record beside it.
public struct TestVault {
    public static let passphrase = "correct horse battery staple"

    public let folder: TemporaryFolder
    public let store: VaultStore
    public let generations: GenerationRecord
    /// The document as made (it opens with `passphrase`), for handing its key to an agent.
    public let document: VaultDocument
    public let recoveryCode: SecretBytes

    /// `kdf`: the interactive preset by default, which the agent and the commands accept from
    /// disk; `KDFParameters.testingMinimum` where only the library reads the file (with `KDFPolicy.testing`).
    /// `google`: the Google key recorded for a key's value, as `key rotate --create` records it.
    public init(in folder: TemporaryFolder, keys: [String: String] = [:], settings: [String: String] = [:], google: [String: GoogleKeyRecord] = [:],
                kdf: KDFParameters = KDFParameters.Preset.interactive.parameters, now: Int64 = 10) throws {
        self.folder = folder
        store = VaultStore(path: folder.appending("vault/vault"))
        generations = GenerationRecord(stateDirectory: folder.appending("state"))
        let recovery = RecoveryCode.generate()
        recoveryCode = recovery
        document = try VaultDocument.create(path: store.path, passphrase: SecretBytes(utf8: Self.passphrase), recoveryCode: recovery, kdf: kdf)
        for (name, key) in keys.sorted(by: { $0.key < $1.key }) { try document.contents.setKey(name, secret: SecretBytes(utf8: key), now: now, google: google[name]) }
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) { try document.contents.setSetting(name, value: value) }
        let document = document
        let store = store
        try store.withExclusiveLock { session in try store.write(try document.sealed(), in: session) }
    }
}
