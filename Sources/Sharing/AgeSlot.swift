public import AgeFormat
public import VaultCore

/// Kind 5: the data key as the payload of a small binary age file to an age recipient (X25519,
/// a hybrid or tagged one, a plugin's, ssh-ed25519: whatever `RecipientList` parses), kept with
/// the recipient's text. Sealing needs no secret, so every rekey writes a new age file to the
/// recipient and passwd, rekey and recover keep the slot; any identity that opens the file
/// opens the slot (`AgeSlotKey`).
///
/// Layout: kind, added (u64), recipient length (u16), recipient (printable ASCII), age file
/// length (u16), age file (`age-encryption.org/v1`, binary, its payload the 32-byte data key).
public struct AgeSlot: SlotKind, Equatable {
    public static let kindByte: UInt8 = 5
    public static let name = "age"
    public static let nameWithArticle = "an age"
    public static let placement = SlotPlacement.additional(most: KeySlot.maxAdditionalSlots)
    /// A hybrid recipient is about 2,000 characters; a hybrid stanza's file about 1,700 bytes.
    static let maxRecipientBytes = 4096
    static let maxFileBytes = 8192
    public static let maximumBytes = 1 + 8 + 2 + maxRecipientBytes + 2 + maxFileBytes
    /// 9999-12-31T23:59:59Z: a slot's date is shown, so it must be one.
    static let latestDate: Int64 = 253_402_300_799
    static let fileStart = Array("age-encryption.org/v1\n".utf8)
    /// A vault's data key (XChaCha20-Poly1305).
    public static let dataKeyBytes = 32

    /// The recipient as `RecipientList` writes it (`age1…`, `ssh-ed25519 AAAA…`).
    public let recipient: String
    /// When the slot was added (Unix seconds).
    public let added: Int64
    let sealed: [UInt8]

    /// Makes the kind known to this process's vault parser (at the start of every command).
    public static func register() { SlotKinds.register(AgeSlot.self) }

    /// A new slot holding `dataKey`, sealed to `recipient`.
    public static func make(dataKey: SecretBytes, recipient: any AgeRecipient, added: Int64) throws(VaultError) -> AgeSlot {
        let text = recipient.text
        guard text.utf8.count <= maxRecipientBytes else { throw .slotRefused("the recipient is longer than the \(maxRecipientBytes) characters an age slot keeps") }
        do { return try sealing(dataKey, to: recipient, added: added) } catch {
            throw .slotRefused("the data key cannot be sealed to \(short(text)): \(error.detail)")
        }
    }

    /// The sealing part of `make`, its failure the bare AgeError (a rekey's warning says it in its own words).
    static func sealing(_ dataKey: SecretBytes, to recipient: any AgeRecipient, added: Int64) throws(AgeError) -> AgeSlot {
        let sealed = try AgeFile.encrypt(dataKey, to: [recipient])
        guard sealed.count <= maxFileBytes else { throw AgeError(.unsupported, "the age file is \(sealed.count) bytes, more than the \(maxFileBytes) an age slot keeps") }
        return AgeSlot(recipient: recipient.text, added: added, sealed: sealed)
    }

    public func resealed(dataKey: SecretBytes) throws(VaultError) -> AgeSlot? {
        try Self.make(dataKey: dataKey, recipient: try parsedRecipient(), added: added)
    }

    /// A rekey's way with the slot: resealed; or, when the recipient cannot be sealed to here (its
    /// plugin missing or failing), dropped with a warning saying how to add it again, so passwd,
    /// rekey, recover and slot rm never fail for it.
    public func resealing(dataKey: SecretBytes) throws(VaultError) -> SlotResealing {
        let parsed = try parsedRecipient()
        do { return .kept(try Self.sealing(dataKey, to: parsed, added: added)) } catch {
            let again = recipient.count <= 200 ? recipient : "RECIPIENT (\(Self.short(recipient)))"
            return .dropped(warning: "the age slot for \(Self.recipientType(recipient)) \(Self.short(recipient)) is dropped: the new data key cannot be sealed to it here ("
                + error.detail + "). The passphrase and the recovery code open the vault as before; 'gemvault slot add age \(again)' adds the slot again where its plugin works")
        }
    }

    private func parsedRecipient() throws(VaultError) -> any AgeRecipient {
        do { return try RecipientList.parse(recipient, origin: "the age slot's recipient").recipient } catch {
            throw .slotRefused("the age slot for \(Self.short(recipient)) cannot take the new data key: its recipient is not one this gemvault seals to")
        }
    }

    public var body: [UInt8] {
        var writer: [UInt8] = []
        withUnsafeBytes(of: UInt64(bitPattern: added).littleEndian) { writer += $0 }
        withUnsafeBytes(of: UInt16(recipient.utf8.count).littleEndian) { writer += $0 }
        writer += Array(recipient.utf8)
        withUnsafeBytes(of: UInt16(sealed.count).littleEndian) { writer += $0 }
        return writer + sealed
    }

    public var identity: [UInt8] { Array(recipient.utf8) }
    public var holder: [UInt8] { Array(recipient.utf8) }
    public var listing: SlotListing { SlotListing(keyType: Self.recipientType(recipient), fingerprint: Self.short(recipient), added: added) }

    /// The recipient's type as age names its stanza (`X25519`, `mlkem768x25519`, `p256tag`,
    /// `mlkem768p256tag`, `ssh-ed25519`), or `plugin NAME` for `age-plugin-NAME`'s.
    public static func recipientType(_ text: String) -> String {
        if text.hasPrefix("ssh-") { return String(text.prefix { $0 != " " }) }
        let hrp = text.lastIndex(of: "1").map { String(text[..<$0]).lowercased() } ?? ""
        switch hrp {
        case "age": return "X25519"
        default: return NativeRecipientKind.named(hrp)?.stanzaType ?? (hrp.hasPrefix("age1") ? "plugin " + hrp.dropFirst(4) : "unknown")
        }
    }

    /// The recipient whole when it is short (X25519's 62 characters), else its start and end:
    /// what `slot list` shows and `slot rm` takes.
    public static func short(_ text: String) -> String {
        text.count <= 80 ? text : String(text.prefix(24)) + "…" + String(text.suffix(12))
    }

    public static func parse(_ reader: inout SlotReader, _ context: SlotContext) throws -> AgeSlot {
        let added = Int64(bitPattern: try reader.read(UInt64.self))
        guard (0...latestDate).contains(added) else { throw context.damaged("says it was added at \(added), not a date between 1970 and 9999") }
        let recipientLength = Int(try reader.read(UInt16.self))
        guard (1...maxRecipientBytes).contains(recipientLength) else { throw context.damaged("says its recipient is \(recipientLength) bytes long") }
        let recipient = try reader.readBytes(recipientLength)
        guard recipient.allSatisfy({ (0x20...0x7E).contains($0) }), recipient.starts(with: Array("age1".utf8)) || recipient.starts(with: Array("ssh-".utf8)) else {
            throw context.damaged("names a recipient that is not an age1… or ssh- one")
        }
        let fileLength = Int(try reader.read(UInt16.self))
        guard (1...maxFileBytes).contains(fileLength) else { throw context.damaged("says its age file is \(fileLength) bytes long") }
        let sealed = try reader.readBytes(fileLength)
        guard sealed.starts(with: fileStart) else { throw context.damaged("holds something that is not an age file") }
        return AgeSlot(recipient: String(decoding: recipient, as: UTF8.self), added: added, sealed: sealed)
    }
}

/// What trying identities on the vault's age slots came to.
public struct AgeSlotsTried {
    /// The key of the slot that opened; nil when none did.
    public var key: AgeSlotKey?
    /// Why each slot an identity matched, or a plugin failed on, was passed over (once each).
    public var passedOver: [String] = []

    mutating func passOver(_ reason: String) { if !passedOver.contains(reason) { passedOver.append(reason) } }
}

/// What opens an age slot: the data key an identity took from one slot's age file, kept with
/// that file, so reading and then writing the vault decrypt it once (one touch of a hardware
/// key) while the slot is unchanged.
public struct AgeSlotKey: SlotKey {
    let sealed: [UInt8]
    let dataKey: SecretBytes
    /// The recipient of the slot it opened.
    public let recipient: String

    /// Each age slot of `file` tried with the identities `identities` gives for it, each on its
    /// own, until one opens. A slot an identity matches but does not open (a MAC failure, a
    /// plugin's wrong key or error) is passed over with its reason, never damage: the vault is
    /// intact and its other ways in work. Only an age file that does not parse is damaged (exit 4).
    public static func trying(_ file: VaultFile, path: String, with identities: (AgeSlot) -> [any AgeIdentity]) throws(VaultError) -> AgeSlotsTried {
        var tried = AgeSlotsTried()
        for (index, slot) in file.slots.enumerated() {
            guard let slot = slot.as(AgeSlot.self) else { continue }
            let name = "key slot \(index + 1) (age, \(AgeSlot.recipientType(slot.recipient)) \(AgeSlot.short(slot.recipient)))"
            for identity in identities(slot) {
                let opened: SecretBytes
                do { opened = try AgeFile.decrypt(slot.sealed, with: [identity]) } catch {
                    switch error.kind {
                    case .noMatch: continue
                    case .header, .armor: throw VaultError.slotsDamaged(path: path, detail: "\(name) does not parse: \(error.description)")
                    default:
                        tried.passOver("\(name) is passed over: \(error.description)")
                        continue
                    }
                }
                guard opened.count == AgeSlot.dataKeyBytes else {
                    tried.passOver("\(name) is passed over: it holds \(opened.count) bytes, not a data key")
                    continue
                }
                tried.key = AgeSlotKey(sealed: slot.sealed, dataKey: opened, recipient: slot.recipient)
                return tried
            }
        }
        return tried
    }

    public func fits(_ file: VaultFile) -> Bool { file.slots(AgeSlot.self).contains { $0.sealed == sealed } }

    public func open(_ file: VaultFile, path: String) throws(VaultError) -> SlotOpening {
        guard fits(file) else { throw .wrongPassphrase }
        return SlotOpening(dataKey: dataKey.withUnsafeBytes { SecretBytes(copying: $0) })
    }
}
