// OpenSSL's libcrypto from Debian's libssl-dev: the RS256 signature of a service account's
// token request (GoogleAuth's ServiceAccountSigner), and the check of an ssh-agent's
// rsa-sha2-512 signature for an ssh slot (SSHAgent). Nothing else uses it.
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
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
