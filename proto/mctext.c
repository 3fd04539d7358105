/*
 * proto/mctext.c - memcached's text protocol: finding a command line in the
 * buffered input, cutting it into tokens, and the text commands (get to
 * verbosity); the meta commands are in mctext_meta.c, the replies in
 * mctext_rep.c, number parsing and error replies in mctext_lex.c. Facts from memcached's
 * doc/protocol.txt; where it is silent, memcached 1.6.18's answers were
 * taken by experiment (docs/memcached.md). No memcached code is used.
 */
#include "proto/mctext.h"

#include <inttypes.h>
#include <string.h>

#include "common/defs.h"
#include "proto/mctext_int.h"

/* memcached lets a get line grow only when its text starts, after at most
 * this many spaces, with "get " or "gets " (try_read_command_ascii()). */
#define MC_GET_PREFIX_SPACES 100
/* Smallest line limit: the get prefix above must fit in it. */
#define MC_LINE_MIN 128
/* memcached refuses a <bytes> above this (INT_MAX - 2). */
#define MC_VLEN_MAX 2147483645

/* clang-format off */
static const char *const mc_kind_names[] = {
    "",
#define MC_KIND_NAME(name, word) word,
    BRIM_MCTEXT_KIND_MAP(MC_KIND_NAME)
#undef MC_KIND_NAME
};
_Static_assert(BRIM_ARRAY_LEN(mc_kind_names) == BRIM_MCTEXT_KIND_COUNT,
               "one name per command");

/* clang-format on */

void
brim_mctext_limits_default(struct brim_mctext_limits *lim)
{
    lim->max_key_bytes = BRIM_MCTEXT_KEY_LIMIT;
    lim->max_value_bytes = BRIM_MCTEXT_VALUE_MAX;
    lim->max_line_bytes = BRIM_MCTEXT_LINE_MAX;
    lim->max_get_line_bytes = BRIM_MCTEXT_GET_LINE_MAX;
}

int
brim_mctext_limits_check(const struct brim_mctext_limits *lim,
                         char errbuf[BRIM_ERRBUF_LEN])
{
    if (lim->max_key_bytes < 1 || lim->max_key_bytes > BRIM_MCTEXT_KEY_LIMIT) {
        brim_errfmt(errbuf,
                    "mctext: max key is %" PRIu32 " bytes, allowed "
                    "1 .. %d",
                    lim->max_key_bytes, BRIM_MCTEXT_KEY_LIMIT);
        return BRIM_EINVAL;
    }
    if (lim->max_value_bytes > BRIM_MCTEXT_VALUE_LIMIT) {
        brim_errfmt(errbuf, "mctext: max value is %" PRIu32 " bytes, max %u",
                    lim->max_value_bytes, BRIM_MCTEXT_VALUE_LIMIT);
        return BRIM_EINVAL;
    }
    if (lim->max_line_bytes < MC_LINE_MIN
        || lim->max_line_bytes > BRIM_MCTEXT_LINE_LIMIT)
    {
        brim_errfmt(errbuf,
                    "mctext: max line is %" PRIu32 " bytes, allowed "
                    "%d .. %u",
                    lim->max_line_bytes, MC_LINE_MIN, BRIM_MCTEXT_LINE_LIMIT);
        return BRIM_EINVAL;
    }
    if (lim->max_get_line_bytes < lim->max_line_bytes
        || lim->max_get_line_bytes > BRIM_MCTEXT_LINE_LIMIT)
    {
        brim_errfmt(errbuf,
                    "mctext: max get line is %" PRIu32 " bytes, "
                    "allowed %" PRIu32 " (the line limit) .. %u",
                    lim->max_get_line_bytes, lim->max_line_bytes,
                    BRIM_MCTEXT_LINE_LIMIT);
        return BRIM_EINVAL;
    }
    return 0;
}

size_t
brim_mctext_buffer_max(const struct brim_mctext_limits *lim)
{
    size_t store, get;

    /* A line of max_line_bytes and its '\n', then a data block and its
     * "\r\n"; or a get line of max_get_line_bytes and its '\n'. Anything
     * longer is answered (closed or refused) before it is all here. */
    store = (size_t) lim->max_line_bytes + 1 + lim->max_value_bytes + 2;
    get = (size_t) lim->max_get_line_bytes + 1;
    return BRIM_MAX(store, get);
}

const char *
brim_mctext_kind_name(enum brim_mctext_kind kind)
{
    if ((unsigned) kind >= BRIM_MCTEXT_KIND_COUNT) {
        return "";
    }
    return mc_kind_names[kind];
}

/* ---- lines ---- */

/* True when the buffered start of a line lets it pass the line limit
 * (see MC_GET_PREFIX_SPACES); BUF holds more than MC_LINE_MIN bytes. */
static int
mc_get_prefix(const char *buf, size_t len)
{
    size_t i;

    i = 0;
    while (i < len && buf[i] == ' ') {
        i++;
    }
    if (i > MC_GET_PREFIX_SPACES) {
        return 0;
    }
    return (len - i >= 4 && memcmp(buf + i, "get ", 4) == 0)
        || (len - i >= 5 && memcmp(buf + i, "gets ", 5) == 0);
}

/*
 * Find the line at the start of BUF[0 .. LEN). Returns 0 (LN->text and
 * LN->consumed set), BRIM_EAGAIN, or BRIM_ETOOBIG when the line passes its
 * limit without a '\n': memcached closes the connection then. The limit is
 * judged on the bytes before the '\n', however they arrived: memcached
 * serves a longer line that came in one read, and closes one that came in
 * pieces; brim always closes, so the answer does not depend on the reads.
 */
static int
mc_line_find(const char *buf, size_t len, const struct brim_mctext_limits *lim,
             struct brim_mctext_line *ln)
{
    const char *nl, *nul;
    size_t      limit, end;

    limit = lim->max_line_bytes;
    nl = memchr(buf, '\n', BRIM_MIN(len, limit + 1));
    if (nl == NULL) {
        if (len <= limit) {
            return BRIM_EAGAIN;
        }
        if (mc_get_prefix(buf, len) == 0) {
            return BRIM_ETOOBIG;
        }
        limit = lim->max_get_line_bytes;
        nl = memchr(buf, '\n', BRIM_MIN(len, limit + 1));
        if (nl == NULL) {
            return len <= limit ? BRIM_EAGAIN : BRIM_ETOOBIG;
        }
    }
    end = (size_t) (nl - buf);
    ln->consumed = end + 1;
    /* memcached drops the '\r' only when the line has two bytes or more
     * before its '\n'; "\r\n" alone is the command "\r" (ERROR either
     * way). */
    if (end > 1 && buf[end - 1] == '\r') {
        end--;
    }
    /* Its tokenizer stops at a NUL: "get k\0junk" is "get k". */
    nul = memchr(buf, '\0', end);
    ln->text = buf;
    ln->text_len = nul == NULL ? end : (size_t) (nul - buf);
    return 0;
}

/* Split LN's text on spaces into at most BRIM_MCTEXT_TOKENS_MAX tokens. */
static void
mc_tokenize(struct brim_mctext_line *ln)
{
    const char *p, *end, *s;

    p = ln->text;
    end = p + ln->text_len;
    ln->ntok = 0;
    while (ln->ntok < BRIM_MCTEXT_TOKENS_MAX) {
        while (p < end && *p == ' ') {
            p++;
        }
        if (p == end) {
            break;
        }
        s = p;
        while (p < end && *p != ' ') {
            p++;
        }
        ln->tok[ln->ntok].p = s;
        ln->tok[ln->ntok].n = (size_t) (p - s);
        ln->ntok++;
    }
}

/* memcached's set_noreply_maybe(): the line's last token is "noreply". */
static int
mc_noreply(const struct brim_mctext_line *ln)
{
    return ln->ntok > 0
        && brim_mctext_tok_is(&ln->tok[ln->ntok - 1], "noreply");
}

/* ---- text commands ---- */

/*
 * get, gets, gat, gats (bget is get): the keys are every token after the
 * command (and gat's exptime), past the 23 the tokenizer keeps. A key
 * above the limit refuses the whole command, even after hits (memcached
 * drops the hits it had queued).
 */
static int
mc_get(const struct brim_mctext_line *ln, const struct brim_mctext_limits *lim,
       struct brim_mctext_cmd *cmd)
{
    const char *key;
    size_t      first, pos, n;

    if (ln->ntok < 2) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
    }
    first = 1;
    if (cmd->kind == BRIM_MCTEXT_GAT || cmd->kind == BRIM_MCTEXT_GATS) {
        if (brim_mctext_strtol(ln->tok[1].p, ln->tok[1].n, &cmd->exptime) == 0)
        {
            return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_EXPTIME, 0);
        }
        first = 2;
    }
    if (first < ln->ntok) {
        cmd->keys = ln->tok[first].p;
        cmd->keys_len = (size_t) (ln->text + ln->text_len - cmd->keys);
    }
    pos = 0;
    while (brim_mctext_next_key(cmd, &pos, &key, &n)) {
        if (n > lim->max_key_bytes) {
            cmd->keys = NULL;
            cmd->keys_len = 0;
            cmd->nkeys = 0;
            return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
        }
        cmd->nkeys++;
    }
    cmd->consumed = ln->consumed;
    return 0;
}

/* Take token I of LN as the key: FORMAT above the limit. */
static int
mc_key(const struct brim_mctext_line *ln, size_t i,
       const struct brim_mctext_limits *lim, struct brim_mctext_cmd *cmd)
{
    if (ln->tok[i].n > lim->max_key_bytes) {
        return -1;
    }
    cmd->key = ln->tok[i].p;
    cmd->key_len = ln->tok[i].n;
    return 0;
}

/*
 * set add replace append prepend: <key> <flags> <exptime> <bytes>
 * [noreply]; cas: ... <bytes> <cas unique> [noreply]. A token in the
 * noreply place that is not "noreply" is ignored, as memcached does.
 */
static int
mc_store(const char *buf, size_t len, const struct brim_mctext_line *ln,
         const struct brim_mctext_limits *lim, struct brim_mctext_cmd *cmd)
{
    int32_t vlen;
    size_t  base;

    base = cmd->kind == BRIM_MCTEXT_CAS ? 6 : 5;
    if (ln->ntok != base && ln->ntok != base + 1) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
    }
    cmd->noreply = mc_noreply(ln);
    if (mc_key(ln, 1, lim, cmd) != 0
        || brim_mctext_strtoul(ln->tok[2].p, ln->tok[2].n, &cmd->flags) == 0
        || brim_mctext_strtol(ln->tok[3].p, ln->tok[3].n, &cmd->exptime) == 0
        || brim_mctext_strtol(ln->tok[4].p, ln->tok[4].n, &vlen) == 0
        || (base == 6
            && brim_mctext_strtoull(ln->tok[5].p, ln->tok[5].n, &cmd->cas) == 0)
        || vlen < 0 || vlen > MC_VLEN_MAX)
    {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
    }
    /* Refused from the length alone: the block is swallowed as it comes,
     * never buffered. KIND and KEY stay set (memcached drops the stored
     * item of a too-large set). */
    if ((uint32_t) vlen > lim->max_value_bytes) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_TOO_LARGE,
                                (size_t) vlen + 2);
    }
    return brim_mctext_data(buf, len, ln, (size_t) vlen, cmd);
}

/* delete <key> [0] [noreply]: the legacy time argument must be "0". */
static int
mc_delete(const struct brim_mctext_line   *ln,
          const struct brim_mctext_limits *lim, struct brim_mctext_cmd *cmd)
{
    int zero, valid;

    if (ln->ntok < 2 || ln->ntok > 4) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
    }
    if (ln->ntok > 2) {
        zero = brim_mctext_tok_is(&ln->tok[2], "0");
        cmd->noreply = mc_noreply(ln);
        valid = (ln->ntok == 3 && (zero || cmd->noreply))
            || (ln->ntok == 4 && zero && cmd->noreply);
        if (valid == 0) {
            return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_DELETE_USAGE, 0);
        }
    }
    if (mc_key(ln, 1, lim, cmd) != 0) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
    }
    cmd->consumed = ln->consumed;
    return 0;
}

/* incr/decr <key> <delta> [noreply], touch <key> <exptime> [noreply]. */
static int
mc_key_arg(const struct brim_mctext_line   *ln,
           const struct brim_mctext_limits *lim, struct brim_mctext_cmd *cmd)
{
    int ok;

    if (ln->ntok != 3 && ln->ntok != 4) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
    }
    cmd->noreply = mc_noreply(ln);
    if (mc_key(ln, 1, lim, cmd) != 0) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
    }
    if (cmd->kind == BRIM_MCTEXT_TOUCH) {
        ok = brim_mctext_strtol(ln->tok[2].p, ln->tok[2].n, &cmd->exptime);
        if (ok == 0) {
            return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_EXPTIME, 0);
        }
    } else {
        ok = brim_mctext_strtoull(ln->tok[2].p, ln->tok[2].n, &cmd->delta);
        if (ok == 0) {
            return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_DELTA, 0);
        }
    }
    cmd->consumed = ln->consumed;
    return 0;
}

/*
 * flush_all [delay] [noreply]. memcached reads the delay unless the line
 * is "flush_all" or "flush_all noreply", so "flush_all 10 junk" flushes
 * in 10 s and "flush_all junk noreply" fails silently.
 */
static int
mc_flush(const struct brim_mctext_line *ln, struct brim_mctext_cmd *cmd)
{
    if (ln->ntok < 1 || ln->ntok > 3) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
    }
    cmd->noreply = mc_noreply(ln);
    if (ln->ntok != (cmd->noreply ? 2u : 1u)) {
        if (brim_mctext_strtol(ln->tok[1].p, ln->tok[1].n, &cmd->exptime) == 0)
        {
            return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_EXPTIME, 0);
        }
        cmd->has_exptime = 1;
    }
    cmd->consumed = ln->consumed;
    return 0;
}

/* verbosity <level> [noreply]; a third token is ignored. */
static int
mc_verbosity(const struct brim_mctext_line *ln, struct brim_mctext_cmd *cmd)
{
    if (ln->ntok != 2 && ln->ntok != 3) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
    }
    cmd->noreply = mc_noreply(ln);
    if (brim_mctext_strtoul(ln->tok[1].p, ln->tok[1].n, &cmd->level) == 0) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_FORMAT, 0);
    }
    cmd->consumed = ln->consumed;
    return 0;
}

/* stats [args]: the arguments are the node's to judge. */
static int
mc_stats(const struct brim_mctext_line *ln, struct brim_mctext_cmd *cmd)
{
    const char *end;

    if (ln->ntok > 1) {
        end = ln->text + ln->text_len;
        while (end > ln->tok[1].p && end[-1] == ' ') {
            end--;
        }
        cmd->args = ln->tok[1].p;
        cmd->args_len = (size_t) (end - cmd->args);
    }
    cmd->consumed = ln->consumed;
    return 0;
}

/* A command taking no arguments (any extra token is ignored). */
static int
mc_plain(const struct brim_mctext_line *ln, struct brim_mctext_cmd *cmd)
{
    cmd->consumed = ln->consumed;
    return 0;
}

/* The command named by token T, or NONE. */
static enum brim_mctext_kind
mc_kind_of(const struct brim_mctext_tok *t)
{
    unsigned k;

    for (k = 1; k < BRIM_MCTEXT_KIND_COUNT; k++) {
        if (brim_mctext_tok_is(t, mc_kind_names[k])) {
            return (enum brim_mctext_kind) k;
        }
    }
    return brim_mctext_tok_is(t, "bget") ? BRIM_MCTEXT_GET : BRIM_MCTEXT_NONE;
}

/*
 * A line that names no command we serve. memcached answers ERROR, except
 * that it closes the connection, silently, on a line whose last token
 * starts with "HTTP/" when the command's first letter is not one of g s a
 * c i d t (a web browser: "GET / HTTP/1.1"), and that it refuses
 * "shutdown" with its own line unless started with -A.
 */
static int
mc_unknown(const struct brim_mctext_line *ln, struct brim_mctext_cmd *cmd)
{
    const struct brim_mctext_tok *last;

    if (brim_mctext_tok_is(&ln->tok[0], "shutdown")) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_SHUTDOWN, 0);
    }
    last = &ln->tok[ln->ntok - 1];
    if (strchr("gsacidt", ln->tok[0].p[0]) == NULL && last->n >= 5
        && memcmp(last->p, "HTTP/", 5) == 0)
    {
        brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_HTTP, 0);
        cmd->close = 1;
        return 0;
    }
    return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
}

/* Parse the text command of line LN (tokenized) into CMD. */
static int
mc_dispatch(const char *buf, size_t len, const struct brim_mctext_line *ln,
            const struct brim_mctext_limits *lim, struct brim_mctext_cmd *cmd)
{
    const struct brim_mctext_tok *t0;

    /* As memcached: no valid command is shorter than two bytes, and every
     * two-byte word starting with 'm' is a meta command. */
    if (ln->ntok == 0 || ln->tok[0].n < 2) {
        return brim_mctext_fail(cmd, ln, BRIM_MCTEXT_ERR_UNKNOWN, 0);
    }
    t0 = &ln->tok[0];
    if (t0->n == 2 && t0->p[0] == 'm') {
        return brim_mctext_meta_parse(buf, len, ln, lim, t0->p[1], cmd);
    }
    cmd->kind = mc_kind_of(t0);
    switch (cmd->kind) {
    case BRIM_MCTEXT_GET:
    case BRIM_MCTEXT_GETS:
    case BRIM_MCTEXT_GAT:
    case BRIM_MCTEXT_GATS:
        return mc_get(ln, lim, cmd);
    case BRIM_MCTEXT_SET:
    case BRIM_MCTEXT_ADD:
    case BRIM_MCTEXT_REPLACE:
    case BRIM_MCTEXT_APPEND:
    case BRIM_MCTEXT_PREPEND:
    case BRIM_MCTEXT_CAS:
        return mc_store(buf, len, ln, lim, cmd);
    case BRIM_MCTEXT_DELETE:
        return mc_delete(ln, lim, cmd);
    case BRIM_MCTEXT_INCR:
    case BRIM_MCTEXT_DECR:
    case BRIM_MCTEXT_TOUCH:
        return mc_key_arg(ln, lim, cmd);
    case BRIM_MCTEXT_FLUSH_ALL:
        return mc_flush(ln, cmd);
    case BRIM_MCTEXT_VERBOSITY:
        return mc_verbosity(ln, cmd);
    case BRIM_MCTEXT_STATS:
        return mc_stats(ln, cmd);
    case BRIM_MCTEXT_VERSION:
    case BRIM_MCTEXT_QUIT:
        return mc_plain(ln, cmd);
    default:
        /* The meta words are two bytes and were handled above. */
        cmd->kind = BRIM_MCTEXT_NONE;
        return mc_unknown(ln, cmd);
    }
}

int
brim_mctext_parse(const char *buf, size_t len,
                  const struct brim_mctext_limits *lim,
                  struct brim_mctext_cmd          *cmd)
{
    struct brim_mctext_cmd  c;
    struct brim_mctext_line ln;
    int                     rc;

    BRIM_ASSERT(lim != NULL && cmd != NULL && (buf != NULL || len == 0));

    if (len == 0) {
        return BRIM_EAGAIN; /* BUF may be NULL: no memchr() on it */
    }
    /* Built in C and copied out: *CMD is written only on success. */
    memset(&c, 0, sizeof(c));
    rc = mc_line_find(buf, len, lim, &ln);
    if (rc == BRIM_ETOOBIG) {
        c.err = BRIM_MCTEXT_ERR_LINE_TOO_LONG;
        c.consumed = len;
        c.close = 1;
        *cmd = c;
        return 0;
    }
    if (rc != 0) {
        return rc;
    }
    mc_tokenize(&ln);
    rc = mc_dispatch(buf, len, &ln, lim, &c);
    if (rc != 0) {
        return rc;
    }
    if (c.close) {
        c.consumed = len;
    }
    BRIM_ASSERT(c.consumed > 0 && c.consumed <= len);
    *cmd = c;
    return 0;
}

void
brim_mctext_cmd_key(const struct brim_mctext_cmd *cmd, const char **key,
                    size_t *key_len)
{
    if (cmd->key_b64) {
        *key = cmd->key_bin;
        *key_len = cmd->key_bin_len;
    } else {
        *key = cmd->key;
        *key_len = cmd->key_len;
    }
}

int
brim_mctext_next_key(const struct brim_mctext_cmd *cmd, size_t *pos,
                     const char **key, size_t *key_len)
{
    size_t i, start;

    i = *pos;
    while (i < cmd->keys_len && cmd->keys[i] == ' ') {
        i++;
    }
    if (i >= cmd->keys_len) {
        *pos = i;
        return 0;
    }
    start = i;
    while (i < cmd->keys_len && cmd->keys[i] != ' ') {
        i++;
    }
    *key = cmd->keys + start;
    *key_len = i - start;
    *pos = i;
    return 1;
}
