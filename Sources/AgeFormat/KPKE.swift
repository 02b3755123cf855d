import VaultCore

/// The polynomials one ML-KEM operation needs, in one block of secret memory (wiped when the
/// operation ends): the matrix Â, the secret vector (ŝ or y), the error vector (e or e₁), t̂, u,
/// v, one spare polynomial, and the PRF's output.
final class MLKEMWorkspace {
    private static let polynomials = 9 + 3 + 3 + 3 + 3 + 1 + 1
    private static let prfBytes = 128
    private let memory: SecretBytes
    private let base: UnsafeMutablePointer<UInt16>
    let prfOutput: UnsafeMutableRawBufferPointer

    init() {
        memory = SecretBytes(count: Self.polynomials * 512 + Self.prfBytes)
        // sodium_malloc'd memory does not move while `memory` lives, and this object keeps it.
        let raw = memory.withUnsafeMutableBytes { $0 }
        base = raw.baseAddress!.bindMemory(to: UInt16.self, capacity: Self.polynomials * 256)
        prfOutput = UnsafeMutableRawBufferPointer(rebasing: raw[(Self.polynomials * 512)...])
    }

    /// Â[i][j] in the NTT domain.
    func matrix(_ i: Int, _ j: Int) -> Polynomial { base + (3 * i + j) * 256 }
    func secret(_ i: Int) -> Polynomial { base + (9 + i) * 256 }
    func error(_ i: Int) -> Polynomial { base + (12 + i) * 256 }
    func t(_ i: Int) -> Polynomial { base + (15 + i) * 256 }
    func u(_ i: Int) -> Polynomial { base + (18 + i) * 256 }
    var v: Polynomial { base + 21 * 256 }
    var spare: Polynomial { base + 22 * 256 }

    /// Â from ρ: Â[i][j] = SampleNTT(ρ ‖ j ‖ i).
    func sampleMatrix(rho: ArraySlice<UInt8>) {
        for i in 0..<3 {
            for j in 0..<3 { Sampling.sampleNTT(rho: rho, UInt8(j), UInt8(i), into: matrix(i, j)) }
        }
    }

    /// SamplePolyCBD₂(PRF₂(seed, counter)).
    func sampleNoise(seed: SecretBytes, counter: UInt8, into f: Polynomial) {
        var prf = Keccak(.shake256)
        prf.absorb(seed)
        prf.absorb([counter])
        prf.finish(into: prfOutput)
        Sampling.sampleCBD2(UnsafeRawBufferPointer(prfOutput), into: f)
    }

    func clear(_ f: Polynomial) { f.update(repeating: 0, count: 256) }
}

extension MLKEM768 {
    /// K-PKE.KeyGen (algorithm 13): leaves t̂ and ŝ in the workspace and returns ρ. Final FIPS 203
    /// hashes d ‖ k (the draft hashed d alone).
    static func generateKPKEKeys(d: SecretBytes, in workspace: MLKEMWorkspace) -> [UInt8] {
        var g = Keccak(.sha3_512)
        g.absorb(d)
        g.absorb([UInt8(k)])
        let rhoSigma = g.finishSecret(count: 64)
        let rho = rhoSigma.withUnsafeBytes { Array($0[0..<32]) }
        let sigma = rhoSigma.view(32..<64)
        workspace.sampleMatrix(rho: rho[...])
        for i in 0..<k { workspace.sampleNoise(seed: sigma, counter: UInt8(i), into: workspace.secret(i)) }
        for i in 0..<k { workspace.sampleNoise(seed: sigma, counter: UInt8(k + i), into: workspace.error(i)) }
        for i in 0..<k {
            NTT.forward(workspace.secret(i))
            NTT.forward(workspace.error(i))
        }
        for i in 0..<k {
            let t = workspace.t(i)
            workspace.clear(t)
            for j in 0..<k { NTT.multiplyAdd(workspace.matrix(i, j), workspace.secret(j), into: t) }
            NTT.add(workspace.error(i), into: t)
        }
        return rho
    }

    /// K-PKE.Encrypt (algorithm 14) of a 32-byte message with 32 bytes of randomness.
    static func encrypt(_ encapsulationKey: ArraySlice<UInt8>, message: SecretBytes, randomness: SecretBytes,
                        in workspace: MLKEMWorkspace) -> [UInt8] {
        let start = encapsulationKey.startIndex
        encapsulationKey.withUnsafeBytes { key in
            for i in 0..<k {
                ByteCoding.decode(UnsafeRawBufferPointer(rebasing: key[(i * polynomialBytes)..<((i + 1) * polynomialBytes)]),
                                  bits: 12, into: workspace.t(i))
            }
        }
        workspace.sampleMatrix(rho: encapsulationKey[(start + publicKeyVectorBytes)...])
        for i in 0..<k { workspace.sampleNoise(seed: randomness, counter: UInt8(i), into: workspace.secret(i)) }
        for i in 0..<k { workspace.sampleNoise(seed: randomness, counter: UInt8(k + i), into: workspace.error(i)) }
        workspace.sampleNoise(seed: randomness, counter: UInt8(2 * k), into: workspace.spare)
        for i in 0..<k { NTT.forward(workspace.secret(i)) }
        // u = NTT⁻¹(Âᵀ ∘ ŷ) + e₁
        for i in 0..<k {
            let u = workspace.u(i)
            workspace.clear(u)
            for j in 0..<k { NTT.multiplyAdd(workspace.matrix(j, i), workspace.secret(j), into: u) }
            NTT.inverse(u)
            NTT.add(workspace.error(i), into: u)
        }
        // v = NTT⁻¹(t̂ᵀ ∘ ŷ) + e₂ + Decompress₁(m)
        let v = workspace.v
        workspace.clear(v)
        for j in 0..<k { NTT.multiplyAdd(workspace.t(j), workspace.secret(j), into: v) }
        NTT.inverse(v)
        NTT.add(workspace.spare, into: v)
        message.withUnsafeBytes { ByteCoding.decode($0, bits: 1, into: workspace.spare) }
        Compression.decompress(workspace.spare, bits: 1)
        NTT.add(workspace.spare, into: v)
        var ciphertext = [UInt8](repeating: 0, count: ciphertextBytes)
        ciphertext.withUnsafeMutableBytes { out in
            for i in 0..<k {
                Compression.compress(workspace.u(i), bits: 10)
                ByteCoding.encode(workspace.u(i), bits: 10, into: UnsafeMutableRawBufferPointer(rebasing: out[(i * 320)..<((i + 1) * 320)]))
            }
            Compression.compress(v, bits: 4)
            ByteCoding.encode(v, bits: 4, into: UnsafeMutableRawBufferPointer(rebasing: out[960...]))
        }
        return ciphertext
    }

    /// K-PKE.Decrypt (algorithm 15): the 32-byte message of a ciphertext under ŝ's encoding.
    static func decrypt(_ ciphertext: [UInt8], key: SecretBytes, in workspace: MLKEMWorkspace) -> SecretBytes {
        ciphertext.withUnsafeBytes { c in
            for i in 0..<k {
                ByteCoding.decode(UnsafeRawBufferPointer(rebasing: c[(i * 320)..<((i + 1) * 320)]), bits: 10, into: workspace.u(i))
                Compression.decompress(workspace.u(i), bits: 10)
                NTT.forward(workspace.u(i))
            }
            ByteCoding.decode(UnsafeRawBufferPointer(rebasing: c[960...]), bits: 4, into: workspace.v)
            Compression.decompress(workspace.v, bits: 4)
        }
        key.withUnsafeBytes { raw in
            for i in 0..<k {
                let s = workspace.secret(i)
                ByteCoding.decode(UnsafeRawBufferPointer(rebasing: raw[(i * polynomialBytes)..<((i + 1) * polynomialBytes)]), bits: 12, into: s)
                for j in 0..<256 { s[j] = MLKEMField.reduce(UInt32(s[j])) }
            }
        }
        let w = workspace.spare
        workspace.clear(w)
        for i in 0..<k { NTT.multiplyAdd(workspace.secret(i), workspace.u(i), into: w) }
        NTT.inverse(w)
        for j in 0..<256 { w[j] = MLKEMField.subtract(workspace.v[j], w[j]) }
        Compression.compress(w, bits: 1)
        let message = SecretBytes(count: 32)
        message.withUnsafeMutableBytes { ByteCoding.encode(w, bits: 1, into: $0) }
        return message
    }
}
