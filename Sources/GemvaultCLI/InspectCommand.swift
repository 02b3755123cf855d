import Sharing
import SystemIO
import TerminalIO
import VaultAccess

/// `inspect`: the vault's header and key slots, read without a passphrase.
extension VaultCommand {
    struct SlotInfo: Encodable {
        let kind: String
        let kdf: String
        let ops_limit: UInt32
        let mem_limit_bytes: UInt64
        @Nullable var preset: String?
        /// An ssh-agent slot's key fingerprint (its kdf is hkdf-sha256, over the agent's signature), an age slot's recipient.
        @Nullable var fingerprint: String?
    }

    struct InspectResult: Encodable {
        let path: String
        let format_version: Int
        let generation: UInt64
        let file_bytes: Int
        let payload_bytes: Int
        let slots: [SlotInfo]
        let checksum: String
        let mode: String
        @Nullable var vault_id: String?
        @Nullable var highest_generation_seen: UInt64?
    }

    static func inspect(_ call: Invocation) throws {
        let context = call.context
        let header = try context.vault.header()
        let result = InspectResult(
            path: context.vaultPath, format_version: header.formatVersion, generation: header.generation,
            file_bytes: header.fileBytes, payload_bytes: header.payloadBytes,
            slots: header.slots.map { slot in
                SlotInfo(kind: slot.kind, kdf: slot.listing.kdf == nil ? "hkdf-sha256" : "argon2id13", ops_limit: slot.opsLimit, mem_limit_bytes: slot.memLimit,
                         preset: slot.preset, fingerprint: slot.listing.fingerprint)
            },
            checksum: "ok", mode: FileStatus.of(link: context.vaultPath)?.octalMode ?? "?",
            vault_id: header.vaultID, highest_generation_seen: header.highestGenerationSeen)
        if call.flag(.json) { try Output.json(result, schema: .inspect); return }
        var text = """
        vault:          \(result.path)
        format version: \(result.format_version)
        vault id:       \(result.vault_id ?? "none (format 1; one is added on the next save)")
        generation:     \(result.generation)\(result.highest_generation_seen.map { $0 > result.generation ? " (OLDER than generation \($0), seen before: an old copy was restored)" : "" } ?? "")
        file size:      \(result.file_bytes) bytes (payload \(result.payload_bytes) bytes, padded)
        checksum:       ok
        mode:           \(result.mode)
        key slots:

        """
        for (slot, listing) in zip(result.slots, header.slots.map(\.listing)) {
            if slot.kind == AgeSlot.name, let fingerprint = slot.fingerprint {
                text += "  \(slot.kind.padding(to: 11))age file to \(listing.keyType ?? "") \(fingerprint)\n"
            } else if let fingerprint = slot.fingerprint {
                text += "  \(slot.kind.padding(to: 11))hkdf-sha256 over the ssh-agent's signature by \(fingerprint)\n"
            } else {
                text += "  \(slot.kind.padding(to: 11))argon2id13, \(slot.ops_limit) passes, \(slot.mem_limit_bytes >> 20) MiB\(slot.preset.map { " (\($0))" } ?? "")\n"
            }
        }
        try Console.out(text)
    }
}
