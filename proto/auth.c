/*
 * proto/auth.c - AUTH's proofs (proto/auth.h): HMAC-SHA256 (RFC 2104, FIPS
 * 198-1) from OpenSSL's libcrypto over a fixed 77-byte layout, nonces from
 * RAND_bytes, and a constant-time comparison. The layout is PROTOCOL.md
 * section 12.2; tests/unit/test_auth.c pins it with vectors computed by
 * Python's hmac module.
 */
#include "proto/auth.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include "common/defs.h"

/* Both labels are 11 bytes, sent without a NUL. */
#define AUTH_LABEL_BYTES 11
#define AUTH_INPUT_BYTES (AUTH_LABEL_BYTES + 2 * BRIM_AUTH_NONCE_BYTES + 2)

_Static_assert(AUTH_INPUT_BYTES == 77, "PROTOCOL.md 12.2 says 77 bytes");
_Static_assert(BRIM_AUTH_MAC_BYTES == 32, "HMAC-SHA256 gives 32 bytes");

static const char auth_label[2][AUTH_LABEL_BYTES + 1] = {
    [BRIM_AUTH_SERVER] = "brim-auth-s",
    [BRIM_AUTH_CLIENT] = "brim-auth-c",
};

int
brim_auth_secret_set(struct brim_auth_secret *s, const void *bytes, size_t len,
                     char errbuf[BRIM_ERRBUF_LEN])
{
    if (len < BRIM_AUTH_SECRET_MIN || len > BRIM_AUTH_SECRET_MAX) {
        brim_errfmt(errbuf, "auth: secret is %zu bytes, want %d to %d", len,
                    BRIM_AUTH_SECRET_MIN, BRIM_AUTH_SECRET_MAX);
        return BRIM_EINVAL;
    }
    memcpy(s->key, bytes, len);
    s->len = len;
    return 0;
}

void
brim_auth_secret_wipe(struct brim_auth_secret *s)
{
    OPENSSL_cleanse(s->key, sizeof(s->key));
    s->len = 0;
}

int
brim_auth_nonce(uint8_t nonce[BRIM_AUTH_NONCE_BYTES])
{
    return RAND_bytes(nonce, BRIM_AUTH_NONCE_BYTES) == 1 ? 0 : BRIM_ESYS;
}

int
brim_auth_mac(const struct brim_auth_secret *s, enum brim_auth_side side,
              const uint8_t nonce_c[BRIM_AUTH_NONCE_BYTES],
              const uint8_t nonce_s[BRIM_AUTH_NONCE_BYTES], uint32_t role_c,
              uint32_t role_s, uint8_t mac[BRIM_AUTH_MAC_BYTES])
{
    uint8_t      in[AUTH_INPUT_BYTES], md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    uint8_t     *p = in;

    if (s->len == 0 || role_c == 0 || role_c > 255 || role_s == 0
        || role_s > 255) {
        return BRIM_EINVAL;
    }
    memcpy(p, auth_label[side], AUTH_LABEL_BYTES);
    p += AUTH_LABEL_BYTES;
    memcpy(p, nonce_c, BRIM_AUTH_NONCE_BYTES);
    p += BRIM_AUTH_NONCE_BYTES;
    memcpy(p, nonce_s, BRIM_AUTH_NONCE_BYTES);
    p += BRIM_AUTH_NONCE_BYTES;
    *p++ = (uint8_t) role_c;
    *p = (uint8_t) role_s;
    if (HMAC(EVP_sha256(), s->key, (int) s->len, in, sizeof(in), md, &md_len)
            == NULL
        || md_len != BRIM_AUTH_MAC_BYTES)
    {
        return BRIM_ESYS;
    }
    memcpy(mac, md, BRIM_AUTH_MAC_BYTES);
    OPENSSL_cleanse(md, sizeof(md));
    return 0;
}

int
brim_auth_verify(const struct brim_auth_secret *s, enum brim_auth_side side,
                 const uint8_t nonce_c[BRIM_AUTH_NONCE_BYTES],
                 const uint8_t nonce_s[BRIM_AUTH_NONCE_BYTES], uint32_t role_c,
                 uint32_t role_s, const void *mac, size_t mac_len)
{
    uint8_t want[BRIM_AUTH_MAC_BYTES];
    int     rc;

    rc = brim_auth_mac(s, side, nonce_c, nonce_s, role_c, role_s, want);
    if (rc != 0) {
        return rc;
    }
    /* The length is public (always 32 on the wire); the bytes are not. */
    if (mac_len != BRIM_AUTH_MAC_BYTES
        || CRYPTO_memcmp(want, mac, BRIM_AUTH_MAC_BYTES) != 0)
    {
        rc = BRIM_EDENIED;
    }
    OPENSSL_cleanse(want, sizeof(want));
    return rc;
}
