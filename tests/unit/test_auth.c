/*
 * tests/unit/test_auth.c - proto/auth.c, proto/auth_file.c and AUTH's wire
 * shape: the proofs of PROTOCOL.md section 12 match vectors computed
 * independently (Python's hmac module, below), and a wrong secret, a
 * swapped or altered nonce, another role, the other side's label or a
 * truncated MAC are refused; the secret file's rules hold.
 */
#include "tests/support/check_main.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto/auth.h"
#include "proto/auth_file.h"
#include "proto/buf.h"
#include "proto/ops.h"
#include "proto/wire.h"

/*
 * The vectors, from Python 3 (hashlib, hmac):
 *
 *   import hmac, hashlib
 *   sec = b"brim test secret, 32 bytes long!"          # 32 bytes
 *   nc, ns = bytes(range(32)), bytes(range(32, 64))
 *   def mac(key, label, rc, rs):
 *       return hmac.new(key, label + nc + ns + bytes([rc, rs]),
 *                       hashlib.sha256).hexdigest()
 *   mac(sec, b"brim-auth-s", 2, 3)   # VEC_S_2_3
 *   mac(sec, b"brim-auth-c", 2, 3)   # VEC_C_2_3
 *   mac(sec, b"brim-auth-c", 4, 3)   # VEC_C_4_3
 *   mac(bytes(i % 251 for i in range(4096)), b"brim-auth-s", 1, 2)
 *                                    # VEC_LONG_S_1_2
 */
#define VEC_SECRET "brim test secret, 32 bytes long!"
#define VEC_S_2_3                                                              \
    "c3da2bf0b7f6f5f9ccb45eccfa5074d56ddde0afa4e268d4f24af08a0e26a3b3"
#define VEC_C_2_3                                                              \
    "6f289653c4635f22d58717ca147bb186b69479c4c4f0cd98363aeb6a8a8cd986"
#define VEC_C_4_3                                                              \
    "14a71c991a8cdc8127ef23011b9fa4c313d8e8aa2449b975dcb72b43039f7b5e"
#define VEC_LONG_S_1_2                                                         \
    "a7c144a88365976e4822f14e0cd0751bb57e5aabf77a1078dec972b2f9f638d1"

/* 32 bytes (the string's NUL is the last). */
#define NONCE32 "0123456789abcdef0123456789abcde"

static struct brim_auth_secret secret, other;
static uint8_t                 nonce_c[BRIM_AUTH_NONCE_BYTES];
static uint8_t                 nonce_s[BRIM_AUTH_NONCE_BYTES];

static void
setup(void)
{
    int i;

    for (i = 0; i < BRIM_AUTH_NONCE_BYTES; i++) {
        nonce_c[i] = (uint8_t) i;
        nonce_s[i] = (uint8_t) (32 + i);
    }
    ck_assert_int_eq(
        brim_auth_secret_set(&secret, VEC_SECRET, strlen(VEC_SECRET), NULL), 0);
    /* One byte differs from the cluster's. */
    ck_assert_int_eq(brim_auth_secret_set(&other,
                                          "brim test secret, 32 bytes "
                                          "long?",
                                          32, NULL),
                     0);
}

/* HEX (64 digits) as 32 bytes in OUT. */
static void
unhex(const char *hex, uint8_t *out)
{
    char pair[3] = {0, 0, 0};
    int  i;

    ck_assert_uint_eq(strlen(hex), 2 * BRIM_AUTH_MAC_BYTES);
    for (i = 0; i < BRIM_AUTH_MAC_BYTES; i++) {
        pair[0] = hex[2 * i];
        pair[1] = hex[2 * i + 1];
        out[i] = (uint8_t) strtoul(pair, NULL, 16);
    }
}

/* ---- the proofs ---- */

START_TEST(auth_known_answer)
{
    static struct brim_auth_secret big;
    uint8_t                        mac[BRIM_AUTH_MAC_BYTES];
    uint8_t                        want[BRIM_AUTH_MAC_BYTES];
    uint8_t                        raw[BRIM_AUTH_SECRET_MAX];
    int                            i;

    ck_assert_int_eq(
        brim_auth_mac(&secret, BRIM_AUTH_SERVER, nonce_c, nonce_s, 2, 3, mac),
        0);
    unhex(VEC_S_2_3, want);
    ck_assert_mem_eq(mac, want, sizeof(mac));
    ck_assert_int_eq(
        brim_auth_mac(&secret, BRIM_AUTH_CLIENT, nonce_c, nonce_s, 2, 3, mac),
        0);
    unhex(VEC_C_2_3, want);
    ck_assert_mem_eq(mac, want, sizeof(mac));
    ck_assert_int_eq(
        brim_auth_mac(&secret, BRIM_AUTH_CLIENT, nonce_c, nonce_s, 4, 3, mac),
        0);
    unhex(VEC_C_4_3, want);
    ck_assert_mem_eq(mac, want, sizeof(mac));
    /* The longest secret: HMAC hashes a key longer than its block. */
    for (i = 0; i < BRIM_AUTH_SECRET_MAX; i++) {
        raw[i] = (uint8_t) (i % 251);
    }
    ck_assert_int_eq(brim_auth_secret_set(&big, raw, sizeof(raw), NULL), 0);
    ck_assert_int_eq(
        brim_auth_mac(&big, BRIM_AUTH_SERVER, nonce_c, nonce_s, 1, 2, mac), 0);
    unhex(VEC_LONG_S_1_2, want);
    ck_assert_mem_eq(mac, want, sizeof(mac));
    /* And each verifies. */
    ck_assert_int_eq(brim_auth_verify(&big, BRIM_AUTH_SERVER, nonce_c, nonce_s,
                                      1, 2, want, sizeof(want)),
                     0);
    brim_auth_secret_wipe(&big);
    ck_assert_uint_eq(big.len, 0);
}
END_TEST

START_TEST(auth_wrong_secret)
{
    uint8_t mac[BRIM_AUTH_MAC_BYTES];

    ck_assert_int_eq(
        brim_auth_mac(&secret, BRIM_AUTH_CLIENT, nonce_c, nonce_s, 2, 3, mac),
        0);
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_CLIENT, nonce_c,
                                      nonce_s, 2, 3, mac, sizeof(mac)),
                     0);
    ck_assert_int_eq(brim_auth_verify(&other, BRIM_AUTH_CLIENT, nonce_c,
                                      nonce_s, 2, 3, mac, sizeof(mac)),
                     BRIM_EDENIED);
}
END_TEST

START_TEST(auth_swapped_nonce)
{
    uint8_t mac[BRIM_AUTH_MAC_BYTES];

    ck_assert_int_eq(
        brim_auth_mac(&secret, BRIM_AUTH_SERVER, nonce_c, nonce_s, 2, 3, mac),
        0);
    /* The nonces swapped: a MAC cannot be replayed the other way round. */
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_SERVER, nonce_s,
                                      nonce_c, 2, 3, mac, sizeof(mac)),
                     BRIM_EDENIED);
    /* One bit of either nonce. */
    nonce_c[31] ^= 1;
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_SERVER, nonce_c,
                                      nonce_s, 2, 3, mac, sizeof(mac)),
                     BRIM_EDENIED);
    nonce_c[31] ^= 1;
    nonce_s[0] ^= 0x80;
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_SERVER, nonce_c,
                                      nonce_s, 2, 3, mac, sizeof(mac)),
                     BRIM_EDENIED);
}
END_TEST

START_TEST(auth_sides_and_roles)
{
    uint8_t mac[BRIM_AUTH_MAC_BYTES];

    ck_assert_int_eq(
        brim_auth_mac(&secret, BRIM_AUTH_SERVER, nonce_c, nonce_s, 2, 3, mac),
        0);
    /* The server's MAC is no client proof (reflection). */
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_CLIENT, nonce_c,
                                      nonce_s, 2, 3, mac, sizeof(mac)),
                     BRIM_EDENIED);
    /* Proven for role node, not for admin; nor for another server role. */
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_SERVER, nonce_c,
                                      nonce_s, 4, 3, mac, sizeof(mac)),
                     BRIM_EDENIED);
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_SERVER, nonce_c,
                                      nonce_s, 2, 2, mac, sizeof(mac)),
                     BRIM_EDENIED);
    /* Roles are one byte on the wire, never 0. */
    ck_assert_int_eq(
        brim_auth_mac(&secret, BRIM_AUTH_SERVER, nonce_c, nonce_s, 0, 3, mac),
        BRIM_EINVAL);
    ck_assert_int_eq(
        brim_auth_mac(&secret, BRIM_AUTH_SERVER, nonce_c, nonce_s, 2, 256, mac),
        BRIM_EINVAL);
}
END_TEST

START_TEST(auth_truncated_mac)
{
    uint8_t mac[BRIM_AUTH_MAC_BYTES + 1];

    ck_assert_int_eq(
        brim_auth_mac(&secret, BRIM_AUTH_CLIENT, nonce_c, nonce_s, 2, 3, mac),
        0);
    mac[BRIM_AUTH_MAC_BYTES] = 0;
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_CLIENT, nonce_c,
                                      nonce_s, 2, 3, mac,
                                      BRIM_AUTH_MAC_BYTES - 1),
                     BRIM_EDENIED);
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_CLIENT, nonce_c,
                                      nonce_s, 2, 3, mac, 16),
                     BRIM_EDENIED);
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_CLIENT, nonce_c,
                                      nonce_s, 2, 3, mac, 0),
                     BRIM_EDENIED);
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_CLIENT, nonce_c,
                                      nonce_s, 2, 3, mac,
                                      BRIM_AUTH_MAC_BYTES + 1),
                     BRIM_EDENIED);
    /* The last byte alone wrong. */
    mac[BRIM_AUTH_MAC_BYTES - 1] ^= 1;
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_CLIENT, nonce_c,
                                      nonce_s, 2, 3, mac, BRIM_AUTH_MAC_BYTES),
                     BRIM_EDENIED);
}
END_TEST

START_TEST(auth_secret_length)
{
    static struct brim_auth_secret s;
    static uint8_t                 raw[BRIM_AUTH_SECRET_MAX + 1];
    char                           err[BRIM_ERRBUF_LEN] = "";
    uint8_t                        n1[BRIM_AUTH_NONCE_BYTES];
    uint8_t                        n2[BRIM_AUTH_NONCE_BYTES];

    ck_assert_int_eq(brim_auth_secret_set(&s, raw, 31, err), BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "31 bytes"));
    ck_assert_int_eq(brim_auth_secret_set(&s, raw, sizeof(raw), NULL),
                     BRIM_EINVAL);
    ck_assert_int_eq(brim_auth_secret_set(&s, raw, 32, NULL), 0);
    ck_assert_int_eq(brim_auth_secret_set(&s, raw, BRIM_AUTH_SECRET_MAX, NULL),
                     0);
    brim_auth_secret_wipe(&s);
    /* A wiped secret proves nothing. */
    ck_assert_int_eq(
        brim_auth_mac(&s, BRIM_AUTH_SERVER, nonce_c, nonce_s, 2, 3, n1),
        BRIM_EINVAL);
    /* Nonces are fresh. */
    ck_assert_int_eq(brim_auth_nonce(n1), 0);
    ck_assert_int_eq(brim_auth_nonce(n2), 0);
    ck_assert(memcmp(n1, n2, sizeof(n1)) != 0);
}
END_TEST

/* ---- the secret file ---- */

/* A new file in $TMPDIR holding LEN bytes of BYTES with MODE; its path in
 * PATH (PATH_LEN bytes). */
static void
make_file(char *path, size_t path_len, const void *bytes, size_t len,
          mode_t mode)
{
    const char *dir = getenv("TMPDIR");
    int         fd;

    snprintf(path, path_len, "%s/brim-test-secret-XXXXXX",
             dir != NULL && dir[0] != '\0' ? dir : "/tmp");
    fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, bytes, len), (ssize_t) len);
    ck_assert_int_eq(fchmod(fd, mode), 0);
    close(fd);
}

START_TEST(auth_secret_file)
{
    static struct brim_auth_secret s;
    char                           path[512], err[BRIM_ERRBUF_LEN];

    /* 0600, 32 bytes: read as is. */
    make_file(path, sizeof(path), VEC_SECRET, 32, 0600);
    ck_assert_int_eq(brim_auth_file_read(path, &s, err), 0);
    ck_assert_uint_eq(s.len, 32);
    ck_assert_mem_eq(s.key, VEC_SECRET, 32);
    /* 0400 is stricter: fine. */
    ck_assert_int_eq(chmod(path, 0400), 0);
    ck_assert_int_eq(brim_auth_file_read(path, &s, err), 0);
    /* Readable by the group or others: refused, the secret not shown. */
    ck_assert_int_eq(chmod(path, 0640), 0);
    ck_assert_int_eq(brim_auth_file_read(path, &s, err), BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "chmod 600"));
    ck_assert_ptr_null(strstr(err, "brim test"));
    ck_assert_uint_eq(s.len, 0);
    ck_assert_int_eq(chmod(path, 0604), 0);
    ck_assert_int_eq(brim_auth_file_read(path, &s, err), BRIM_EINVAL);
    unlink(path);

    /* Too short. */
    make_file(path, sizeof(path), VEC_SECRET, 31, 0600);
    ck_assert_int_eq(brim_auth_file_read(path, &s, err), BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "31 bytes"));
    unlink(path);

    /* Missing; a directory. */
    ck_assert_int_eq(brim_auth_file_read(path, &s, err), BRIM_ESYS);
    ck_assert_ptr_nonnull(strstr(err, path));
    ck_assert_int_eq(brim_auth_file_read("/", &s, err), BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
}
END_TEST

/* ---- AUTH on the wire ---- */

START_TEST(auth_wire_shape)
{
    static const struct brim_wire_limits lim = {
        250, 1u << 20, (1u << 20) + 65536, 1024, 0, 0};
    msgpack_zone    zone;
    struct brim_buf out;
    struct brim_req req, got;
    struct brim_rep rep, grep;
    const char      nonce[BRIM_WIRE_AUTH_BYTES] = NONCE32;
    /* [45, 7, 0, 1, bin 31]: a nonce one byte short. */
    static const char short_body[] = "\x95\x2d\x07\x00\x01\xc4\x1f"
                                     "0123456789abcdef0123456789abcde";
    /* [0, 7, bin 32, bin 31]: a truncated mac_s. */
    static const char short_rep[] = "\x94\x00\x07\xc4\x20"
                                    "0123456789abcdef0123456789abcdef\xc4\x1f"
                                    "0123456789abcdef0123456789abcde";

    ck_assert(msgpack_zone_init(&zone, 4096));
    brim_buf_init(&out);
    ck_assert_ptr_nonnull(brim_op_info(BRIM_OP_AUTH));
    ck_assert_str_eq(brim_op_name(BRIM_OP_AUTH), "AUTH");
    ck_assert_uint_eq(brim_op_info(BRIM_OP_AUTH)->flags & BRIM_OPF_SECRET, 0);
    ck_assert(brim_op_info(BRIM_OP_EPOCH_PROPOSE)->flags & BRIM_OPF_SECRET);
    ck_assert(brim_op_info(BRIM_OP_STREAM_BEGIN)->flags & BRIM_OPF_SECRET);
    ck_assert_uint_eq(brim_op_info(BRIM_OP_GET)->flags & BRIM_OPF_SECRET, 0);

    /* The request round-trips, nonce included. */
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_AUTH;
    req.request_id = 7;
    req.arg_u32 = BRIM_AUTH_CHALLENGE;
    req.auth = nonce;
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), 0);
    ck_assert_int_eq(
        brim_wire_parse_req(out.data + 4, out.len - 4, &lim, &zone, &got, NULL),
        0);
    ck_assert_uint_eq(got.op, BRIM_OP_AUTH);
    ck_assert_uint_eq(got.arg_u32, BRIM_AUTH_CHALLENGE);
    ck_assert_mem_eq(got.auth, nonce, sizeof(nonce));
    /* Without its bytes it cannot be encoded; 31 bytes are refused. */
    req.auth = NULL;
    ck_assert_int_eq(brim_wire_encode_req(&out, &req), BRIM_EINVAL);
    ck_assert_int_eq(brim_wire_parse_req(short_body, sizeof(short_body) - 1,
                                         &lim, &zone, &got, NULL),
                     BRIM_EBADREQ);

    /* The challenge's answer, and a proof's empty OK. */
    memset(&rep, 0, sizeof(rep));
    rep.request_id = 7;
    rep.auth_nonce = nonce;
    rep.auth_mac = nonce;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_AUTH, &rep), 0);
    ck_assert_int_eq(brim_wire_parse_rep(out.data + 4, out.len - 4,
                                         BRIM_OP_AUTH, &lim, &zone, &grep,
                                         NULL),
                     0);
    ck_assert_mem_eq(grep.auth_nonce, nonce, sizeof(nonce));
    ck_assert_mem_eq(grep.auth_mac, nonce, sizeof(nonce));
    rep.auth_nonce = rep.auth_mac = NULL;
    out.len = 0;
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_AUTH, &rep), 0);
    ck_assert_uint_eq(out.len, 4 + 3); /* [0, 7] */
    ck_assert_int_eq(brim_wire_parse_rep(out.data + 4, out.len - 4,
                                         BRIM_OP_AUTH, &lim, &zone, &grep,
                                         NULL),
                     0);
    ck_assert_ptr_null(grep.auth_nonce);
    rep.auth_nonce = nonce; /* a nonce without its MAC */
    ck_assert_int_eq(brim_wire_encode_rep(&out, BRIM_OP_AUTH, &rep),
                     BRIM_EINVAL);
    ck_assert_int_eq(brim_wire_parse_rep(short_rep, sizeof(short_rep) - 1,
                                         BRIM_OP_AUTH, &lim, &zone, &grep,
                                         NULL),
                     BRIM_EBADREQ);
    brim_buf_destroy(&out);
    msgpack_zone_destroy(&zone);
}
END_TEST

static void
add_case(Suite *s, TCase *tc, const TTest *fn)
{
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, fn);
    suite_add_tcase(s, tc);
}

Suite *
brim_test_suite(void)
{
    Suite *s;

    s = suite_create("auth");
    add_case(s, tcase_create("known_answer"), auth_known_answer);
    add_case(s, tcase_create("wrong_secret"), auth_wrong_secret);
    add_case(s, tcase_create("swapped_nonce"), auth_swapped_nonce);
    add_case(s, tcase_create("sides_and_roles"), auth_sides_and_roles);
    add_case(s, tcase_create("truncated_mac"), auth_truncated_mac);
    add_case(s, tcase_create("secret_length"), auth_secret_length);
    add_case(s, tcase_create("secret_file"), auth_secret_file);
    add_case(s, tcase_create("wire_shape"), auth_wire_shape);
    return s;
}
