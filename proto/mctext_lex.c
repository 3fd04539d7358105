/*
 * proto/mctext_lex.c - what memcached's text and meta commands share at the
 * bottom (proto/mctext_int.h): its error replies, its number parsing
 * (memcached's util.c reads numbers with strtol/strtoul, quirks and all),
 * the token compare, and the refusal and data-block steps of one command.
 * mctext.c (text commands) and mctext_meta.c (meta commands) both use it;
 * it uses neither. Facts from memcached's doc/protocol.txt and 1.6.18's
 * answers (docs/memcached.md); no memcached code is used.
 */
#include "proto/mctext.h"

#include <inttypes.h>
#include <string.h>

#include "common/defs.h"
#include "proto/mctext_int.h"

/* clang-format off */
static const char *const mc_err_names[] = {
    "NONE",
#define MC_ERR_NAME(name, line) #name,
    BRIM_MCTEXT_ERR_MAP(MC_ERR_NAME)
#undef MC_ERR_NAME
};
_Static_assert(BRIM_ARRAY_LEN(mc_err_names) == BRIM_MCTEXT_ERR_COUNT,
               "one name per error");

/* The reply lines with their "\r\n"; "\r\n" alone means "no reply". */
static const struct {
    const char *line;               /* "ERROR\r\n" */
    size_t      len;                /* bytes */
} mc_err_lines[] = {
    {NULL, 0},
#define MC_ERR_LINE(name, line) {line "\r\n", sizeof(line "\r\n") - 1},
    BRIM_MCTEXT_ERR_MAP(MC_ERR_LINE)
#undef MC_ERR_LINE
};
_Static_assert(BRIM_ARRAY_LEN(mc_err_lines) == BRIM_MCTEXT_ERR_COUNT,
               "one line per error");
/* clang-format on */

const char *
brim_mctext_err_name(enum brim_mctext_err err)
{
    if ((unsigned) err >= BRIM_MCTEXT_ERR_COUNT) {
        return "?";
    }
    return mc_err_names[err];
}

const char *
brim_mctext_err_reply(enum brim_mctext_err err, size_t *len)
{
    if ((unsigned) err >= BRIM_MCTEXT_ERR_COUNT || mc_err_lines[err].len <= 2) {
        *len = 0;
        return NULL;
    }
    *len = mc_err_lines[err].len;
    return mc_err_lines[err].line;
}

/* ---- numbers, as memcached's util.c parses them ---- */

/* isspace() in the C locale. */
static int
mc_isspace(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/*
 * What strtoull()/strtol() read from P[0 .. N): *MAG the digits' value
 * (*RANGE set when it passes 2^64 - 1), *NEG a leading '-'. Returns 1 when
 * digits were read and the number ends at the token's end or at white
 * space (memcached's test of endptr), else 0.
 */
static int
mc_scan(const char *p, size_t n, uint64_t *mag, int *neg, int *range)
{
    size_t   i;
    unsigned d;
    int      digits;

    *mag = 0;
    *neg = 0;
    *range = 0;
    i = 0;
    while (i < n && mc_isspace((unsigned char) p[i])) {
        i++;
    }
    if (i < n && (p[i] == '+' || p[i] == '-')) {
        *neg = p[i] == '-';
        i++;
    }
    digits = 0;
    for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
        d = (unsigned) (p[i] - '0');
        if (*mag > (UINT64_MAX - d) / 10) {
            *range = 1;
        } else {
            *mag = *mag * 10 + d;
        }
        digits = 1;
    }
    if (digits == 0) {
        return 0;
    }
    return i == n || mc_isspace((unsigned char) p[i]);
}

int
brim_mctext_strtoull(const char *p, size_t n, uint64_t *out)
{
    uint64_t mag, v;
    int      neg, range;

    if (mc_scan(p, n, &mag, &neg, &range) == 0 || range) {
        return 0;
    }
    /* strtoull() negates a '-' number modulo 2^64: "-1" is 2^64 - 1, which
     * memcached then refuses, but "-18446744073709551615" is 1 and passes
     * (checked on 1.6.18: "set k -18446744073709551615 0 1" stores flags
     * 1). */
    v = neg ? 0 - mag : mag;
    if (v > INT64_MAX && memchr(p, '-', n) != NULL) {
        return 0;
    }
    *out = v;
    return 1;
}

int
brim_mctext_strtoul(const char *p, size_t n, uint32_t *out)
{
    uint64_t v;

    if (brim_mctext_strtoull(p, n, &v) == 0) {
        return 0;
    }
    *out = (uint32_t) v; /* memcached keeps the low 32 bits */
    return 1;
}

int
brim_mctext_strtol(const char *p, size_t n, int32_t *out)
{
    uint64_t mag;
    uint32_t low;
    int      neg, range;

    if (mc_scan(p, n, &mag, &neg, &range) == 0 || range) {
        return 0;
    }
    /* strtol()'s range on a 64-bit host: -2^63 .. 2^63 - 1. */
    if ((neg == 0 && mag > (uint64_t) INT64_MAX)
        || (neg && mag > (uint64_t) INT64_MAX + 1))
    {
        return 0;
    }
    /* memcached stores the long into an int32_t: the low 32 bits, two's
     * complement ("set k 0 4294967295 1" is exptime -1, expired). */
    low = (uint32_t) (neg ? 0 - mag : mag);
    *out = low <= INT32_MAX ? (int32_t) low
                            : (int32_t) ((int64_t) low - 4294967296LL);
    return 1;
}

int
brim_mctext_tok_is(const struct brim_mctext_tok *t, const char *s)
{
    size_t n;

    n = strlen(s);
    return t->n == n && memcmp(t->p, s, n) == 0;
}

int
brim_mctext_fail(struct brim_mctext_cmd *cmd, const struct brim_mctext_line *ln,
                 enum brim_mctext_err err, size_t swallow)
{
    int text;

    cmd->err = err;
    cmd->consumed = ln->consumed;
    cmd->swallow = swallow;
    /* A text command's noreply silences its errors too (out_string());
     * meta commands always answer errors (out_errstring()). */
    text = cmd->kind != BRIM_MCTEXT_NONE && cmd->kind < BRIM_MCTEXT_MN;
    if (text && cmd->noreply) {
        cmd->reply = NULL;
        cmd->reply_len = 0;
    } else {
        cmd->reply = brim_mctext_err_reply(err, &cmd->reply_len);
    }
    return 0;
}

int
brim_mctext_data(const char *buf, size_t len, const struct brim_mctext_line *ln,
                 size_t data_len, struct brim_mctext_cmd *cmd)
{
    const char *end;
    size_t      need;

    need = ln->consumed + data_len + 2;
    if (len < need) {
        return BRIM_EAGAIN;
    }
    end = buf + ln->consumed + data_len;
    if (end[0] != '\r' || end[1] != '\n') {
        brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_CHUNK, 0);
        cmd->consumed = need;
        return 0;
    }
    cmd->data = buf + ln->consumed;
    cmd->data_len = data_len;
    cmd->consumed = need;
    return 0;
}
