/*
 * proto/mctext_rep.c - memcached's replies, text and meta, appended to a
 * struct brim_buf, and memcached's expiry rule. Formats from
 * doc/protocol.txt; the order and spelling of meta return flags as
 * memcached 1.6.18 writes them (checked by experiment, docs/memcached.md).
 * Every function reserves the whole reply first, so OUT is unchanged on
 * BRIM_ENOMEM.
 */
#include "proto/mctext.h"

#include <string.h>

#include "common/defs.h"

/* Room for a meta reply's first line: a code and size, 17 flags of at most
 * 22 bytes, a key of 250 bytes as base64 (336) with " k" and " b", an
 * opaque, Z X W and "\r\n" make under 800 bytes. */
#define REP_LINE_MAX 1024
/* Decimal digits of a 64-bit number, and its sign. */
#define REP_DIGITS_MAX 21
/* Base64 of the longest key. */
#define REP_B64_KEY_MAX (4 * ((BRIM_MCTEXT_KEY_LIMIT + 2) / 3))

/* clang-format off */
static const struct {
    const char *line;               /* "STORED\r\n" */
    size_t      len;                /* bytes */
} rep_lines[] = {
#define REP_LINE(name, line) {line "\r\n", sizeof(line "\r\n") - 1},
    BRIM_MCTEXT_REPLY_MAP(REP_LINE)
#undef REP_LINE
};
_Static_assert(BRIM_ARRAY_LEN(rep_lines) == BRIM_MCTEXT_REPLY_COUNT,
               "one line per reply");
/* clang-format on */

/* One piece of a reply: P[0 .. N). */
struct rep_piece {
    const void *p; /* may be NULL when N is 0 */
    size_t      n; /* bytes */
};

/* Append the N pieces at PC as one reply, all or nothing. */
static int
rep_putv(struct brim_buf *out, const struct rep_piece *pc, size_t n)
{
    size_t total, i;
    char  *p;

    total = 0;
    for (i = 0; i < n; i++) {
        total += pc[i].n;
    }
    if (brim_buf_reserve(out, total) != 0) {
        return BRIM_ENOMEM;
    }
    p = brim_buf_tail(out);
    for (i = 0; i < n; i++) {
        if (pc[i].n > 0) {
            memcpy(p, pc[i].p, pc[i].n);
            p += pc[i].n;
        }
    }
    brim_buf_commit(out, total);
    return 0;
}

/* Write V in decimal at P (room for REP_DIGITS_MAX); returns the length. */
static size_t
rep_u64(char *p, uint64_t v)
{
    char   tmp[REP_DIGITS_MAX];
    size_t n, i;

    n = 0;
    do {
        tmp[n++] = (char) ('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (i = 0; i < n; i++) {
        p[i] = tmp[n - 1 - i];
    }
    return n;
}

/* As rep_u64() for a signed V. */
static size_t
rep_i64(char *p, int64_t v)
{
    if (v >= 0) {
        return rep_u64(p, (uint64_t) v);
    }
    p[0] = '-';
    return 1 + rep_u64(p + 1, 0 - (uint64_t) v);
}

int
brim_mctext_put_reply(struct brim_buf *out, enum brim_mctext_reply reply)
{
    if ((unsigned) reply >= BRIM_MCTEXT_REPLY_COUNT) {
        return BRIM_EINVAL;
    }
    return brim_buf_append(out, rep_lines[reply].line, rep_lines[reply].len);
}

int
brim_mctext_put_err(struct brim_buf *out, const struct brim_mctext_cmd *cmd)
{
    if (cmd->reply == NULL) {
        return 0;
    }
    return brim_buf_append(out, cmd->reply, cmd->reply_len);
}

int
brim_mctext_put_value(struct brim_buf *out, const char *key, size_t key_len,
                      uint32_t flags, const void *data, size_t data_len,
                      int with_cas, uint64_t cas)
{
    struct rep_piece pc[8];
    char             nf[REP_DIGITS_MAX + 1], nb[REP_DIGITS_MAX + 2];
    char             nc[REP_DIGITS_MAX + 1];
    size_t           k;

    /* " <flags>", " <bytes>", then " <cas>" or nothing */
    nf[0] = ' ';
    nb[0] = ' ';
    nc[0] = ' ';
    k = 0;
    pc[k++] = (struct rep_piece){"VALUE ", 6};
    pc[k++] = (struct rep_piece){key, key_len};
    pc[k++] = (struct rep_piece){nf, 1 + rep_u64(nf + 1, flags)};
    pc[k++] = (struct rep_piece){nb, 1 + rep_u64(nb + 1, data_len)};
    if (with_cas) {
        pc[k++] = (struct rep_piece){nc, 1 + rep_u64(nc + 1, cas)};
    }
    pc[k++] = (struct rep_piece){"\r\n", 2};
    pc[k++] = (struct rep_piece){data, data_len};
    pc[k++] = (struct rep_piece){"\r\n", 2};
    return rep_putv(out, pc, k);
}

int
brim_mctext_put_number(struct brim_buf *out, uint64_t n)
{
    char   b[REP_DIGITS_MAX + 2];
    size_t len;

    len = rep_u64(b, n);
    memcpy(b + len, "\r\n", 2);
    return brim_buf_append(out, b, len + 2);
}

int
brim_mctext_put_version(struct brim_buf *out, const char *version)
{
    struct rep_piece pc[3] = {
        {"VERSION ", 8}, {version, strlen(version)}, {"\r\n", 2}};

    return rep_putv(out, pc, 3);
}

int
brim_mctext_put_stat(struct brim_buf *out, const char *name, const char *value)
{
    struct rep_piece pc[5] = {{"STAT ", 5},
                              {name, strlen(name)},
                              {" ", 1},
                              {value, strlen(value)},
                              {"\r\n", 2}};

    return rep_putv(out, pc, 5);
}

int
brim_mctext_put_stat_u64(struct brim_buf *out, const char *name, uint64_t value)
{
    char b[REP_DIGITS_MAX + 1];

    b[rep_u64(b, value)] = '\0';
    return brim_mctext_put_stat(out, name, b);
}

/* "<PREFIX> <MSG>\r\n" with MSG's CR and LF written as spaces. */
static int
rep_error_line(struct brim_buf *out, const char *prefix, const char *msg)
{
    struct rep_piece pc[3];
    size_t           start, i, plen, mlen;

    plen = strlen(prefix);
    mlen = strlen(msg);
    pc[0] = (struct rep_piece){prefix, plen};
    pc[1] = (struct rep_piece){msg, mlen};
    pc[2] = (struct rep_piece){"\r\n", 2};
    start = out->len;
    if (rep_putv(out, pc, 3) != 0) {
        return BRIM_ENOMEM;
    }
    for (i = start + plen; i < start + plen + mlen; i++) {
        if (out->data[i] == '\r' || out->data[i] == '\n') {
            out->data[i] = ' ';
        }
    }
    return 0;
}

int
brim_mctext_put_client_error(struct brim_buf *out, const char *msg)
{
    return rep_error_line(out, "CLIENT_ERROR ", msg);
}

int
brim_mctext_put_server_error(struct brim_buf *out, const char *msg)
{
    return rep_error_line(out, "SERVER_ERROR ", msg);
}

/* ---- meta replies ---- */

/* A meta reply's first line, built on the stack. */
struct rep_meta {
    char   b[REP_LINE_MAX]; /* the line */
    size_t n;               /* bytes used */
    int    over;            /* 1: it did not fit (a hand-made CMD) */
};

static void
rm_put(struct rep_meta *rm, const void *p, size_t n)
{
    if (rm->over || n > sizeof(rm->b) - rm->n) {
        rm->over = 1;
        return;
    }
    memcpy(rm->b + rm->n, p, n);
    rm->n += n;
}

/* The number V (signed when IS_SIGNED, else U) in decimal. */
static void
rm_num(struct rep_meta *rm, int is_signed, int64_t v, uint64_t u)
{
    char   b[REP_DIGITS_MAX];
    size_t n;

    n = is_signed ? rep_i64(b, v) : rep_u64(b, u);
    rm_put(rm, b, n);
}

/* " <LETTER><U>" */
static void
rm_flag_u64(struct rep_meta *rm, char letter, uint64_t u)
{
    char b[2];

    b[0] = ' ';
    b[1] = letter;
    rm_put(rm, b, 2);
    rm_num(rm, 0, 0, u);
}

/* " k<key>", and for a b key " k<base64> b". */
static void
rm_key(struct rep_meta *rm, const struct brim_mctext_cmd *cmd)
{
    char   b64[REP_B64_KEY_MAX];
    size_t n;

    rm_put(rm, " k", 2);
    if (cmd->key_b64 == 0) {
        rm_put(rm, cmd->key, cmd->key_len);
        return;
    }
    if (cmd->key_bin_len > BRIM_MCTEXT_KEY_LIMIT) {
        rm->over = 1;
        return;
    }
    /* Encoded again from the bytes, as memcached does: a key sent with
     * stray bytes ("Zm9v!") comes back clean ("Zm9v"). */
    n = brim_mctext_b64_encode(cmd->key_bin, cmd->key_bin_len, b64);
    rm_put(rm, b64, n);
    rm_put(rm, " b", 2);
}

/* " O<opaque>" */
static void
rm_opaque(struct rep_meta *rm, const struct brim_mctext_cmd *cmd)
{
    rm_put(rm, " O", 2);
    rm_put(rm, cmd->meta.opaque, cmd->meta.opaque_len);
}

/* The flags of CMD's request, in its order, that the reply echoes: O and
 * k always; c when WITH_C (ms). */
static void
rm_echo(struct rep_meta *rm, const struct brim_mctext_cmd *cmd,
        const struct brim_mctext_meta_item *it, int with_c)
{
    size_t i;

    for (i = 0; i < cmd->meta.norder; i++) {
        switch (cmd->meta.order[i]) {
        case 'O':
            rm_opaque(rm, cmd);
            break;
        case 'k':
            rm_key(rm, cmd);
            break;
        case 'c':
            if (with_c) {
                rm_flag_u64(rm, 'c', it->cas);
            }
            break;
        default:
            break;
        }
    }
}

/* mg's hit: the item flags s t c f l h O k in request order, then Z X W. */
static void
rm_mg_hit(struct rep_meta *rm, const struct brim_mctext_cmd *cmd,
          const struct brim_mctext_meta_item *it)
{
    size_t i;

    for (i = 0; i < cmd->meta.norder; i++) {
        switch (cmd->meta.order[i]) {
        case 's':
            rm_flag_u64(rm, 's', it->value_len);
            break;
        case 't':
            rm_put(rm, " t", 2);
            rm_num(rm, 1, it->ttl_s, 0);
            break;
        case 'c':
            rm_flag_u64(rm, 'c', it->cas);
            break;
        case 'f':
            rm_flag_u64(rm, 'f', it->client_flags);
            break;
        case 'l':
            rm_flag_u64(rm, 'l', it->last_access_s);
            break;
        case 'h':
            rm_put(rm, it->fetched ? " h1" : " h0", 3);
            break;
        case 'O':
            rm_opaque(rm, cmd);
            break;
        case 'k':
            rm_key(rm, cmd);
            break;
        default:
            break;
        }
    }
    if (it->win_sent) {
        rm_put(rm, " Z", 2);
    }
    if (it->stale) {
        rm_put(rm, " X", 2);
    }
    if (it->won) {
        rm_put(rm, " W", 2);
    }
}

/* ma's success: c t O k in request order. */
static void
rm_ma_hit(struct rep_meta *rm, const struct brim_mctext_cmd *cmd,
          const struct brim_mctext_meta_item *it)
{
    size_t i;

    for (i = 0; i < cmd->meta.norder; i++) {
        switch (cmd->meta.order[i]) {
        case 'c':
            rm_flag_u64(rm, 'c', it->cas);
            break;
        case 't':
            rm_put(rm, " t", 2);
            rm_num(rm, 1, it->ttl_s, 0);
            break;
        case 'O':
            rm_opaque(rm, cmd);
            break;
        case 'k':
            rm_key(rm, cmd);
            break;
        default:
            break;
        }
    }
}

int
brim_mctext_meta_quiet(const struct brim_mctext_cmd *cmd,
                       enum brim_mctext_meta_code    code)
{
    if (cmd->noreply == 0) {
        return 0;
    }
    switch (cmd->kind) {
    case BRIM_MCTEXT_MG:
        return code == BRIM_MCTEXT_META_EN;
    case BRIM_MCTEXT_MS:
    case BRIM_MCTEXT_MD:
    case BRIM_MCTEXT_MA:
        return code == BRIM_MCTEXT_META_HD;
    default:
        return 0;
    }
}

int
brim_mctext_put_meta(struct brim_buf *out, const struct brim_mctext_cmd *cmd,
                     const struct brim_mctext_meta_item *item)
{
    static const char *const codes[] = {"HD", "EN", "NF", "NS", "EX"};
    struct rep_meta          rm;
    struct rep_piece         pc[4];
    char                     num[REP_DIGITS_MAX];
    size_t                   numlen, k;
    int                      hit, value;

    if ((cmd->kind != BRIM_MCTEXT_MG && cmd->kind != BRIM_MCTEXT_MS
         && cmd->kind != BRIM_MCTEXT_MD && cmd->kind != BRIM_MCTEXT_MA)
        || (unsigned) item->code >= BRIM_ARRAY_LEN(codes)
        || cmd->meta.norder > BRIM_MCTEXT_META_FLAGS_MAX)
    {
        return BRIM_EINVAL;
    }
    if (brim_mctext_meta_quiet(cmd, item->code)) {
        return 0;
    }
    rm.n = 0;
    rm.over = 0;
    hit = item->code == BRIM_MCTEXT_META_HD;
    value = hit && (cmd->meta.flags & BRIM_MCTEXT_MF('v')) != 0
        && (cmd->kind == BRIM_MCTEXT_MG || cmd->kind == BRIM_MCTEXT_MA);
    numlen = rep_u64(num, item->number);
    if (value) {
        rm_put(&rm, "VA ", 3);
        rm_num(&rm, 0, 0,
               cmd->kind == BRIM_MCTEXT_MG ? item->value_len : numlen);
    } else {
        rm_put(&rm, codes[item->code], 2);
    }
    if (hit && cmd->kind == BRIM_MCTEXT_MG) {
        rm_mg_hit(&rm, cmd, item);
    } else if (hit && cmd->kind == BRIM_MCTEXT_MA) {
        rm_ma_hit(&rm, cmd, item);
    } else {
        rm_echo(&rm, cmd, item, cmd->kind == BRIM_MCTEXT_MS);
    }
    rm_put(&rm, "\r\n", 2);
    if (rm.over) {
        return BRIM_EINVAL;
    }
    k = 0;
    pc[k++] = (struct rep_piece){rm.b, rm.n};
    if (value && cmd->kind == BRIM_MCTEXT_MG) {
        pc[k++] = (struct rep_piece){item->value, item->value_len};
        pc[k++] = (struct rep_piece){"\r\n", 2};
    } else if (value) {
        pc[k++] = (struct rep_piece){num, numlen};
        pc[k++] = (struct rep_piece){"\r\n", 2};
    }
    return rep_putv(out, pc, k);
}

int
brim_mctext_put_me(struct brim_buf *out, const struct brim_mctext_cmd *cmd,
                   const char *text)
{
    struct rep_piece pc[5];
    char             b64[REP_B64_KEY_MAX];

    pc[0] = (struct rep_piece){"ME ", 3};
    if (cmd->key_b64) {
        if (cmd->key_bin_len > BRIM_MCTEXT_KEY_LIMIT) {
            return BRIM_EINVAL;
        }
        pc[1].p = b64;
        pc[1].n = brim_mctext_b64_encode(cmd->key_bin, cmd->key_bin_len, b64);
    } else {
        pc[1] = (struct rep_piece){cmd->key, cmd->key_len};
    }
    pc[2] = (struct rep_piece){" ", 1};
    pc[3] = (struct rep_piece){text, strlen(text)};
    pc[4] = (struct rep_piece){"\r\n", 2};
    return rep_putv(out, pc, 5);
}

/* ---- expiry ---- */

enum brim_mctext_expiry
brim_mctext_expiry(int64_t exptime, uint64_t now_s, uint64_t *at_s)
{
    if (exptime == 0) {
        return BRIM_MCTEXT_EXPIRY_NEVER;
    }
    if (exptime < 0) {
        return BRIM_MCTEXT_EXPIRY_NOW;
    }
    if (exptime <= BRIM_MCTEXT_RELATIVE_MAX) {
        *at_s = now_s + (uint64_t) exptime;
        return BRIM_MCTEXT_EXPIRY_AT;
    }
    /* An absolute time: one in the past is expired already (memcached
     * gives it a time before every item's, or one already gone). */
    if ((uint64_t) exptime <= now_s) {
        return BRIM_MCTEXT_EXPIRY_NOW;
    }
    *at_s = (uint64_t) exptime;
    return BRIM_MCTEXT_EXPIRY_AT;
}
