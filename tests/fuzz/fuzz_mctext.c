/*
 * tests/fuzz/fuzz_mctext.c - libFuzzer target for proto/mctext.[ch]: the
 * input is a byte stream as a memcached client sends it, parsed command
 * after command as a connection would (swallowing what it is told to),
 * under small limits and then memcached's defaults. Beyond "no crash, no
 * leak, no sanitizer report" it asserts that (1) the parser allocates
 * nothing, (2) every answer is one the contract allows: CONSUMED within
 * the buffer, keys, data and opaques inside what was consumed and within
 * the limits, a reply exactly when one is due, EAGAIN only below
 * brim_mctext_buffer_max(), (3) the answer depends on the bytes, not on
 * how they were cut: the consumed prefix alone gives the same answer and
 * one byte less gives EAGAIN, and (4) the replies encoded for each
 * command are well formed. Built with libFuzzer under -DBRIM_FUZZ=ON
 * (clang); replay_main.c runs the corpus without it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "proto/buf.h"
#include "proto/mctext.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Fail the run: an invariant of the contract broke. */
#define FUZZ_CHECK(x)                                                          \
    do {                                                                       \
        if (!(x)) {                                                            \
            fprintf(stderr, "fuzz_mctext: %s:%d: %s\n", __FILE__, __LINE__,    \
                    #x);                                                       \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* P[0 .. N) lies inside B[0 .. BN). */
static int
inside(const char *p, size_t n, const char *b, size_t bn)
{
    return p >= b && n <= bn && (size_t) (p - b) <= bn - n;
}

/* (2) for a single key. */
static void
fuzz_key(const struct brim_mctext_cmd *cmd, const char *buf,
         const struct brim_mctext_limits *lim)
{
    const char *k;
    size_t      n;

    FUZZ_CHECK(inside(cmd->key, cmd->key_len, buf, cmd->consumed));
    FUZZ_CHECK(cmd->key_len >= 1 && cmd->key_len <= lim->max_key_bytes);
    FUZZ_CHECK(memchr(cmd->key, ' ', cmd->key_len) == NULL);
    FUZZ_CHECK(memchr(cmd->key, '\n', cmd->key_len) == NULL);
    if (cmd->key_b64) {
        FUZZ_CHECK(cmd->key_bin_len >= 1);
        FUZZ_CHECK(cmd->key_bin_len <= cmd->key_len * 3 / 4);
    }
    brim_mctext_cmd_key(cmd, &k, &n);
    FUZZ_CHECK(n >= 1);
}

/* (2) for the keys of a get family command. */
static void
fuzz_keys(const struct brim_mctext_cmd *cmd, const char *buf,
          const struct brim_mctext_limits *lim)
{
    const char *k;
    size_t      pos, n;
    uint32_t    count;

    FUZZ_CHECK(cmd->keys_len == 0
               || inside(cmd->keys, cmd->keys_len, buf, cmd->consumed));
    pos = 0;
    count = 0;
    while (brim_mctext_next_key(cmd, &pos, &k, &n)) {
        FUZZ_CHECK(inside(k, n, cmd->keys, cmd->keys_len));
        FUZZ_CHECK(n >= 1 && n <= lim->max_key_bytes);
        FUZZ_CHECK(memchr(k, ' ', n) == NULL);
        count++;
    }
    FUZZ_CHECK(count == cmd->nkeys);
}

/* (2) for a good command. */
static void
fuzz_good(const struct brim_mctext_cmd *cmd, const char *buf,
          const struct brim_mctext_limits *lim)
{
    const struct brim_mctext_meta *m = &cmd->meta;

    FUZZ_CHECK(cmd->kind != BRIM_MCTEXT_NONE && cmd->swallow == 0);
    FUZZ_CHECK(cmd->reply == NULL && cmd->close == 0);
    switch (cmd->kind) {
    case BRIM_MCTEXT_GET:
    case BRIM_MCTEXT_GETS:
    case BRIM_MCTEXT_GAT:
    case BRIM_MCTEXT_GATS:
        fuzz_keys(cmd, buf, lim);
        return;
    case BRIM_MCTEXT_SET:
    case BRIM_MCTEXT_ADD:
    case BRIM_MCTEXT_REPLACE:
    case BRIM_MCTEXT_APPEND:
    case BRIM_MCTEXT_PREPEND:
    case BRIM_MCTEXT_CAS:
    case BRIM_MCTEXT_MS:
        fuzz_key(cmd, buf, lim);
        FUZZ_CHECK(cmd->data_len <= lim->max_value_bytes);
        FUZZ_CHECK(inside(cmd->data, cmd->data_len + 2, buf, cmd->consumed));
        FUZZ_CHECK(cmd->data + cmd->data_len + 2 == buf + cmd->consumed);
        FUZZ_CHECK(memcmp(cmd->data + cmd->data_len, "\r\n", 2) == 0);
        break;
    case BRIM_MCTEXT_DELETE:
    case BRIM_MCTEXT_INCR:
    case BRIM_MCTEXT_DECR:
    case BRIM_MCTEXT_TOUCH:
    case BRIM_MCTEXT_MG:
    case BRIM_MCTEXT_MD:
    case BRIM_MCTEXT_MA:
    case BRIM_MCTEXT_ME:
        fuzz_key(cmd, buf, lim);
        break;
    case BRIM_MCTEXT_STATS:
        FUZZ_CHECK(cmd->args_len == 0
                   || inside(cmd->args, cmd->args_len, buf, cmd->consumed));
        break;
    default:
        break;
    }
    FUZZ_CHECK(m->norder <= BRIM_MCTEXT_META_FLAGS_MAX);
    if (m->flags & BRIM_MCTEXT_MF('O')) {
        FUZZ_CHECK(m->opaque_len < BRIM_MCTEXT_OPAQUE_MAX);
        FUZZ_CHECK(inside(m->opaque, m->opaque_len, buf, cmd->consumed));
    }
    if (cmd->kind == BRIM_MCTEXT_MS) {
        FUZZ_CHECK(m->store != BRIM_MCTEXT_NONE);
    }
}

/* (2) for any answer of brim_mctext_parse() over BUF[0 .. LEN). */
static void
fuzz_answer(const struct brim_mctext_cmd *cmd, const char *buf, size_t len,
            const struct brim_mctext_limits *lim)
{
    size_t n;

    FUZZ_CHECK(cmd->consumed >= 1 && cmd->consumed <= len);
    FUZZ_CHECK((unsigned) cmd->kind < BRIM_MCTEXT_KIND_COUNT);
    FUZZ_CHECK((unsigned) cmd->err < BRIM_MCTEXT_ERR_COUNT);
    if (cmd->err == BRIM_MCTEXT_ERR_NONE) {
        fuzz_good(cmd, buf, lim);
        return;
    }
    if (cmd->close) {
        FUZZ_CHECK(cmd->err == BRIM_MCTEXT_ERR_LINE_TOO_LONG
                   || cmd->err == BRIM_MCTEXT_ERR_HTTP);
        FUZZ_CHECK(cmd->reply == NULL && cmd->consumed == len);
        return;
    }
    /* A reply is due unless a text command's noreply silenced it. */
    if (cmd->reply == NULL) {
        FUZZ_CHECK(cmd->noreply && cmd->kind != BRIM_MCTEXT_NONE
                   && cmd->kind < BRIM_MCTEXT_MN);
    } else {
        FUZZ_CHECK(cmd->reply == brim_mctext_err_reply(cmd->err, &n));
        FUZZ_CHECK(cmd->reply_len == n && n > 2);
        FUZZ_CHECK(memcmp(cmd->reply + n - 2, "\r\n", 2) == 0);
    }
    /* Only a refused data block is swallowed: <bytes> + 2 at most. */
    FUZZ_CHECK(cmd->swallow <= 2147483647u);
    FUZZ_CHECK(cmd->swallow == 0 || cmd->err == BRIM_MCTEXT_ERR_TOO_LARGE
               || cmd->kind == BRIM_MCTEXT_MS);
    if (cmd->err == BRIM_MCTEXT_ERR_TOO_LARGE) {
        FUZZ_CHECK(cmd->swallow > (size_t) lim->max_value_bytes + 2);
        fuzz_key(cmd, buf, lim);
    }
}

/* (3): the consumed prefix alone gives the same answer; less waits. */
static void
fuzz_prefix(const struct brim_mctext_cmd *cmd, const char *buf,
            const struct brim_mctext_limits *lim)
{
    struct brim_mctext_cmd again;

    if (cmd->close) {
        return;
    }
    FUZZ_CHECK(brim_mctext_parse(buf, cmd->consumed, lim, &again) == 0);
    FUZZ_CHECK(again.kind == cmd->kind && again.err == cmd->err);
    FUZZ_CHECK(again.consumed == cmd->consumed);
    FUZZ_CHECK(again.swallow == cmd->swallow);
    FUZZ_CHECK(again.reply == cmd->reply);
    FUZZ_CHECK(brim_mctext_parse(buf, cmd->consumed - 1, lim, &again)
               == BRIM_EAGAIN);
}

/* The first line of OUT from START holds exactly one '\n', at its end. */
static void
fuzz_one_line(const struct brim_buf *out, size_t start)
{
    const char *nl;

    FUZZ_CHECK(out->len >= start + 2);
    nl = memchr(out->data + start, '\n', out->len - start);
    FUZZ_CHECK(nl != NULL && nl > out->data + start && nl[-1] == '\r');
}

/* (4): encode a reply for the good command CMD. */
static void
fuzz_encode(struct brim_buf *out, const struct brim_mctext_cmd *cmd)
{
    struct brim_mctext_meta_item it;
    const char                  *k;
    size_t                       pos, n, start;
    unsigned                     code;

    out->len = 0;
    switch (cmd->kind) {
    case BRIM_MCTEXT_GET:
    case BRIM_MCTEXT_GETS:
    case BRIM_MCTEXT_GAT:
    case BRIM_MCTEXT_GATS:
        pos = 0;
        while (brim_mctext_next_key(cmd, &pos, &k, &n)) {
            start = out->len;
            FUZZ_CHECK(brim_mctext_put_value(out, k, n, (uint32_t) n, k, n,
                                             cmd->kind == BRIM_MCTEXT_GETS, n)
                       == 0);
            fuzz_one_line(out, start);
        }
        FUZZ_CHECK(brim_mctext_put_reply(out, BRIM_MCTEXT_REPLY_END) == 0);
        return;
    case BRIM_MCTEXT_INCR:
    case BRIM_MCTEXT_DECR:
        FUZZ_CHECK(brim_mctext_put_number(out, cmd->delta) == 0);
        fuzz_one_line(out, 0);
        return;
    case BRIM_MCTEXT_ME:
        FUZZ_CHECK(brim_mctext_put_me(out, cmd, "exp=-1") == 0);
        fuzz_one_line(out, 0);
        return;
    case BRIM_MCTEXT_MG:
    case BRIM_MCTEXT_MS:
    case BRIM_MCTEXT_MD:
    case BRIM_MCTEXT_MA:
        break;
    default:
        FUZZ_CHECK(brim_mctext_put_reply(out, BRIM_MCTEXT_REPLY_STORED) == 0);
        return;
    }
    /* Every outcome, with every return flag the request asked for. */
    memset(&it, 0, sizeof(it));
    brim_mctext_cmd_key(cmd, &k, &n);
    it.value = k;
    it.value_len = n;
    it.number = cmd->meta.delta;
    it.cas = cmd->meta.cas;
    it.client_flags = cmd->meta.client_flags;
    it.ttl_s = cmd->meta.ttl;
    it.won = it.stale = it.win_sent = it.fetched = 1;
    for (code = BRIM_MCTEXT_META_HD; code <= BRIM_MCTEXT_META_EX; code++) {
        it.code = (enum brim_mctext_meta_code) code;
        out->len = 0;
        FUZZ_CHECK(brim_mctext_put_meta(out, cmd, &it) == 0);
        FUZZ_CHECK((out->len == 0) == brim_mctext_meta_quiet(cmd, it.code));
        if (out->len > 0) {
            fuzz_one_line(out, 0);
            FUZZ_CHECK(memcmp(out->data + out->len - 2, "\r\n", 2) == 0);
        }
    }
}

/* Parse all of DATA[0 .. SIZE) under LIM as a connection would. */
static void
fuzz_stream(const char *data, size_t size, const struct brim_mctext_limits *lim,
            struct brim_buf *out)
{
    struct brim_mctext_cmd cmd;
    size_t                 off, before;
    int                    rc;

    off = 0;
    while (off < size) {
        before = brim_alloc_bytes();
        rc = brim_mctext_parse(data + off, size - off, lim, &cmd);
        FUZZ_CHECK(brim_alloc_bytes() == before); /* (1) */
        FUZZ_CHECK(rc == 0 || rc == BRIM_EAGAIN);
        if (rc == BRIM_EAGAIN) {
            FUZZ_CHECK(size - off < brim_mctext_buffer_max(lim));
            return;
        }
        fuzz_answer(&cmd, data + off, size - off, lim);
        fuzz_prefix(&cmd, data + off, lim);
        if (cmd.close || cmd.kind == BRIM_MCTEXT_QUIT) {
            return;
        }
        if (cmd.err == BRIM_MCTEXT_ERR_NONE) {
            fuzz_encode(out, &cmd);
        }
        off += cmd.consumed;
        off += cmd.swallow < size - off ? cmd.swallow : size - off;
    }
}

/* base64: what is encoded decodes back; a decode never writes past
 * LEN * 3 / 4 bytes. */
static void
fuzz_b64(const char *data, size_t size)
{
    char   enc[4 * 22], dec[64], back[64];
    size_t n, e, d;

    n = size < 64 ? size : 64;
    d = brim_mctext_b64_decode(data, n, dec);
    FUZZ_CHECK(d <= n * 3 / 4);
    n = n > 60 ? 60 : n;
    e = brim_mctext_b64_encode(data, n, enc);
    FUZZ_CHECK(e == 4 * ((n + 2) / 3));
    d = brim_mctext_b64_decode(enc, e, back);
    FUZZ_CHECK(d == n || (n == 0 && d == 0));
    FUZZ_CHECK(n == 0 || memcmp(back, data, n) == 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct brim_mctext_limits small, dflt;
    struct brim_buf           out;

    /* Small limits reach every limit path; then memcached's own. */
    small.max_key_bytes = 16;
    small.max_value_bytes = 64;
    small.max_line_bytes = 128;
    small.max_get_line_bytes = 512;
    FUZZ_CHECK(brim_mctext_limits_check(&small, NULL) == 0);
    brim_mctext_limits_default(&dflt);
    brim_buf_init(&out);
    fuzz_stream((const char *) data, size, &small, &out);
    fuzz_stream((const char *) data, size, &dflt, &out);
    fuzz_b64((const char *) data, size);
    brim_buf_destroy(&out);
    return 0;
}
