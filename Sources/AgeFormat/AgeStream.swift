import VaultCore

/// age's payload: a 16-byte nonce, then STREAM over ChaCha20-Poly1305 in 64 KiB chunks.
enum AgeStream {
    static let nonceBytes = 16
    static let chunkBytes = 64 * 1024
    private static let sealedChunkBytes = chunkBytes + ChaCha20Poly1305.tagBytes
    private static let label = Array("payload".utf8)

    static func payloadKey(fileKey: SecretBytes, nonce: [UInt8]) -> SecretBytes {
        HKDFSHA256.derive(secret: fileKey, salt: nonce, info: label, length: ChaCha20Poly1305.keyBytes)
    }

    /// An 11-byte big-endian counter and the last-chunk flag.
    private static func chunkNonce(_ counter: Int, last: Bool) -> [UInt8] {
        var nonce = [UInt8](repeating: 0, count: ChaCha20Poly1305.nonceBytes)
        var value = counter
        for index in stride(from: 10, through: 0, by: -1) {
            nonce[index] = UInt8(value & 0xff)
            value >>= 8
        }
        nonce[11] = last ? 1 : 0
        return nonce
    }

    static func seal(_ plaintext: SecretBytes, fileKey: SecretBytes) throws(AgeError) -> [UInt8] {
        let nonce = SecretBytes.random(count: nonceBytes).withUnsafeBytes { Array($0) }
        let key = payloadKey(fileKey: fileKey, nonce: nonce)
        var output = nonce
        var start = 0
        var counter = 0
        repeat {
            let end = min(start + chunkBytes, plaintext.count)
            let last = end == plaintext.count
            do {
                output += try ChaCha20Poly1305.seal(plaintext.view(start..<end), nonce: chunkNonce(counter, last: last), key: key)
            } catch {
                throw AgeError(.payload, "a chunk could not be sealed")
            }
            start = end
            counter += 1
        } while start < plaintext.count
        return output
    }

    /// The plaintext of `payload` (nonce and chunks), in secret memory.
    static func open(_ payload: ArraySlice<UInt8>, fileKey: SecretBytes) throws(AgeError) -> SecretBytes {
        guard payload.count >= nonceBytes else { throw AgeError(.header, "the payload nonce is missing") }
        let nonce = Array(payload.prefix(nonceBytes))
        let key = payloadKey(fileKey: fileKey, nonce: nonce)
        let sealed = payload.dropFirst(nonceBytes)
        guard !sealed.isEmpty else { throw AgeError(.payload, "the payload has no chunks") }
        let chunkCount = (sealed.count + sealedChunkBytes - 1) / sealedChunkBytes
        let lastChunkBytes = sealed.count - (chunkCount - 1) * sealedChunkBytes
        guard lastChunkBytes >= ChaCha20Poly1305.tagBytes else { throw AgeError(.payload, "the last chunk is shorter than its tag") }
        let plaintext = SecretBytes(count: max(0, sealed.count - chunkCount * ChaCha20Poly1305.tagBytes))
        var written = 0
        for counter in 0..<chunkCount {
            let start = sealed.startIndex + counter * sealedChunkBytes
            let chunk = sealed[start..<min(start + sealedChunkBytes, sealed.endIndex)]
            // Only the chunk that ends the data may be the last one; a full one there is tried as last.
            let last = counter == chunkCount - 1
            guard let opened = try? ChaCha20Poly1305.open(chunk, nonce: chunkNonce(counter, last: last), key: key) else {
                throw AgeError(.payload, "chunk \(counter) does not verify (damaged, truncated, reordered or extended)")
            }
            guard opened.count > 0 || chunkCount == 1 else { throw AgeError(.payload, "the last chunk is empty") }
            plaintext.withUnsafeMutableBytes { out in
                opened.withUnsafeBytes { (out.baseAddress! + written).copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
            }
            written += opened.count
        }
        return plaintext
    }
}
