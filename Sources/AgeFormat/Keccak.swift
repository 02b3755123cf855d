internal import COpenSSL
import VaultCore

/// SHA3-256, SHA3-512, SHAKE128 and SHAKE256 (FIPS 202) through libcrypto's EVP interface, for
/// ML-KEM and the hybrid KEMs. One hash at a time: absorb parts, then finish into memory
/// (secret memory when the output is a key). The EVP context holds absorbed secrets: it is
/// freed (OpenSSL wipes it) when the hash ends.
struct Keccak: ~Copyable {
    enum Function {
        case sha3_256, sha3_512, shake128, shake256
    }

    // Fetched once: an implicit fetch on every initialisation costs more than a short hash.
    nonisolated(unsafe) private static let sha3_256 = EVP_MD_fetch(nil, "SHA3-256", nil)
    nonisolated(unsafe) private static let sha3_512 = EVP_MD_fetch(nil, "SHA3-512", nil)
    nonisolated(unsafe) private static let shake128 = EVP_MD_fetch(nil, "SHAKE128", nil)
    nonisolated(unsafe) private static let shake256 = EVP_MD_fetch(nil, "SHAKE256", nil)

    private let context: OpaquePointer
    private let function: Function

    init(_ function: Function) {
        let algorithm: OpaquePointer?
        switch function {
        case .sha3_256: algorithm = Self.sha3_256
        case .sha3_512: algorithm = Self.sha3_512
        case .shake128: algorithm = Self.shake128
        case .shake256: algorithm = Self.shake256
        }
        guard let algorithm, let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, algorithm, nil) == 1 else {
            fatalError("libcrypto has no \(function): SHA-3 is part of every OpenSSL 3")
        }
        self.context = context
        self.function = function
    }

    deinit { EVP_MD_CTX_free(context) }

    mutating func absorb(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        precondition(EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1)
    }

    mutating func absorb(_ bytes: [UInt8]) { bytes.withUnsafeBytes { absorb($0) } }
    mutating func absorb(_ bytes: ArraySlice<UInt8>) { bytes.withUnsafeBytes { absorb($0) } }
    mutating func absorb(_ secret: SecretBytes) { secret.withUnsafeBytes { absorb($0) } }

    /// Writes the digest (or `output.count` bytes of XOF output); the hash is then finished.
    func finish(into output: UnsafeMutableRawBufferPointer) {
        let out = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
        switch function {
        case .sha3_256, .sha3_512:
            precondition(output.count == (function == .sha3_256 ? 32 : 64))
            precondition(EVP_DigestFinal_ex(context, out, nil) == 1)
        case .shake128, .shake256:
            precondition(EVP_DigestFinalXOF(context, out, output.count) == 1)
        }
    }

    func finish(count: Int) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: count)
        output.withUnsafeMutableBytes { finish(into: $0) }
        return output
    }

    func finishSecret(count: Int) -> SecretBytes {
        let output = SecretBytes(count: count)
        output.withUnsafeMutableBytes { finish(into: $0) }
        return output
    }

    /// The one-call forms for public inputs.
    static func sha3_256(_ parts: [UInt8]...) -> [UInt8] {
        var hash = Keccak(.sha3_256)
        for part in parts { hash.absorb(part) }
        return hash.finish(count: 32)
    }

    static func shake(_ function: Function, _ parts: [UInt8]..., count: Int) -> [UInt8] {
        var hash = Keccak(function)
        for part in parts { hash.absorb(part) }
        return hash.finish(count: count)
    }
}
