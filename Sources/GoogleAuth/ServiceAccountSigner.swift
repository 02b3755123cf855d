import COpenSSL
import VaultCore

/// RS256 (RSASSA-PKCS1-v1_5 with SHA-256) over a JWT's signing input, with a service account's
/// PEM private key, by OpenSSL's libcrypto. The key is parsed from secret memory and freed by
/// OpenSSL (which clears RSA key material when it frees it).
enum ServiceAccountSigner {
    struct Failure: Error { let message: String }

    static func sign(_ message: [UInt8], privateKeyPEM: SecretBytes) throws(Failure) -> [UInt8] {
        let key: OpaquePointer? = privateKeyPEM.withUnsafeBytes { pem in
            guard let bio = BIO_new_mem_buf(pem.baseAddress, Int32(pem.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else {
            ERR_clear_error()
            throw Failure(message: "its private_key is not a PEM private key")
        }
        defer { EVP_PKEY_free(key) }
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA else { throw Failure(message: "its private_key is not an RSA key") }
        guard let context = EVP_MD_CTX_new() else { throw Failure(message: "OpenSSL could not start a signature") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1 else {
            ERR_clear_error()
            throw Failure(message: "OpenSSL refused the key for RS256")
        }
        var length = 0
        guard message.withUnsafeBufferPointer({ EVP_DigestSign(context, nil, &length, $0.baseAddress, $0.count) }) == 1, length > 0 else {
            ERR_clear_error()
            throw Failure(message: "OpenSSL could not size the signature")
        }
        var signature = [UInt8](repeating: 0, count: length)
        let signed = message.withUnsafeBufferPointer { input in
            signature.withUnsafeMutableBufferPointer { EVP_DigestSign(context, $0.baseAddress, &length, input.baseAddress, input.count) }
        }
        guard signed == 1 else {
            ERR_clear_error()
            throw Failure(message: "OpenSSL could not sign")
        }
        return Array(signature.prefix(length))
    }
}
