import Foundation
import Testing

/// The commands reach the vault through VaultAccess only: VaultCore's file, format and slot
/// APIs appear in the CLI's sources only where a vault is made (createVault, for init and the first run) or
/// its backup restored, so the door cannot drift back to two dozen sites.
@Suite struct VaultDoorTests {
    /// The names that mean handling the file, its format or its slots directly.
    static let fileAPIs = #"\b(VaultStore|VaultFileAccess|VaultFile|VaultDocument|KeySlot|PassphraseKey|RecoveryKey|RecoveryCode|GenerationRecord|RollbackGuard|KDFPolicy|WriteSession|withExclusiveLock|readBackup|keepAside|deriveKey|keyEncryptionKey|readFile|kdfPolicy)\b|vault\.store\b|vault\.file\b"#

    static func usesFileAPI(_ line: String) -> Bool { line.range(of: fileAPIs, options: .regularExpression) != nil }

    /// Where they may appear: file, then the functions in it.
    static let allowed = [
        "VaultCommands.swift": ["createVault", "confirmReplacing", "restoreBackup"],
    ]

    static var sources: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/GemvaultCLI")
    }

    /// The text with the allowed functions' bodies and the comments blanked, lines kept.
    static func checkedText(_ text: String, allowing functions: [String]) -> [String] {
        var lines = text.components(separatedBy: "\n").map { line in
            line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? line
        }
        for function in functions {
            guard let start = lines.firstIndex(where: { $0.contains("func \(function)(") || $0.contains("func \(function)<") }) else {
                Issue.record("no function \(function) to allow")
                continue
            }
            var depth = 0
            var opened = false
            var index = start
            while index < lines.count {
                for character in lines[index] {
                    if character == "{" { depth += 1; opened = true }
                    if character == "}" { depth -= 1 }
                }
                lines[index] = ""
                if opened && depth == 0 { break }
                index += 1
            }
        }
        return lines
    }

    @Test func theCommandsUseVaultAccessOnly() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).filter { $0.hasSuffix(".swift") }.sorted()
        #expect(files.count > 10)
        var found: [String] = []
        for name in files {
            let text = try String(contentsOf: Self.sources.appendingPathComponent(name), encoding: .utf8)
            for (number, line) in Self.checkedText(text, allowing: Self.allowed[name] ?? []).enumerated() where Self.usesFileAPI(line) {
                found.append("\(name):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(found.isEmpty, "VaultCore's file, format or slot API outside init and restore-backup:\n\(found.joined(separator: "\n"))")
    }

    @Test func theScanSeesADirectUse() {
        let text = "func other() {\n    let file = try context.vault.readFile()\n}\nfunc initialize() {\n    try store.withExclusiveLock { _ in }\n}\n"
        let flagged = Self.checkedText(text, allowing: ["initialize"]).filter(Self.usesFileAPI)
        #expect(flagged == ["    let file = try context.vault.readFile()"])
    }
}
