#ifndef REACTOR_CUV_SHIM_H
#define REACTOR_CUV_SHIM_H

#include <uv.h>
#include <llhttp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <openssl/pem.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <zlib.h>

 
/* OpenSSL macros Swift cannot call, as functions. */
static inline long cuv_ssl_ctx_set_min_proto_version(SSL_CTX *context, int version) {
    return SSL_CTX_set_min_proto_version(context, version);
}
static inline long cuv_ssl_ctx_set_mode(SSL_CTX *context, long mode) { return SSL_CTX_set_mode(context, mode); }
/* No renegotiation (a client could make the server redo handshakes at will); the server's order
   of ciphers wins. */
static inline void cuv_ssl_ctx_set_server_options(SSL_CTX *context) {
    SSL_CTX_set_options(context, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
}

/* ALPN: agree on http/1.1 when the client offers it; a client that offers only other protocols
   gets the fatal no_application_protocol alert RFC 7301 §3.2 asks for (one that offers none is
   not asked). */
static inline int cuv_alpn_select_http11(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                                  const unsigned char *in, unsigned int inlen, void *arg) {
    (void)ssl; (void)arg;
    static const unsigned char offered[] = { 8, 'h', 't', 't', 'p', '/', '1', '.', '1' };
    if (SSL_select_next_proto((unsigned char **)out, outlen, offered, sizeof offered, in, inlen) == OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_OK;
    return SSL_TLSEXT_ERR_ALERT_FATAL;
}
static inline void cuv_ssl_ctx_offer_http11(SSL_CTX *context) {
    SSL_CTX_set_alpn_select_cb(context, cuv_alpn_select_http11, NULL);
}

/* Bytes written to a TCP socket that its peer has not acknowledged yet, sent or not (SIOCOUTQ;
   ioctl is variadic, which Swift cannot call). -1 when the kernel does not say. */
#include <sys/ioctl.h>
#include <linux/sockios.h>
static inline int cuv_tcp_unacknowledged_bytes(uv_tcp_t *tcp) {
    uv_os_fd_t fd;
    int count = 0;
    if (uv_fileno((const uv_handle_t *)tcp, &fd) != 0 || ioctl(fd, SIOCOUTQ, &count) != 0) return -1;
    return count;
}

#endif
