/// The arithmetic of ML-KEM (FIPS 203, section 4): polynomials of 256 coefficients modulo
/// q = 3329, the NTT, sampling, compression and byte encoding. A polynomial is a pointer to 256
/// coefficients in [0, q) inside a workspace (secret memory), so nothing allocates per coefficient
/// and no secret lands in ordinary memory. Secret-dependent steps use no branches or divisions
/// by variables: reductions are Barrett multiplications and conditional subtractions by mask.
typealias Polynomial = UnsafeMutablePointer<UInt16>

enum MLKEMField {
    static let q: UInt32 = 3329
    static let n = 256
    /// 128⁻¹ mod q, the scale of the inverse NTT (FIPS 203, algorithm 10).
    static let inverseOf128: UInt16 = 3303

    /// x mod q for any x < 2³², in constant time: Barrett's estimate is at most one q short.
    @inline(__always) static func reduce(_ x: UInt32) -> UInt16 {
        let estimate = UInt32(truncatingIfNeeded: (UInt64(x) &* 1_290_167) >> 32)
        return subtractQIfAbove(x &- estimate &* q)
    }

    /// x - q when x ≥ q, else x (x < 2q), by mask.
    @inline(__always) static func subtractQIfAbove(_ x: UInt32) -> UInt16 {
        let difference = x &- q
        return UInt16(truncatingIfNeeded: difference &+ (q & (0 &- (difference >> 31))))
    }

    @inline(__always) static func add(_ a: UInt16, _ b: UInt16) -> UInt16 { subtractQIfAbove(UInt32(a) &+ UInt32(b)) }
    @inline(__always) static func subtract(_ a: UInt16, _ b: UInt16) -> UInt16 { subtractQIfAbove(UInt32(a) &+ q &- UInt32(b)) }
    @inline(__always) static func multiply(_ a: UInt16, _ b: UInt16) -> UInt16 { reduce(UInt32(a) &* UInt32(b)) }

    static func power(_ base: UInt32, _ exponent: Int) -> UInt16 {
        var result: UInt32 = 1
        for _ in 0..<exponent { result = result * base % q }
        return UInt16(result)
    }

    static func bitReversed7(_ value: Int) -> Int {
        var result = 0
        for bit in 0..<7 where value >> bit & 1 == 1 { result |= 1 << (6 - bit) }
        return result
    }

    /// ζ^BitRev7(i) for the NTT layers, ζ = 17 (FIPS 203, appendix A).
    static let zetas: [UInt16] = (0..<128).map { power(17, bitReversed7($0)) }
    /// ζ^(2·BitRev7(i)+1), the moduli of the base-case products.
    static let gammas: [UInt16] = (0..<128).map { power(17, 2 * bitReversed7($0) + 1) }
}

enum NTT {
    typealias F = MLKEMField

    /// Algorithm 9, in place.
    static func forward(_ f: Polynomial) {
        var k = 1
        var length = 128
        while length >= 2 {
            for start in stride(from: 0, to: 256, by: 2 * length) {
                let zeta = F.zetas[k]
                k += 1
                for j in start..<(start + length) {
                    let t = F.multiply(zeta, f[j + length])
                    f[j + length] = F.subtract(f[j], t)
                    f[j] = F.add(f[j], t)
                }
            }
            length /= 2
        }
    }

    /// Algorithm 10, in place.
    static func inverse(_ f: Polynomial) {
        var k = 127
        var length = 2
        while length <= 128 {
            for start in stride(from: 0, to: 256, by: 2 * length) {
                let zeta = F.zetas[k]
                k -= 1
                for j in start..<(start + length) {
                    let t = f[j]
                    f[j] = F.add(t, f[j + length])
                    f[j + length] = F.multiply(zeta, F.subtract(f[j + length], t))
                }
            }
            length *= 2
        }
        for j in 0..<256 { f[j] = F.multiply(f[j], F.inverseOf128) }
    }

    /// `sum += f × g` in the NTT domain (algorithms 11 and 12).
    static func multiplyAdd(_ f: Polynomial, _ g: Polynomial, into sum: Polynomial) {
        for i in 0..<128 {
            let a0 = f[2 * i], a1 = f[2 * i + 1], b0 = g[2 * i], b1 = g[2 * i + 1]
            let c0 = F.add(F.multiply(a0, b0), F.multiply(F.multiply(a1, b1), F.gammas[i]))
            let c1 = F.add(F.multiply(a0, b1), F.multiply(a1, b0))
            sum[2 * i] = F.add(sum[2 * i], c0)
            sum[2 * i + 1] = F.add(sum[2 * i + 1], c1)
        }
    }

    static func add(_ g: Polynomial, into f: Polynomial) {
        for j in 0..<256 { f[j] = F.add(f[j], g[j]) }
    }

    static func subtract(_ g: Polynomial, from f: Polynomial) {
        for j in 0..<256 { f[j] = F.subtract(f[j], g[j]) }
    }
}

enum Sampling {
    /// Bytes of SHAKE128 read at first by `sampleNTT` (5 blocks); an unlucky seed reads more.
    static let firstRead = 5 * 168

    /// Algorithm 7: the NTT-domain polynomial of the XOF stream of `rho ‖ j ‖ i` (public).
    static func sampleNTT(rho: ArraySlice<UInt8>, _ j: UInt8, _ i: UInt8, into a: Polynomial) {
        var length = firstRead
        while true {
            let stream = Keccak.shake(.shake128, Array(rho), [j, i], count: length)
            var filled = 0
            var position = 0
            while filled < 256 && position + 3 <= stream.count {
                let d1 = UInt16(stream[position]) | UInt16(stream[position + 1] & 0x0f) << 8
                let d2 = UInt16(stream[position + 1] >> 4) | UInt16(stream[position + 2]) << 4
                position += 3
                if d1 < 3329 { a[filled] = d1; filled += 1 }
                if d2 < 3329 && filled < 256 { a[filled] = d2; filled += 1 }
            }
            if filled == 256 { return }
            length *= 2  // The stream is deterministic: a longer read repeats the same prefix.
        }
    }

    /// Algorithm 8 with η = 2: the centred binomial polynomial of 128 bytes of PRF output.
    static func sampleCBD2(_ bytes: UnsafeRawBufferPointer, into f: Polynomial) {
        precondition(bytes.count == 128)
        for i in 0..<256 {
            let nibble = UInt32(bytes[i / 2] >> (4 * UInt8(i % 2)))
            let x = (nibble & 1) &+ (nibble >> 1 & 1)
            let y = (nibble >> 2 & 1) &+ (nibble >> 3 & 1)
            f[i] = MLKEMField.subtractQIfAbove(x &+ MLKEMField.q &- y)
        }
    }
}

enum Compression {
    /// Compress_d (section 4.2.1): round(2^d / q · x) mod 2^d; the division by the constant q
    /// compiles to a multiplication.
    static func compress(_ f: Polynomial, bits d: Int) {
        for j in 0..<256 {
            f[j] = UInt16(truncatingIfNeeded: ((UInt32(f[j]) << d &+ 1664) / 3329) & (1 << d - 1))
        }
    }

    /// Decompress_d: round(q / 2^d · y).
    static func decompress(_ f: Polynomial, bits d: Int) {
        for j in 0..<256 {
            f[j] = UInt16(truncatingIfNeeded: (UInt32(f[j]) &* 3329 &+ 1 << (d - 1)) >> d)
        }
    }
}

enum ByteCoding {
    /// ByteEncode_d (algorithm 5): 256 values of d bits, least significant first, into 32·d bytes.
    static func encode(_ f: Polynomial, bits d: Int, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count == 32 * d)
        var accumulator: UInt32 = 0
        var bits = 0
        var position = 0
        for j in 0..<256 {
            accumulator |= UInt32(f[j]) << bits
            bits += d
            while bits >= 8 {
                out[position] = UInt8(truncatingIfNeeded: accumulator)
                position += 1
                accumulator >>= 8
                bits -= 8
            }
        }
    }

    /// ByteDecode_d (algorithm 6) for d < 12, and for d = 12 without the reduction: the caller
    /// checks or reduces (an encapsulation key must already be reduced).
    static func decode(_ bytes: UnsafeRawBufferPointer, bits d: Int, into f: Polynomial) {
        precondition(bytes.count == 32 * d)
        var accumulator: UInt32 = 0
        var bits = 0
        var position = 0
        let mask = UInt32(1) << d - 1
        for j in 0..<256 {
            while bits < d {
                accumulator |= UInt32(bytes[position]) << bits
                position += 1
                bits += 8
            }
            f[j] = UInt16(truncatingIfNeeded: accumulator & mask)
            accumulator >>= d
            bits -= d
        }
    }
}
