// OpenSSL's TLS API. Some of it is macros Swift cannot see: wrapped below,
// every symbol prefixed kv_.
#ifndef KVCACHE_CSSL_SHIM_H
#define KVCACHE_CSSL_SHIM_H
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>

static inline long kv_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) { return SSL_CTX_set_mode(ctx, mode); }
static inline long kv_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_min_proto_version(ctx, version);
}
static const long kv_SSL_MODE_ENABLE_PARTIAL_WRITE = SSL_MODE_ENABLE_PARTIAL_WRITE;
static const long kv_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER = SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
static const long kv_SSL_MODE_RELEASE_BUFFERS = SSL_MODE_RELEASE_BUFFERS;
static const int kv_TLS1_2_VERSION = TLS1_2_VERSION;
#endif
