/*
 * proto/auth.h - AUTH's proofs (PROTOCOL.md section 12): HMAC-SHA256 over
 * both sides' fresh nonces and roles, keyed by a shared secret, and their
 * constant-time check, through OpenSSL's libcrypto. Pure: no sockets, no
 * files, no logging; the secret file is read by proto/auth_file.h and the
 * exchange is driven by server/peer.c, server/guard.c and libbrim.
 */
#ifndef BRIM_PROTO_AUTH_H
#define BRIM_PROTO_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

/* Bytes of a nonce and of a MAC (HMAC-SHA256); both travel as bin 32. */
#define BRIM_AUTH_NONCE_BYTES 32
#define BRIM_AUTH_MAC_BYTES 32
/* Bytes a secret may have (the whole secret file, as is). */
#define BRIM_AUTH_SECRET_MIN 32
#define BRIM_AUTH_SECRET_MAX 4096

/* AUTH's steps, its first argument. */
enum brim_auth_step {
    BRIM_AUTH_CHALLENGE = 1, /* [nonce_c]: answer [nonce_s, mac_s] */
    BRIM_AUTH_PROOF = 2      /* [mac_c]: answer [] or DENIED */
};

/* Whose proof a MAC is: its label tells them apart, so that one side's
 * MAC is never a valid proof for the other. */
enum brim_auth_side {
    BRIM_AUTH_SERVER = 0, /* "brim-auth-s": the accepting side */
    BRIM_AUTH_CLIENT = 1  /* "brim-auth-c": the connecting side */
};

/* A shared secret (a cluster's or its clients'). Never logged or sent;
 * brim_auth_secret_wipe() it when done. */
struct brim_auth_secret {
    size_t  len;                       /* bytes of KEY in use */
    uint8_t key[BRIM_AUTH_SECRET_MAX]; /* the secret file's bytes */
};

/*
 * Set S to the LEN bytes at BYTES (copied). Returns 0, or BRIM_EINVAL when
 * LEN is outside BRIM_AUTH_SECRET_MIN .. BRIM_AUTH_SECRET_MAX (ERRBUF,
 * NULL allowed, says so; S is then unchanged).
 */
int brim_auth_secret_set(struct brim_auth_secret *s, const void *bytes,
                         size_t len, char errbuf[BRIM_ERRBUF_LEN]);

/* Overwrite S's bytes (OPENSSL_cleanse, not optimised away); LEN 0. */
void brim_auth_secret_wipe(struct brim_auth_secret *s);

/*
 * Fill NONCE with BRIM_AUTH_NONCE_BYTES bytes from libcrypto's RAND_bytes
 * (seeded by the operating system). Returns 0, or BRIM_ESYS when the
 * generator fails (NONCE must then not be used).
 */
int brim_auth_nonce(uint8_t nonce[BRIM_AUTH_NONCE_BYTES]);

/*
 * SIDE's proof: MAC = HMAC-SHA256(S, label || NONCE_C || NONCE_S || ROLE_C
 * || ROLE_S), 77 bytes of input (PROTOCOL.md 12.2), where ROLE_C is the
 * connecting side's HELLO role and ROLE_S the accepting side's role in its
 * HELLO reply, one byte each. Returns 0, or BRIM_EINVAL (a role outside
 * 1 .. 255, or S empty) or BRIM_ESYS (libcrypto failed); MAC is written
 * only on success.
 */
int brim_auth_mac(const struct brim_auth_secret *s, enum brim_auth_side side,
                  const uint8_t nonce_c[BRIM_AUTH_NONCE_BYTES],
                  const uint8_t nonce_s[BRIM_AUTH_NONCE_BYTES], uint32_t role_c,
                  uint32_t role_s, uint8_t mac[BRIM_AUTH_MAC_BYTES]);

/*
 * Check MAC (MAC_LEN bytes, borrowed: a peer's, from the wire) against
 * SIDE's proof for the same inputs as brim_auth_mac(). The comparison
 * takes the same time wherever the bytes differ (CRYPTO_memcmp). Returns
 * 0 when it matches, else BRIM_EDENIED (a MAC of any other length, a
 * truncated one included, never matches) or what brim_auth_mac() returns.
 */
int brim_auth_verify(const struct brim_auth_secret *s, enum brim_auth_side side,
                     const uint8_t nonce_c[BRIM_AUTH_NONCE_BYTES],
                     const uint8_t nonce_s[BRIM_AUTH_NONCE_BYTES],
                     uint32_t role_c, uint32_t role_s, const void *mac,
                     size_t mac_len);

#endif /* BRIM_PROTO_AUTH_H */
