@testable import AgeFormat
import CZlib
import Foundation
import Testing
import VaultCore

/// C2SP CCTV's ML-KEM-768 vectors (Fixtures/mlkem, CC0 as its README says) and the accumulated
/// run of NOTES.md, in final FIPS 203.
@Suite struct MLKEMVectorTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/mlkem")

    static func lines(_ name: String) -> [String] {
        var data = [UInt8](FileManager.default.contents(atPath: folder.appendingPathComponent(name).path) ?? Data())
        if name.hasSuffix(".gz") { data = gunzipped(data) }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
    }

    static func gunzipped(_ compressed: [UInt8]) -> [UInt8] {
        var stream = z_stream()
        precondition(inflateInit2_(&stream, 16 + MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK)
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        var input = compressed
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        input.withUnsafeMutableBufferPointer { source in
            stream.next_in = source.baseAddress
            stream.avail_in = uInt(source.count)
            var rc = Z_OK
            repeat {
                rc = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                output += chunk[0..<(chunk.count - Int(stream.avail_out))]
            } while rc == Z_OK
            precondition(rc == Z_STREAM_END, "the gzip fixture did not inflate")
        }
        return output
    }

    @Test func aCiphertextThatAStrcmpWouldAcceptIsImplicitlyRejected() throws {
        var values: [String: String] = [:]
        for line in Self.lines("strcmp-ML-KEM-768.txt") {
            let parts = line.components(separatedBy: " = ")
            if parts.count == 2 { values[parts[0]] = parts[1] }
        }
        let key = SecretBytes(copying: hexBytes(try #require(values["dk"])))
        let shared = try MLKEM768.decapsulate(hexBytes(try #require(values["c"])), with: key)
        #expect(hex(shared) == values["K"])
    }

    @Test func everyKeyWithAnUnreducedCoefficientIsRefused() {
        let keys = Self.lines("modulus-ML-KEM-768.txt.gz")
        #expect(keys.count == 780)
        for key in keys {
            let bytes = hexBytes(key)
            #expect(bytes.count == MLKEM768.encapsulationKeyBytes)
            #expect(!MLKEM768.passesModulusCheck(bytes))
            #expect(throws: PrimitiveError.invalidInput) { try MLKEM768.encapsulate(to: bytes) }
        }
    }

    /// NOTES.md: final FIPS 203's digest of 10,000 accumulated tests (kyber-py 1.2.0), which every
    /// run checks (AgeFormat is optimised in debug builds too: about 10 s), and of the first 100
    /// (kyber-py 1.2.0 too), for a quick run with GEMVAULT_MLKEM_ACCUMULATED=100.
    static let digests = [
        100: "8d65b902f28edc683cebee2872962fd165a4d197c9e24ec74caa4470270df0b7",
        10_000: "f959d18d3d1180121433bf0e05f11e7908cf9d03edc150b2b07cb90bef5bc1c1",
    ]

    @Test func theAccumulatedRunGivesFinalFIPS203sDigest() throws {
        let count = Int(ProcessInfo.processInfo.environment["GEMVAULT_MLKEM_ACCUMULATED"] ?? "") ?? 10_000
        let expected = try #require(Self.digests[count], "GEMVAULT_MLKEM_ACCUMULATED is 100 or 10000")
        let perTest = 32 + 32 + 32 + MLKEM768.ciphertextBytes
        let stream = Keccak.shake(.shake128, count: count * perTest)
        var accumulator = Keccak(.shake128)
        for index in 0..<count {
            let start = index * perTest
            let seed = SecretBytes(copying: Array(stream[start..<(start + 64)]))
            let (encapsulationKey, decapsulationKey) = MLKEM768.keyPair(seed: seed)
            let message = SecretBytes(copying: Array(stream[(start + 64)..<(start + 96)]))
            let (shared, ciphertext) = try MLKEM768.encapsulate(to: encapsulationKey, message: message)
            #expect(try MLKEM768.decapsulate(ciphertext, with: decapsulationKey).isEqual(to: shared))
            let rejected = try MLKEM768.decapsulate(Array(stream[(start + 96)..<(start + perTest)]), with: decapsulationKey)
            accumulator.absorb(encapsulationKey)
            accumulator.absorb(decapsulationKey)
            accumulator.absorb(ciphertext)
            accumulator.absorb(shared)
            accumulator.absorb(rejected)
        }
        #expect(Sodium.hex(accumulator.finish(count: 32)) == expected)
    }
}
