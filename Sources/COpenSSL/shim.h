// OpenSSL's libcrypto from Debian's libssl-dev, for the RS256 signature of a service
// account's token request (GoogleAuth's ServiceAccountSigner). Nothing else uses it.
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
