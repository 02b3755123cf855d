import SystemIO

/// The user guides, Docs/NAME.md in the source tree. install.sh puts them in
/// PREFIX/share/doc/gemvault, beside PREFIX/bin/gemvault; help then names them there.
enum Guides {
    /// Every guide, in the order the man page lists them (a test compares it with Docs/*.md).
    static let names = ["cli", "configuration", "security", "session", "quick-unlock", "sharing", "fleet", "rotation",
                        "keyless", "usage", "tool-secrets", "history-format", "vault-format", "performance", "architecture"]

    /// The installed guides' folder for this binary, when it is there.
    static let installedFolder: String? = {
        let binFolder = TrustedFolder.parent(of: ProcessIdentity.executablePath).folder
        guard binFolder.hasSuffix("/bin") else { return nil }
        let folder = String(binFolder.dropLast(4)) + "/share/doc/gemvault"
        return FileStatus.of(link: folder + "/cli.md") != nil ? folder : nil
    }()

    /// `text` with each `Docs/NAME.md` naming the installed copy, when there is one.
    static func located(_ text: String) -> String {
        guard let installedFolder, text.contains("Docs/") else { return text }
        return text.replacing("Docs/", with: installedFolder + "/")
    }
}
