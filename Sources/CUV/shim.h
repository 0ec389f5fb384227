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
#include <string.h>
#include <stdint.h>

 
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

/* CRC-32C with the CPU's own instruction (SSE 4.2's crc32 on x86-64, the CRC extension on
   AArch64), eight bytes a step: the journal checksums every record it writes, and this is several
   times faster than the tables. `crc` and the result are the raw register, without the inversions
   the checksum adds around it. cuv_crc32c_hardware says whether the CPU has the instruction; the
   update must not be called when it does not. */
#if defined(__x86_64__)
#include <cpuid.h>
static inline int cuv_crc32c_hardware(void) {
    unsigned int eax, ebx, ecx, edx;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_SSE4_2) != 0;
}
__attribute__((target("sse4.2")))
static inline uint32_t cuv_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *next = (const unsigned char *)bytes;
    unsigned long long wide = crc;
    for (; count >= 8; count -= 8, next += 8) {
        unsigned long long word;
        memcpy(&word, next, 8);
        wide = __builtin_ia32_crc32di(wide, word);
    }
    crc = (uint32_t)wide;
    for (; count > 0; count--, next++) crc = __builtin_ia32_crc32qi(crc, *next);
    return crc;
}
#elif defined(__aarch64__)
#include <sys/auxv.h>
#include <asm/hwcap.h>
static inline int cuv_crc32c_hardware(void) { return (getauxval(AT_HWCAP) & HWCAP_CRC32) != 0; }
__attribute__((target("crc")))
static inline uint32_t cuv_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *next = (const unsigned char *)bytes;
    for (; count >= 8; count -= 8, next += 8) {
        unsigned long long word;
        memcpy(&word, next, 8);
        crc = __builtin_arm_crc32cd(crc, word);
    }
    for (; count > 0; count--, next++) crc = __builtin_arm_crc32cb(crc, *next);
    return crc;
}
#else
static inline int cuv_crc32c_hardware(void) { return 0; }
static inline uint32_t cuv_crc32c_update(uint32_t crc, const void *bytes, size_t count) { (void)bytes; (void)count; return crc; }
#endif

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
