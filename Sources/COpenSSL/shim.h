// OpenSSL's libcrypto from Debian's libssl-dev: the RS256 signature of a service account's
// token request (GoogleAuth's ServiceAccountSigner), the check of an ssh-agent's
// rsa-sha2-512 signature for an ssh slot (SSHAgent), and for age's post-quantum and tagged
// recipients (AgeFormat) SHA-3/SHAKE and P-256. Nothing else uses it.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/obj_mac.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>

/// 1 when `signature` is an RSASSA-PKCS1-v1_5 signature with SHA-512 of `message` by the RSA
/// public key (`modulus`, `exponent`, big-endian), else 0. Written here, in C, because OpenSSL
/// 3's key-building macros do not reach Swift.
static inline int gv_rsa_sha512_verify(const unsigned char *modulus, size_t modulus_length,
                                       const unsigned char *exponent, size_t exponent_length,
                                       const unsigned char *signature, size_t signature_length,
                                       const unsigned char *message, size_t message_length) {
    int verified = 0;
    // 16384-bit moduli and 64-bit exponents at most: the casts below stay in range.
    if (modulus_length > 2048 || exponent_length > 8 || signature_length != modulus_length) return 0;
    ERR_set_mark();
    BIGNUM *n = BN_bin2bn(modulus, (int)modulus_length, NULL);
    BIGNUM *e = BN_bin2bn(exponent, (int)exponent_length, NULL);
    OSSL_PARAM_BLD *builder = OSSL_PARAM_BLD_new();
    OSSL_PARAM *params = NULL;
    EVP_PKEY_CTX *context = NULL;
    EVP_PKEY *key = NULL;
    EVP_MD_CTX *digest = NULL;
    if (n == NULL || e == NULL || builder == NULL) goto done;
    if (!OSSL_PARAM_BLD_push_BN(builder, "n", n) || !OSSL_PARAM_BLD_push_BN(builder, "e", e)) goto done;
    params = OSSL_PARAM_BLD_to_param(builder);
    context = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
    if (params == NULL || context == NULL || EVP_PKEY_fromdata_init(context) != 1) goto done;
    if (EVP_PKEY_fromdata(context, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) goto done;
    digest = EVP_MD_CTX_new();
    if (digest == NULL || EVP_DigestVerifyInit(digest, NULL, EVP_sha512(), NULL, key) != 1) goto done;
    verified = EVP_DigestVerify(digest, signature, signature_length, message, message_length) == 1;
done:
    EVP_MD_CTX_free(digest);
    EVP_PKEY_free(key);
    EVP_PKEY_CTX_free(context);
    OSSL_PARAM_free(params);
    OSSL_PARAM_BLD_free(builder);
    BN_free(e);
    BN_free(n);
    ERR_pop_to_mark();
    return verified;
}


/// P-256 (SEC 1 encodings): writes the uncompressed 65-byte encoding of `scalar` (32 bytes,
/// big-endian) times `point` (33 compressed or 65 uncompressed bytes; NULL for the generator)
/// to `out`. 1 on success; 0 for a point not on the curve, a scalar that is 0 or not below the
/// group order, or a result at infinity. With `scalar` NULL, `out` is `point` re-encoded
/// uncompressed (the decompression a p256tag recipient needs).
static inline int gv_p256_multiply(const unsigned char *point, size_t point_length,
                                   const unsigned char *scalar, unsigned char *out) {
    int done = 0;
    EC_GROUP *group = EC_GROUP_new_by_curve_name(NID_X9_62_prime256v1);
    BN_CTX *context = BN_CTX_secure_new();
    EC_POINT *input = NULL, *result = NULL;
    BIGNUM *k = NULL;
    if (group == NULL || context == NULL) goto done;
    input = EC_POINT_new(group);
    result = EC_POINT_new(group);
    if (input == NULL || result == NULL) goto done;
    if (point != NULL) {
        // Only the two encodings of a finite point: never the one-byte encoding of infinity.
        if (point_length != 33 && point_length != 65) goto done;
        if (EC_POINT_oct2point(group, input, point, point_length, context) != 1) goto done;
        if (EC_POINT_is_on_curve(group, input, context) != 1) goto done;
    }
    if (scalar != NULL) {
        k = BN_secure_new();
        if (k == NULL || BN_bin2bn(scalar, 32, k) == NULL) goto done;
        BN_set_flags(k, BN_FLG_CONSTTIME);
        if (BN_is_zero(k) || BN_cmp(k, EC_GROUP_get0_order(group)) >= 0) goto done;
        if (point == NULL) {
            if (EC_POINT_mul(group, result, k, NULL, NULL, context) != 1) goto done;
        } else if (EC_POINT_mul(group, result, NULL, input, k, context) != 1) goto done;
    } else {
        if (point == NULL || EC_POINT_copy(result, input) != 1) goto done;
    }
    if (EC_POINT_is_at_infinity(group, result)) goto done;
    done = EC_POINT_point2oct(group, result, POINT_CONVERSION_UNCOMPRESSED, out, 65, context) == 65;
done:
    BN_clear_free(k);
    EC_POINT_clear_free(result);
    EC_POINT_free(input);
    BN_CTX_free(context);
    EC_GROUP_free(group);
    return done;
}
