import Glibc
import SystemIO
import VaultAccess
import VaultCore

/// `exec --secret VAR=NAME` and `--secret-file VAR=NAME`: which secret goes into which
/// variable, as a value or as the path of a private file.
public struct SecretBinding: Equatable, Sendable {
    public let variable: String
    public let name: String
    public let asFile: Bool

    public init(variable: String, name: String, asFile: Bool) {
        self.variable = variable
        self.name = name
        self.asFile = asFile
    }

    /// `VAR=NAME`, or nil when it is not that shape (the variable a C identifier, the name a vault name).
    public init?(parsing text: String, asFile: Bool) {
        guard let equals = text.firstIndex(of: "=") else { return nil }
        let variable = String(text[..<equals]), name = String(text[text.index(after: equals)...])
        guard Self.isVariableName(variable), (try? VaultContents.validateName(name)) != nil else { return nil }
        self.init(variable: variable, name: name, asFile: asFile)
    }

    public static func isVariableName(_ text: String) -> Bool {
        guard let first = text.utf8.first, !(0x30...0x39).contains(first) else { return false }
        return text.utf8.allSatisfy { $0 == 0x5f || (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0) }
    }
}

/// The secrets of one `exec`, fetched one request each, and the private files some are written to.
public final class SecretHandOut {
    /// Variables set straight from secret memory.
    public private(set) var values: [(variable: String, value: SecretBytes)] = []
    /// Variables holding the path of a private file with the secret.
    public private(set) var paths: [String: String] = [:]
    private var folder: ScratchFolder?

    public init() {}

    /// Fetches each bound secret (through the session, one request per secret; else from the
    /// vault opened once). `beforePrompt` runs before a passphrase would be asked, and may refuse.
    /// `current` gives the value to hand out (a secret linked to Secret Manager may be fetched again).
    public func fetch(_ bindings: [SecretBinding], from vault: VaultAccess, runtimeFolder: () throws -> String,
                      beforePrompt: () throws -> Void, current: (ToolSecret) throws -> SecretBytes = { $0.value }) throws {
        for binding in bindings {
            guard let secret = try vault.toolSecret(binding.name, beforePrompt: beforePrompt) else { throw VaultError.secretNotFound(name: binding.name) }
            let value = try current(secret)
            guard binding.asFile else {
                values.append((binding.variable, value))
                continue
            }
            if folder == nil {
                let parent = try runtimeFolder()
                folder = try ScratchFolder.create(in: parent, prefix: "gemvault-exec-\(getpid())")
                // A run killed with SIGKILL could not remove its files: the next one does, once
                // `create` has found the parent private (no other account can swap what is in it).
                ScratchFolder.sweepOrphans(in: parent, prefix: "gemvault-exec")
            }
            paths[binding.variable] = try value.withUnsafeBytes { bytes throws(SystemError) in try folder!.write(binding.variable, bytes) }
        }
    }

    /// The private files' folder, for messages and tests.
    public var folderPath: String? { folder?.path }

    /// Wipes the files and removes them (also done when the hand-out is released).
    public func removeFiles() { folder?.remove() }
}

extension SecretHandOut {
    public enum RuntimeFolderError: Error, Equatable {
        /// Neither `$XDG_RUNTIME_DIR` nor the login manager's `/run/user/<uid>` is there.
        case none
    }

    /// Where `--secret-file` writes: `$XDG_RUNTIME_DIR` (a tmpfs under systemd), else
    /// `/run/user/<uid>` when the login manager made it private; never a folder on disk such as /tmp.
    public static func runtimeFolder(environment: [String: String]) throws(RuntimeFolderError) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") { return runtime }
        guard let login = CurrentUser.loginRuntimeFolder() else { throw .none }
        return login
    }
}
