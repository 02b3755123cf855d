import AgeFormat
import CZlib
import Foundation
import Testing
import VaultCore

/// One C2SP CCTV age vector (Fixtures/age-vectors, with its LICENSE): a few `name: value` lines,
/// an empty line, then the age file.
struct AgeVector: CustomTestStringConvertible, Sendable {
    let name: String
    let fields: [String: String]
    /// Every `identity:` line (a vector may name more than one).
    let identities: [String]
    let file: [UInt8]

    var testDescription: String { name }

    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/age-vectors")

    static let all: [AgeVector] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0 != "LICENSE" && $0 != "README.md" }.sorted().map { load($0) }
    }()

    static func load(_ name: String) -> AgeVector {
        let bytes = [UInt8](FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) ?? Data())
        var fields: [String: String] = [:]
        var identities: [String] = []
        var position = 0
        while let end = bytes[position...].firstIndex(of: 10), end > position {
            let line = String(decoding: bytes[position..<end], as: UTF8.self)
            if let colon = line.firstIndex(of: ":") {
                let value = String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
                fields[String(line[..<colon])] = value
                if line.hasPrefix("identity:") { identities.append(value) }
            }
            position = end + 1
        }
        var file = Array(bytes[(position + 1)...])
        if fields["compressed"] == "zlib" { file = inflated(file) }
        return AgeVector(name: name, fields: fields, identities: identities, file: file)
    }

    /// The vectors of long streams are stored zlib-compressed.
    static func inflated(_ compressed: [UInt8]) -> [UInt8] {
        var capacity = 32 << 20
        var output = [UInt8](repeating: 0, count: capacity)
        let rc = output.withUnsafeMutableBufferPointer { out in
            compressed.withUnsafeBufferPointer { input in
                uncompress(out.baseAddress!, &capacity, input.baseAddress!, uLong(input.count))
            }
        }
        precondition(rc == Z_OK, "a compressed vector did not inflate")
        return Array(output.prefix(Int(capacity)))
    }

    /// Why gemvault does not read this vector, or nil when it must.
    var notReadBecause: String? {
        if fields["passphrase"] != nil { return "passphrase-encrypted files (age -p, scrypt) are not shares: gemvault reports them as unsupported" }
        return nil
    }
}

@Suite struct VectorTests {
    static let readable = AgeVector.all.filter { $0.notReadBecause == nil }

    @Test func theFixturesAreAllThere() {
        #expect(AgeVector.all.count == 143)
        // Each vector gemvault does not read is named with its reason, so a skip is never silent.
        for vector in AgeVector.all {
            if let reason = vector.notReadBecause { print("age vector \(vector.name) not read: \(reason)") }
        }
        #expect(Self.readable.count >= 90)
    }

    @Test(arguments: readable) func aVectorGivesItsExpectedOutcome(_ vector: AgeVector) throws {
        // Two header-failure vectors name no identity: any will do, none is reached.
        let identities = try vector.identities.isEmpty ? [X25519Identity.generate()] : vector.identities.map(Self.identity)
        let outcome: Result<SecretBytes, AgeError>
        do {
            let plaintext = vector.fields["armored"] == "yes"
                ? try AgeFile.decryptArmored(vector.file, with: identities)
                : try AgeFile.decrypt(vector.file, with: identities)
            outcome = .success(plaintext)
        } catch {
            outcome = .failure(error)
        }
        let expected = try #require(vector.fields["expect"])
        switch outcome {
        case .success(let plaintext):
            #expect(expected == "success", "read, but the vector expects \(expected)")
            let digest = plaintext.withUnsafeBytes { Sodium.hex(Sodium.sha256(Array($0))) }
            #expect(digest == vector.fields["payload"])
        case .failure(let error):
            #expect(error.kind.rawValue == expected, "\(error)")
        }
    }

    /// An `AGE-SECRET-KEY-PQ-1…` (hybrid) or `AGE-SECRET-KEY-1…` (X25519) identity.
    static func identity(_ text: String) throws -> any AgeIdentity {
        if text.hasPrefix("AGE-SECRET-KEY-PQ-") { return try #require(HybridIdentity(parsing: SecretBytes(utf8: text))) }
        return try #require(X25519Identity(parsing: SecretBytes(utf8: text)))
    }

    @Test func everyHybridVectorIsRead() {
        let hybrid = Self.readable.filter { $0.name.contains("hybrid") }
        #expect(hybrid.count == 19)
    }

    @Test func aPassphraseFileIsRefusedAsUnsupportedAndAMixedOneAsBroken() throws {
        let identity = X25519Identity.generate()
        for vector in AgeVector.all where vector.fields["passphrase"] != nil && vector.fields["expect"] == "success" {
            let error = try #require(throws: AgeError.self) { try AgeFile.decrypt(vector.file, with: [identity]) }
            #expect(error.kind == .unsupported, "\(vector.name): \(error)")
        }
        let mixed = AgeVector.load("scrypt_and_x25519")
        let error = try #require(throws: AgeError.self) {
            try AgeFile.decrypt(mixed.file, with: [#require(X25519Identity(parsing: SecretBytes(utf8: mixed.fields["identity"]!)))])
        }
        #expect(error.kind == .header)
    }
}
