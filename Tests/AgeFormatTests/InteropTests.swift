import AgeFormat
import Foundation
import GemvaultTesting
import Testing
import VaultCore

extension TemporaryFolder {
    /// Writes `bytes` to `name` in the folder with `mode`; returns its path.
    func file(_ name: String, _ bytes: [UInt8], mode: Int = 0o600) throws -> String {
        let target = appending(name)
        try #require(FileManager.default.createFile(atPath: target, contents: Data(bytes), attributes: [.posixPermissions: mode]))
        return target
    }
}

/// Runs a real program (Debian's `age`, `ssh-keygen`) and returns its exit status and output.
func run(_ program: String, _ arguments: [String], input: [UInt8] = []) throws -> (status: Int32, output: [UInt8], errors: String) {
    try #require(FileManager.default.isExecutableFile(atPath: program), "\(program) is needed: ./test installs Debian's age and openssh-client (as root)")
    let process = Process()
    process.executableURL = URL(fileURLWithPath: program)
    process.arguments = arguments
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    stdin.fileHandleForWriting.write(Data(input))
    try stdin.fileHandleForWriting.close()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    let errors = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, [UInt8](output), String(decoding: errors, as: UTF8.self))
}

func text(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { String(decoding: $0, as: UTF8.self) } }

@Suite struct InteropTests {
    static let message = "AQ.Ab8RN6Lexample-key-for-interop\n"

    @Test(arguments: [false, true]) func realAgeDecryptsWhatWeWriteToAnX25519Recipient(armored: Bool) throws {
        let folder = TemporaryFolder("age")
        let identity = X25519Identity.generate()
        let identityFile = try folder.file("id.txt", identity.encoded.withUnsafeBytes { Array($0) } + [10])
        let encrypted = try AgeFile.encrypt(SecretBytes(utf8: Self.message), to: [identity.recipient], armor: armored)
        let file = try folder.file("share.age", encrypted)
        let result = try run("/usr/bin/age", ["-d", "-i", identityFile, file])
        #expect(result.status == 0, "\(result.errors)")
        #expect(String(decoding: result.output, as: UTF8.self) == Self.message)
        // age-keygen's own reading of the identity gives the recipient we print.
        let derived = try run("/usr/bin/age-keygen", ["-y", identityFile])
        #expect(String(decoding: derived.output, as: UTF8.self) == identity.recipient.text + "\n")
    }

    @Test func weDecryptWhatRealAgeWritesToUsBinaryAndArmored() throws {
        let folder = TemporaryFolder("age")
        let identity = X25519Identity.generate()
        let recipientsFile = try folder.file("recipients", Array("# a comment\n\n\(identity.recipient.text)\n".utf8))
        for arguments in [["-r", identity.recipient.text], ["-R", recipientsFile, "-a"]] {
            let made = try run("/usr/bin/age", ["-e"] + arguments, input: Array(Self.message.utf8))
            #expect(made.status == 0, "\(made.errors)")
            #expect(text(try AgeFile.decrypt(made.output, with: [identity])) == Self.message)
        }
    }

    @Test func anSSHEd25519KeyWorksBothWaysWithRealAge() throws {
        let folder = TemporaryFolder("age")
        let made = try run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "colleague@lab", "-f", folder.path + "/id_ed25519"])
        #expect(made.status == 0, "\(made.errors)")
        let publicLine = try String(contentsOfFile: folder.path + "/id_ed25519.pub", encoding: .utf8)
        let recipient = try #require(SSHEd25519Recipient(parsing: publicLine.trimmingCharacters(in: .newlines)))
        let privateKey = SecretBytes(copying: [UInt8](try #require(FileManager.default.contents(atPath: folder.path + "/id_ed25519"))))
        let identity = try SSHEd25519Identity(openSSHPrivateKey: privateKey)
        #expect(identity.recipient == recipient)

        // Ours, read by age with the ssh key.
        let ours = try folder.file("ours.age", try AgeFile.encrypt(SecretBytes(utf8: Self.message), to: [recipient, X25519Identity.generate().recipient]))
        let read = try run("/usr/bin/age", ["-d", "-i", folder.path + "/id_ed25519", ours])
        #expect(read.status == 0, "\(read.errors)")
        #expect(String(decoding: read.output, as: UTF8.self) == Self.message)

        // age's, to the .pub file, read by us.
        let theirs = try run("/usr/bin/age", ["-e", "-R", folder.path + "/id_ed25519.pub"], input: Array(Self.message.utf8))
        #expect(theirs.status == 0, "\(theirs.errors)")
        #expect(text(try AgeFile.decrypt(theirs.output, with: [identity])) == Self.message)
    }

    /// A key `ssh-keygen` protected with a passphrase: the right one opens it, as it opens a
    /// file real age encrypted to its .pub; a missing or wrong one is said to be wrong.
    @Test(arguments: [["-Z", "aes256-ctr"], ["-Z", "aes128-ctr", "-a", "2"], ["-Z", "aes192-ctr", "-a", "3"], []])
    func aPassphraseProtectedSSHKeyOpensWithItsPassphrase(options: [String]) throws {
        let folder = TemporaryFolder("age")
        let made = try run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "correct horse", "-f", folder.path + "/id_ed25519"] + options)
        #expect(made.status == 0, "\(made.errors)")
        let privateKey = SecretBytes(copying: [UInt8](try #require(FileManager.default.contents(atPath: folder.path + "/id_ed25519"))))
        #expect(try SSHEd25519Identity.needsPassphrase(privateKey))
        for wrong in [nil, SecretBytes(utf8: "correct hors"), SecretBytes(utf8: "correct horse ")] {
            let error = try #require(throws: AgeError.self) { try SSHEd25519Identity(openSSHPrivateKey: privateKey, passphrase: wrong) }
            #expect(error.kind == .wrongPassphrase)
        }
        let identity = try SSHEd25519Identity(openSSHPrivateKey: privateKey, passphrase: SecretBytes(utf8: "correct horse"))
        let publicLine = try String(contentsOfFile: folder.path + "/id_ed25519.pub", encoding: .utf8)
        #expect(identity.recipient == SSHEd25519Recipient(parsing: publicLine.trimmingCharacters(in: .newlines)))
        let theirs = try run("/usr/bin/age", ["-e", "-R", folder.path + "/id_ed25519.pub"], input: Array(Self.message.utf8))
        #expect(text(try AgeFile.decrypt(theirs.output, with: [identity])) == Self.message)
    }

    @Test func anUnprotectedKeyNeedsNoPassphraseAndAnotherCipherIsNamed() throws {
        let folder = TemporaryFolder("age")
        _ = try run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", folder.path + "/plain"])
        #expect(try !SSHEd25519Identity.needsPassphrase(SecretBytes(copying: [UInt8](try #require(FileManager.default.contents(atPath: folder.path + "/plain"))))))
        _ = try run("/usr/bin/ssh-keygen", ["-q", "-t", "ed25519", "-N", "pass", "-Z", "chacha20-poly1305@openssh.com", "-f", folder.path + "/chacha"])
        let chacha = SecretBytes(copying: [UInt8](try #require(FileManager.default.contents(atPath: folder.path + "/chacha"))))
        // Refused before anyone is asked for a passphrase.
        let error = try #require(throws: AgeError.self) { try SSHEd25519Identity.needsPassphrase(chacha) }
        #expect(error.kind == .unsupported)
        #expect(error.detail.contains("chacha20-poly1305@openssh.com") && error.detail.contains("ssh-keygen -p -Z aes256-ctr"))
    }
}

/// Hand-made openssh-key-v1 files, for what ssh-keygen would never write.
@Suite struct HostileSSHKeyTests {
    static func string(_ bytes: [UInt8]) -> [UInt8] {
        let n = UInt32(bytes.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + bytes
    }

    static func keyFile(cipher: String, rounds: UInt32, section: Int) -> SecretBytes {
        let options = string([UInt8](repeating: 1, count: 16)) + [UInt8(rounds >> 24), UInt8(rounds >> 16 & 0xff), UInt8(rounds >> 8 & 0xff), UInt8(rounds & 0xff)]
        let publicWire = string(Array("ssh-ed25519".utf8)) + string([UInt8](repeating: 9, count: 32))
        let blob = Array("openssh-key-v1".utf8) + [0] + string(Array(cipher.utf8)) + string(Array("bcrypt".utf8)) + string(options)
            + [0, 0, 0, 1] + string(publicWire) + string([UInt8](repeating: 0, count: section))
        let text = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + Data(blob).base64EncodedString() + "\n-----END OPENSSH PRIVATE KEY-----\n"
        return SecretBytes(utf8: text)
    }

    @Test func tooManyRoundsAreRefusedBeforeAnyPassphraseIsAsked() {
        let error = #expect(throws: AgeError.self) { try SSHEd25519Identity.needsPassphrase(Self.keyFile(cipher: "aes256-ctr", rounds: 100_000, section: 16)) }
        #expect(error?.kind == .unsupported)
        #expect(throws: Never.self) { try SSHEd25519Identity.needsPassphrase(Self.keyFile(cipher: "aes256-ctr", rounds: 1000, section: 16)) }
    }

    @Test func aSectionThatIsNotWholeBlocksIsDamagedNotAWrongPassphrase() {
        let error = #expect(throws: AgeError.self) {
            try SSHEd25519Identity(openSSHPrivateKey: Self.keyFile(cipher: "aes128-ctr", rounds: 1, section: 17), passphrase: SecretBytes(utf8: "x"))
        }
        #expect(error?.kind == .header)
    }
}

@Suite struct RoundTripTests {
    @Test(arguments: [0, 1, 65_535, 65_536, 65_537, 200_000]) func anyLengthRoundTrips(length: Int) throws {
        let identity = X25519Identity.generate()
        let plaintext = SecretBytes.random(count: length)
        for armor in [false, true] {
            let file = try AgeFile.encrypt(plaintext, to: [identity.recipient], armor: armor)
            #expect(try AgeFile.decrypt(file, with: [identity]).isEqual(to: plaintext))
        }
    }

    @Test func everyRecipientCanOpenAndNoOneElse() throws {
        let alice = X25519Identity.generate(), bob = X25519Identity.generate(), eve = X25519Identity.generate()
        let file = try AgeFile.encrypt(SecretBytes(utf8: "k"), to: [alice.recipient, bob.recipient])
        #expect(text(try AgeFile.decrypt(file, with: [alice])) == "k")
        #expect(text(try AgeFile.decrypt(file, with: [eve, bob])) == "k")
        let error = try #require(throws: AgeError.self) { try AgeFile.decrypt(file, with: [eve]) }
        #expect(error.kind == .noMatch)
        // One stanza per recipient.
        #expect(String(decoding: file, as: UTF8.self).components(separatedBy: "\n-> X25519 ").count == 3)
    }

    @Test func aChangedByteAnywhereIsCaught() throws {
        let identity = X25519Identity.generate()
        let file = try AgeFile.encrypt(SecretBytes(utf8: "a key"), to: [identity.recipient])
        for index in file.indices {
            var damaged = file
            damaged[index] ^= 0x01
            #expect(throws: AgeError.self) { try AgeFile.decrypt(damaged, with: [identity]) }
        }
    }

    @Test func recipientsAndIdentitiesParseStrictly() throws {
        let identity = X25519Identity.generate()
        let text = identity.recipient.text
        #expect(text.hasPrefix("age1") && text.count == 62)
        #expect(X25519Recipient(parsing: text) == identity.recipient)
        #expect(X25519Recipient(parsing: text.uppercased()) == nil)
        #expect(X25519Recipient(parsing: String(text.dropLast()) + (text.last == "q" ? "p" : "q")) == nil)
        #expect(X25519Recipient(parsing: "age1") == nil)
        let encoded = identity.encoded
        #expect(VectorTests.identityPrefix(encoded) == "AGE-SECRET-KEY-1")
        #expect(X25519Identity(parsing: encoded)?.recipient == identity.recipient)
        #expect(X25519Identity(parsing: SecretBytes(utf8: text)) == nil)
        #expect(SSHEd25519Recipient(parsing: "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ") == nil)
        #expect(SSHEd25519Recipient(parsing: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIA==") == nil)
    }
}

extension VectorTests {
    static func identityPrefix(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { String(decoding: $0.prefix(16), as: UTF8.self) } }
}
