// OpenSSL's libcrypto (Debian: libssl-dev) for the per-frame AES-256-GCM: contexts that keep
// their key schedule between frames and write into caller buffers, so a frame costs no allocation.
#ifndef COPENSSL_H
#define COPENSSL_H
#include <openssl/evp.h>
#include <openssl/rand.h>
#endif
