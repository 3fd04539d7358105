/*
 * proto/mctext_int.h - what proto/mctext.c (lines, text commands) and
 * proto/mctext_meta.c (meta commands, base64) share: a command line cut
 * into tokens the way memcached 1.6.18 cuts it, and memcached's number
 * parsing. Not for other modules.
 */
#ifndef BRIM_PROTO_MCTEXT_INT_H
#define BRIM_PROTO_MCTEXT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "proto/mctext.h"

/*
 * memcached's tokenizer keeps at most 23 tokens of a line (MAX_TOKENS 24,
 * one for its end marker); argument counts are judged on that many, and
 * only the get family reads on past them.
 */
#define BRIM_MCTEXT_TOKENS_MAX 23

/* A token: P[0 .. N), N >= 1, borrowed from the buffer. */
struct brim_mctext_tok {
    const char *p; /* first byte */
    size_t      n; /* bytes */
};

/*
 * One command line. TEXT is what memcached's tokenizer sees: the bytes
 * before the '\n', without a '\r' just before it, cut at the first NUL.
 */
struct brim_mctext_line {
    const char            *text;     /* the line's text, borrowed */
    size_t                 text_len; /* bytes of TEXT */
    size_t                 consumed; /* bytes through the '\n' */
    struct brim_mctext_tok tok[BRIM_MCTEXT_TOKENS_MAX]; /* the first
                                         tokens, split on ' ' */
    size_t                 ntok; /* tokens in TOK: memcached's ntokens
                                         minus its end marker */
};

/* True when token T is exactly the NUL-terminated string S. */
int brim_mctext_tok_is(const struct brim_mctext_tok *t, const char *s);

/*
 * memcached's safe_strtoull(), safe_strtoul(), safe_strtol() (util.c) over
 * token bytes P[0 .. N), which memcached sees NUL-terminated: glibc's
 * strtoull()/strtol() in base 10 (leading white space, a sign), a number
 * that ends at the token's end or at a white-space byte, no range error;
 * the unsigned ones also refuse a '-' when the result is above 2^63 - 1.
 * safe_strtoul() and safe_strtol() keep the low 32 bits, as memcached
 * does on a 64-bit host (checked: "set k 4294967296 0 1" stores flags 0).
 * Each returns 1 and writes *OUT, or returns 0.
 */
int brim_mctext_strtoull(const char *p, size_t n, uint64_t *out);
int brim_mctext_strtoul(const char *p, size_t n, uint32_t *out);
int brim_mctext_strtol(const char *p, size_t n, int32_t *out);

/*
 * Record error ERR in CMD for the line LN: CMD->consumed is the line (and
 * SWALLOW bytes follow), CMD->reply its reply line, or NULL when a text
 * command's noreply suppresses it (CMD->kind and CMD->noreply already
 * set). Returns 0, for the caller to return.
 */
int brim_mctext_fail(struct brim_mctext_cmd        *cmd,
                     const struct brim_mctext_line *ln,
                     enum brim_mctext_err err, size_t swallow);

/*
 * Wait for or check the data block of DATA_LEN bytes plus "\r\n" that
 * follows line LN in BUF[0 .. LEN): BRIM_EAGAIN until it is buffered, then
 * 0 with CMD->data set, or CMD failed with CHUNK when the two bytes after
 * the data are not "\r\n" (memcached 1.6.18 consumes the whole block).
 */
int brim_mctext_data(const char *buf, size_t len,
                     const struct brim_mctext_line *ln, size_t data_len,
                     struct brim_mctext_cmd *cmd);

/*
 * The meta commands (mctext_meta.c): parse line LN, whose first token is
 * "m" followed by SUB, into CMD (zeroed by the caller); BUF[0 .. LEN) for
 * ms's data block. Returns 0 or BRIM_EAGAIN as brim_mctext_parse().
 */
int brim_mctext_meta_parse(const char *buf, size_t len,
                           const struct brim_mctext_line   *ln,
                           const struct brim_mctext_limits *lim, char sub,
                           struct brim_mctext_cmd *cmd);

#endif /* BRIM_PROTO_MCTEXT_INT_H */
