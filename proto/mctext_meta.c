/*
 * proto/mctext_meta.c - memcached's meta commands (mg ms md ma mn me) and
 * the base64 of their b keys, as doc/protocol.txt describes them and
 * memcached 1.6.18 answers them (docs/memcached.md has the error list).
 * Lines arrive tokenized from proto/mctext.c; replies are in mctext_rep.c.
 */
#include "proto/mctext.h"

#include <string.h>

#include "common/defs.h"
#include "proto/mctext_int.h"

/* memcached refuses a meta line of more than this many tokens, its end
 * marker counted (MFLAG_MAX_OPT_LENGTH): 19 real ones. */
#define META_TOKENS_MAX 19
/* memcached refuses a <datalen> above this (INT_MAX - 2). */
#define META_VLEN_MAX 2147483645

/* The value of base64 letter C; 64 for '=' (a pad, worth 0); -1 for a
 * byte outside the alphabet. */
static int
b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') {
        return c - 'A';
    }
    if (c >= 'a' && c <= 'z') {
        return c - 'a' + 26;
    }
    if (c >= '0' && c <= '9') {
        return c - '0' + 52;
    }
    if (c == '+') {
        return 62;
    }
    if (c == '/') {
        return 63;
    }
    return c == '=' ? 64 : -1;
}

size_t
brim_mctext_b64_decode(const char *src, size_t len, char *out)
{
    unsigned char q[4];
    size_t        i, count, o, n, pad;
    int           v;

    /* memcached 1.6.18 skips bytes outside the alphabet: "Zm9v!" is
     * "foo" (checked), and so is "Z!m9v". */
    count = 0;
    for (i = 0; i < len; i++) {
        count += b64_value((unsigned char) src[i]) >= 0;
    }
    if (count == 0 || count % 4 != 0) {
        return 0;
    }
    o = 0;
    n = 0;
    pad = 0;
    for (i = 0; i < len; i++) {
        v = b64_value((unsigned char) src[i]);
        if (v < 0) {
            continue;
        }
        if (v == 64) {
            pad++;
            v = 0;
        }
        q[n++] = (unsigned char) v;
        if (n < 4) {
            continue;
        }
        out[o++] = (char) (unsigned char) ((q[0] << 2) | (q[1] >> 4));
        out[o++] = (char) (unsigned char) ((q[1] << 4) | (q[2] >> 2));
        out[o++] = (char) (unsigned char) ((q[2] << 6) | q[3]);
        n = 0;
        /* The first group with a pad ends the key ("Zg==Zm9v" is "f");
         * three pads or more in it do not decode. */
        if (pad > 0) {
            if (pad > 2) {
                return 0;
            }
            o -= pad;
            break;
        }
    }
    return o;
}

size_t
brim_mctext_b64_encode(const void *src, size_t len, char *out)
{
    static const char    abc[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                 "abcdefghijklmnopqrstuvwxyz0123456789+/";
    const unsigned char *s = src;
    size_t               i, o;
    uint32_t             w;

    o = 0;
    for (i = 0; i + 3 <= len; i += 3) {
        w = (uint32_t) s[i] << 16 | (uint32_t) s[i + 1] << 8 | s[i + 2];
        out[o++] = abc[w >> 18];
        out[o++] = abc[(w >> 12) & 63];
        out[o++] = abc[(w >> 6) & 63];
        out[o++] = abc[w & 63];
    }
    if (i < len) {
        w = (uint32_t) s[i] << 16;
        if (i + 1 < len) {
            w |= (uint32_t) s[i + 1] << 8;
        }
        out[o++] = abc[w >> 18];
        out[o++] = abc[(w >> 12) & 63];
        out[o++] = i + 1 < len ? abc[(w >> 6) & 63] : '=';
        out[o++] = '=';
    }
    return o;
}

/* Decode CMD's key (base64) into CMD->key_bin; 0, or -1 when it does not
 * decode. The key passed the limit as text, so it fits. */
static int
meta_b64_key(struct brim_mctext_cmd *cmd)
{
    size_t n;

    BRIM_ASSERT(cmd->key_len <= BRIM_MCTEXT_KEY_LIMIT);
    n = brim_mctext_b64_decode(cmd->key, cmd->key_len, cmd->key_bin);
    if (n == 0) {
        return -1;
    }
    cmd->key_bin_len = n;
    cmd->key_b64 = 1;
    return 0;
}

/*
 * Read the flag token T (its letter O, known to memcached) into
 * CMD->meta. Returns 0; 1 when its argument is bad, with *ERR naming it
 * (F leaves *ERR as it was: memcached sets no message for it); -1 when O
 * is no flag memcached 1.6.18 knows.
 */
static int
meta_flag(struct brim_mctext_cmd *cmd, const struct brim_mctext_tok *t,
          unsigned char o, enum brim_mctext_err *err)
{
    struct brim_mctext_meta *m = &cmd->meta;
    const char              *arg = t->p + 1;
    size_t                   an = t->n - 1;
    int32_t                 *ttl;

    switch (o) {
    case 'b':
        *err = BRIM_MCTEXT_ERR_META_B64;
        return meta_b64_key(cmd) != 0;
    case 'N':
    case 'T':
    case 'R':
        ttl = o == 'N' ? &m->vivify_ttl : &m->ttl;
        ttl = o == 'R' ? &m->recache_ttl : ttl;
        *err = BRIM_MCTEXT_ERR_META_TOKEN;
        return brim_mctext_strtol(arg, an, ttl) == 0;
    case 'O':
        m->opaque = arg;
        m->opaque_len = an;
        return 0;
    case 'c':
    case 'f':
    case 'h':
    case 'k':
    case 'l':
    case 'q':
    case 's':
    case 't':
    case 'u':
    case 'v':
    case 'I':
    case 'L':
    case 'P':
        return 0;
    case 'F':
        return brim_mctext_strtoul(arg, an, &m->client_flags) == 0;
    case 'C':
        *err = BRIM_MCTEXT_ERR_META_TOKEN;
        return brim_mctext_strtoull(arg, an, &m->cas) == 0;
    case 'M':
        m->mode = t->n == 2 ? t->p[1] : 0;
        *err = BRIM_MCTEXT_ERR_META_MLEN;
        return t->n != 2;
    case 'J':
        *err = BRIM_MCTEXT_ERR_META_INITIAL;
        return brim_mctext_strtoull(arg, an, &m->initial) == 0;
    case 'D':
        *err = BRIM_MCTEXT_ERR_META_DELTA;
        return brim_mctext_strtoull(arg, an, &m->delta) == 0;
    default:
        return -1;
    }
}

/*
 * Read the flags of LN from token START on into CMD->meta, as memcached's
 * _meta_flag_preparse(): a repeated letter (or a byte above 126) stops at
 * once with META_DUP, an unknown one with META_FLAG; a bad argument is
 * noted and reading goes on, so the error named is the last one found (a
 * bad F's leaves the message as it was: FORMAT unless another came
 * first). Returns NONE or the error.
 */
static enum brim_mctext_err
meta_flags(const struct brim_mctext_line *ln, size_t start,
           struct brim_mctext_cmd *cmd)
{
    struct brim_mctext_meta *m = &cmd->meta;
    unsigned char            seen[127], o;
    enum brim_mctext_err     err, e;
    size_t                   i;
    int                      rc, failed;

    memset(seen, 0, sizeof(seen));
    err = BRIM_MCTEXT_ERR_FORMAT;
    failed = 0;
    for (i = start; i < ln->ntok; i++) {
        o = (unsigned char) ln->tok[i].p[0];
        if (o >= 127 || seen[o]) {
            return BRIM_MCTEXT_ERR_META_DUP;
        }
        seen[o] = 1;
        e = err;
        rc = meta_flag(cmd, &ln->tok[i], o, &e);
        if (rc < 0) {
            return BRIM_MCTEXT_ERR_META_FLAG;
        }
        if (rc > 0) {
            err = e;
            failed = 1;
        }
        /* Callers allow at most META_TOKENS_MAX tokens, so at most
         * BRIM_MCTEXT_META_FLAGS_MAX flags after the command and key. */
        BRIM_ASSERT(m->norder < BRIM_MCTEXT_META_FLAGS_MAX);
        m->flags |= BRIM_MCTEXT_MF(o);
        m->order[m->norder++] = (char) o;
    }
    return failed ? err : BRIM_MCTEXT_ERR_NONE;
}

/* The opaque token, 'O' included, is longer than memcached allows. */
static int
meta_opaque_long(const struct brim_mctext_cmd *cmd)
{
    return (cmd->meta.flags & BRIM_MCTEXT_MF('O')) != 0
        && cmd->meta.opaque_len + 1 > BRIM_MCTEXT_OPAQUE_MAX;
}

/*
 * What mg, ms, md and ma check first, in memcached's order: a key
 * (ERROR without one), its length (FORMAT; a b key is judged as text),
 * then for all but ms the token count. Returns 1 when CMD failed.
 */
static int
meta_head(const struct brim_mctext_line   *ln,
          const struct brim_mctext_limits *lim, struct brim_mctext_cmd *cmd)
{
    if (ln->ntok < 2) {
        brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
        return 1;
    }
    if (ln->tok[1].n > lim->max_key_bytes) {
        brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
        return 1;
    }
    cmd->key = ln->tok[1].p;
    cmd->key_len = ln->tok[1].n;
    if (cmd->kind != BRIM_MCTEXT_MS && ln->ntok > META_TOKENS_MAX) {
        /* mg words it differently from md and ma. */
        brim_mctext_fail(cmd, ln,
                         cmd->kind == BRIM_MCTEXT_MG
                             ? BRIM_MCTEXT_ERR_META_MANY_MG
                             : BRIM_MCTEXT_ERR_META_MANY,
                         0);
        return 1;
    }
    return 0;
}

/* mg <key> <flags>*, md <key> <flags>*, ma <key> <flags>*. */
static int
meta_key_cmd(const struct brim_mctext_line   *ln,
             const struct brim_mctext_limits *lim, struct brim_mctext_cmd *cmd)
{
    struct brim_mctext_meta *m = &cmd->meta;
    enum brim_mctext_err     err;

    if (meta_head(ln, lim, cmd)) {
        return 0;
    }
    err = meta_flags(ln, 2, cmd);
    if (err != BRIM_MCTEXT_ERR_NONE) {
        /* md and ma do not say which flag (1.6.18). */
        return brim_mctext_fail(
            cmd, ln,
            cmd->kind == BRIM_MCTEXT_MG ? err : BRIM_MCTEXT_ERR_META_BAD, 0);
    }
    if (cmd->kind == BRIM_MCTEXT_MA) {
        switch (m->mode) {
        case 0:
        case 'I':
        case '+':
            m->incr = 1;
            break;
        case 'D':
        case '-':
            m->incr = 0;
            break;
        default:
            return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_META_MA_MODE, 0);
        }
    }
    /* memcached checks the opaque while writing the reply, so for mg and
     * ma only after the command ran; refused here, before. */
    if (meta_opaque_long(cmd)) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_META_OPAQUE, 0);
    }
    cmd->noreply = (m->flags & BRIM_MCTEXT_MF('q')) != 0;
    cmd->consumed = ln->consumed;
    return 0;
}

/* ms's mode letter as the text command it equals; NONE if unknown. */
static enum brim_mctext_kind
meta_store_kind(char mode)
{
    switch (mode) {
    case 0:
    case 'S':
        return BRIM_MCTEXT_SET;
    case 'E':
        return BRIM_MCTEXT_ADD;
    case 'A':
        return BRIM_MCTEXT_APPEND;
    case 'P':
        return BRIM_MCTEXT_PREPEND;
    case 'R':
        return BRIM_MCTEXT_REPLACE;
    default:
        return BRIM_MCTEXT_NONE;
    }
}

/*
 * ms <key> <datalen> <flags>*\r\n<data>\r\n. Errors found before
 * <datalen> is known leave the data to be read as a command (memcached
 * does the same); later ones swallow it.
 */
static int
meta_set(const char *buf, size_t len, const struct brim_mctext_line *ln,
         const struct brim_mctext_limits *lim, struct brim_mctext_cmd *cmd)
{
    struct brim_mctext_meta *m = &cmd->meta;
    enum brim_mctext_err     err;
    int32_t                  vlen;
    size_t                   swallow;

    if (meta_head(ln, lim, cmd)) {
        return 0;
    }
    if (ln->ntok == 2) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
    }
    if (ln->ntok > META_TOKENS_MAX) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_META_MANY, 0);
    }
    if (brim_mctext_strtol(ln->tok[2].p, ln->tok[2].n, &vlen) == 0 || vlen < 0
        || vlen > META_VLEN_MAX)
    {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
    }
    swallow = (size_t) vlen + 2;
    err = meta_flags(ln, 3, cmd);
    if (err != BRIM_MCTEXT_ERR_NONE) {
        return brim_mctext_fail(cmd, ln, err, swallow);
    }
    /* A bad mode is reported before a too-long opaque (1.6.18's order). */
    m->store = meta_store_kind(m->mode);
    if (m->store == BRIM_MCTEXT_NONE) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_META_MS_MODE, swallow);
    }
    if ((m->flags & BRIM_MCTEXT_MF('C')) != 0
        && (m->store == BRIM_MCTEXT_SET || m->store == BRIM_MCTEXT_REPLACE))
    {
        m->store = BRIM_MCTEXT_CAS;
    }
    if (meta_opaque_long(cmd)) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_META_OPAQUE, swallow);
    }
    cmd->noreply = (m->flags & BRIM_MCTEXT_MF('q')) != 0;
    cmd->flags = m->client_flags;
    cmd->exptime = m->ttl;
    if ((uint32_t) vlen > lim->max_value_bytes) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_TOO_LARGE, swallow);
    }
    return brim_mctext_data(buf, len, ln, (size_t) vlen, cmd);
}

/* me <key> [b]: only a "b" right after the key counts, and a key that
 * does not decode is FORMAT here. */
static int
meta_debug(const struct brim_mctext_line   *ln,
           const struct brim_mctext_limits *lim, struct brim_mctext_cmd *cmd)
{
    if (ln->ntok < 2 || ln->tok[1].n > lim->max_key_bytes) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
    }
    cmd->key = ln->tok[1].p;
    cmd->key_len = ln->tok[1].n;
    if (ln->ntok >= 3 && brim_mctext_tok_is(&ln->tok[2], "b")) {
        if (meta_b64_key(cmd) != 0) {
            return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
        }
        cmd->meta.flags = BRIM_MCTEXT_MF('b');
    }
    cmd->consumed = ln->consumed;
    return 0;
}

int
brim_mctext_meta_parse(const char *buf, size_t len,
                       const struct brim_mctext_line   *ln,
                       const struct brim_mctext_limits *lim, char sub,
                       struct brim_mctext_cmd *cmd)
{
    cmd->meta.delta = 1; /* ma's default, in every command */
    switch (sub) {
    case 'g':
        cmd->kind = BRIM_MCTEXT_MG;
        return meta_key_cmd(ln, lim, cmd);
    case 'd':
        cmd->kind = BRIM_MCTEXT_MD;
        return meta_key_cmd(ln, lim, cmd);
    case 'a':
        cmd->kind = BRIM_MCTEXT_MA;
        return meta_key_cmd(ln, lim, cmd);
    case 's':
        cmd->kind = BRIM_MCTEXT_MS;
        return meta_set(buf, len, ln, lim, cmd);
    case 'e':
        cmd->kind = BRIM_MCTEXT_ME;
        return meta_debug(ln, lim, cmd);
    case 'n':
        /* Any arguments are ignored ("mn x y" answers MN). */
        cmd->kind = BRIM_MCTEXT_MN;
        cmd->consumed = ln->consumed;
        return 0;
    default:
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
    }
}
