public import VaultCore

/// Writing and reading age v1 files (age-encryption.org/v1), binary or armored.
public enum AgeFile {
    static let fileKeyBytes = 16
    private static let headerLabel = Array("header".utf8)

    /// `plaintext` encrypted to every recipient.
    public static func encrypt(_ plaintext: SecretBytes, to recipients: [any AgeRecipient], armor: Bool = false) throws(AgeError) -> [UInt8] {
        precondition(!recipients.isEmpty, "an age file needs at least one recipient")
        let fileKey = SecretBytes.random(count: fileKeyBytes)
        let stanzas = try wrapAll(fileKey, to: recipients)
        let mac = headerMAC(AgeHeader.macInput(of: stanzas), fileKey: fileKey)
        let binary = AgeHeader.serialized(stanzas, mac: mac.withUnsafeBytes { Array($0) }) + (try AgeStream.seal(plaintext, fileKey: fileKey))
        return armor ? AgeArmor.armored(binary) : binary
    }

    /// The plaintext of `file` (binary, or armored when it starts so), opened by the first identity
    /// that matches a stanza.
    public static func decrypt(_ file: [UInt8], with identities: [any AgeIdentity]) throws(AgeError) -> SecretBytes {
        try decryptBinary(AgeArmor.isArmored(file) ? try AgeArmor.binary(file) : file, with: identities)
    }

    /// `decrypt` of an armored file only, as the test vectors that say `armored: yes` require.
    public static func decryptArmored(_ file: [UInt8], with identities: [any AgeIdentity]) throws(AgeError) -> SecretBytes {
        try decryptBinary(try AgeArmor.binary(file), with: identities)
    }

    /// Whether `file` is ASCII-armored (after leading white space).
    public static func isArmored(_ file: [UInt8]) -> Bool { AgeArmor.isArmored(file) }

    private static func decryptBinary(_ file: [UInt8], with identities: [any AgeIdentity]) throws(AgeError) -> SecretBytes {
        let header = try AgeHeader.parse(file)
        if header.stanzas.contains(where: { $0.type == "scrypt" }) {
            // A passphrase stanza must be alone: otherwise a recipient could have changed the file.
            guard header.stanzas.count == 1 else { throw AgeError(.header, "a passphrase (scrypt) stanza is not alone in the header") }
            throw AgeError(.unsupported, "the file is encrypted with a passphrase (age -p), not to a recipient")
        }
        var fileKey: SecretBytes?
        for identity in identities {
            if let found = try identity.unwrap(header.stanzas) {
                fileKey = found
                break
            }
        }
        guard let fileKey else { throw AgeError(.noMatch, "no identity given matches a recipient of the file") }
        let expected = headerMAC(header.macInput, fileKey: fileKey)
        guard expected.isEqual(to: SecretBytes(copying: header.mac)) else { throw AgeError(.mac, "the header's MAC does not verify: the header was changed") }
        return try AgeStream.open(file[header.payloadOffset...], fileKey: fileKey)
    }

    /// HMAC-SHA-256 of the header under HKDF(file key, "header"). Not secret once computed.
    private static func headerMAC(_ macInput: [UInt8], fileKey: SecretBytes) -> SecretBytes {
        let key = HKDFSHA256.derive(secret: fileKey, salt: [], info: headerLabel, length: HMACSHA256.bytes)
        return HMACSHA256.mac(key: key, macInput)
    }
}
