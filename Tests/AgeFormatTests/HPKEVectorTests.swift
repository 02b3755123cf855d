@testable import AgeFormat
import Foundation
import Testing
import VaultCore

/// Fixtures/hpke-pq: hpke-pq-vectors.json and rfc9180-vectors.json (with their LICENSE).
struct HPKEVector: CustomTestStringConvertible, Sendable {
    let fields: [String: String]
    let kem: Int, kdf: Int, aead: Int

    var testDescription: String { "kem \(kem) kdf \(kdf) aead \(aead)" }
    func bytes(_ name: String) -> [UInt8] { hexBytes(fields[name] ?? "") }
    func secret(_ name: String) -> SecretBytes { SecretBytes(copying: bytes(name)) }

    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/hpke-pq")

    static func load(_ file: String) -> [HPKEVector] {
        let data = FileManager.default.contents(atPath: folder.appendingPathComponent(file).path) ?? Data()
        let entries = (try? JSONSerialization.jsonObject(with: data)) as? [[String: Any]] ?? []
        return entries.map { entry in
            HPKEVector(fields: entry.compactMapValues { $0 as? String },
                       kem: entry["kem_id"] as? Int ?? 0, kdf: entry["kdf_id"] as? Int ?? 0, aead: entry["aead_id"] as? Int ?? 0)
        }
    }

    static let hybrid = load("hpke-pq-vectors.json")
}

func hexBytes(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex {
        let next = text.index(index, offsetBy: 2)
        bytes.append(UInt8(text[index..<next], radix: 16)!)
        index = next
    }
    return bytes
}

func hex(_ secret: SecretBytes) -> String { secret.withUnsafeBytes { Sodium.hex(Array($0)) } }

@Suite struct HPKEVectorTests {
    static let mlkem768 = HPKEVector.hybrid.filter { $0.kem == 0x0041 }
    static let xwing = HPKEVector.hybrid.filter { $0.kem == 0x647a }
    static let mlkemP256 = HPKEVector.hybrid.filter { $0.kem == 0x0050 }

    @Test func theVectorsOfEveryKEMAgeUsesAreThere() {
        #expect(Self.mlkem768.count >= 1)
        #expect(Self.xwing.count == 2)
        #expect(Self.mlkemP256.count == 2)
        #expect(Self.xwing.contains { $0.kdf == 1 && $0.aead == 3 }, "age's suite: HKDF-SHA256 and ChaCha20Poly1305")
    }

    @Test(arguments: mlkem768) func mlkem768GeneratesEncapsulatesAndDecapsulatesAsTheVectorSays(_ vector: HPKEVector) throws {
        let (encapsulationKey, decapsulationKey) = MLKEM768.keyPair(seed: vector.secret("skRm"))
        #expect(encapsulationKey == vector.bytes("pkRm"))
        let (shared, ciphertext) = try MLKEM768.encapsulate(to: encapsulationKey, message: vector.secret("ikmE"))
        #expect(ciphertext == vector.bytes("enc"))
        #expect(hex(shared) == vector.fields["shared_secret"])
        #expect(hex(try MLKEM768.decapsulate(vector.bytes("enc"), with: decapsulationKey)) == vector.fields["shared_secret"])
    }

    @Test(arguments: xwing + mlkemP256) func aHybridKEMDerivesExpandsEncapsulatesAndDecapsulatesAsTheVectorSays(_ vector: HPKEVector) throws {
        let kem = vector.kem == 0x647a ? HybridKEM.mlkem768x25519 : HybridKEM.mlkem768p256
        #expect(hex(kem.derivedSeed(vector.bytes("ikmR"))) == vector.fields["skRm"])
        let key = try kem.expand(seed: vector.secret("skRm"))
        #expect(key.publicKey == vector.bytes("pkRm"))
        #expect(hex(try kem.decapsulate(vector.bytes("enc"), with: key)) == vector.fields["shared_secret"])
        let (shared, enc) = try kem.encapsulate(to: key.publicKey, randomness: vector.secret("ikmE"))
        #expect(enc == vector.bytes("enc"))
        #expect(hex(shared) == vector.fields["shared_secret"])
    }

    @Test func ageSuitesKeyScheduleGivesTheVectorsKeyAndNonce() throws {
        let vector = try #require(Self.xwing.first { $0.kdf == 1 && $0.aead == 3 })
        let (key, nonce) = HPKE.keySchedule(kem: 0x647a, sharedSecret: vector.secret("shared_secret"), info: vector.bytes("info"))
        #expect(hex(key) == vector.fields["key"])
        #expect(Sodium.hex(nonce) == vector.fields["base_nonce"])
        #expect(Sodium.hex(HPKE.suiteID(kem: 0x647a)) == vector.fields["suite_id"])
    }

    @Test func dhkemP256GivesTheVectorsSharedSecret() throws {
        let vector = try #require(HPKEVector.hybrid.first { $0.kem == 0x0010 })
        #expect(hex(DHKEMP256.derivedScalar(vector.bytes("ikmR"))) == vector.fields["skRm"])
        let (shared, enc) = try DHKEMP256.encapsulate(to: vector.bytes("pkRm"), ephemeral: DHKEMP256.derivedScalar(vector.bytes("ikmE")))
        #expect(enc == vector.bytes("enc"))
        #expect(hex(shared) == vector.fields["shared_secret"])
    }

    @Test func dhkemP256DerivesRFC9180sKeys() throws {
        let vectors = HPKEVector.load("rfc9180-vectors.json").filter { $0.kem == 0x0010 }
        #expect(vectors.count >= 4)
        for vector in vectors {
            let receiver = DHKEMP256.derivedScalar(vector.bytes("ikmR"))
            #expect(hex(receiver) == vector.fields["skRm"])
            #expect(try P256.multiply(nil, receiver) == vector.bytes("pkRm"))
            #expect(try P256.multiply(nil, DHKEMP256.derivedScalar(vector.bytes("ikmE"))) == vector.bytes("enc"))
        }
    }

    @Test func aPointOffTheCurveIsRefused() throws {
        let vector = try #require(HPKEVector.hybrid.first { $0.kem == 0x0010 })
        var point = vector.bytes("pkRm")
        point[64] ^= 1
        #expect(throws: PrimitiveError.invalidInput) { try DHKEMP256.encapsulate(to: point) }
        #expect(throws: PrimitiveError.invalidInput) { try DHKEMP256.encapsulate(to: [0]) }
    }
}
