/*
 * proto/mctext.h - memcached's text and meta protocols (DESIGN.md section
 * 10): an incremental, allocation-free parser over the bytes buffered on a
 * connection, the reply encoders, and memcached's expiry rule. Pure: no
 * sockets, no libuv, no logging; the node's memcached port does the I/O
 * and turns commands into brim ops. The reference is memcached's
 * doc/protocol.txt, and every answer was compared with memcached 1.6.18
 * (Debian 12) by experiment: docs/memcached.md lists what is accepted and
 * the exact error replies.
 *
 * Serving a connection:
 *     for (;;) {
 *         rc = brim_mctext_parse(in, in_len, &lim, &cmd);
 *         if (rc == BRIM_EAGAIN) read more (nothing was consumed);
 *         if (cmd.close) close once earlier replies are written;
 *         else if (cmd.err != BRIM_MCTEXT_ERR_NONE) write cmd.reply (if
 *             not NULL), drop cmd.consumed bytes, then discard cmd.swallow
 *             more bytes as they arrive;
 *         else execute CMD, write its reply with brim_mctext_put_*(), drop
 *             cmd.consumed bytes.
 *     }
 * The parser never needs more than brim_mctext_buffer_max() bytes buffered
 * before it answers, so that bounds a connection's input buffer.
 */
#ifndef BRIM_PROTO_MCTEXT_H
#define BRIM_PROTO_MCTEXT_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h>

#include "proto/buf.h"

/* memcached's key limit (KEY_MAX_LENGTH), and the largest configurable. */
#define BRIM_MCTEXT_KEY_LIMIT 250
/* Defaults of struct brim_mctext_limits. */
#define BRIM_MCTEXT_VALUE_MAX (1u << 20)    /* bytes: 1 MiB */
#define BRIM_MCTEXT_LINE_MAX 2048           /* memcached's fixed figure */
#define BRIM_MCTEXT_GET_LINE_MAX (1u << 20) /* bytes */
/* Largest configurable value: memcached refuses <bytes> above INT_MAX - 2. */
#define BRIM_MCTEXT_VALUE_LIMIT (1u << 30)
/* Largest configurable line limit of either kind. */
#define BRIM_MCTEXT_LINE_LIMIT (64u << 20)

/* A meta command takes at most this many flags (ms: one less, as its
 * <datalen> counts): memcached refuses more than 20 tokens in all. */
#define BRIM_MCTEXT_META_FLAGS_MAX 17
/* Longest opaque (O) token, the 'O' included (memcached 1.6.18). */
#define BRIM_MCTEXT_OPAQUE_MAX 32

/* A relative exptime is at most this many seconds (30 days). */
#define BRIM_MCTEXT_RELATIVE_MAX 2592000

/*
 * The limits a parser enforces; fill with brim_mctext_limits_default() and
 * check with brim_mctext_limits_check().
 */
struct brim_mctext_limits {
    uint32_t max_key_bytes;      /* 1 .. BRIM_MCTEXT_KEY_LIMIT; a meta b key
                                    counts its base64 text, as memcached */
    uint32_t max_value_bytes;    /* 0 .. BRIM_MCTEXT_VALUE_LIMIT: a longer
                                    data block is answered SERVER_ERROR and
                                    swallowed */
    uint32_t max_line_bytes;     /* 16 .. BRIM_MCTEXT_LINE_LIMIT: a command
                                    line longer than this without its '\n'
                                    closes the connection (memcached: 2048) */
    uint32_t max_get_line_bytes; /* max_line_bytes .. BRIM_MCTEXT_LINE_LIMIT:
                                    the same for a "get" or "gets" line,
                                    which memcached lets grow without end */
};

/*
 * XX(NAME, "name"): the commands, with the word a client sends. BRIM_MCTEXT_
 * NONE (0) is "no command" (an empty or unknown line).
 */
#define BRIM_MCTEXT_KIND_MAP(XX)                                               \
    XX(GET, "get")                                                             \
    XX(GETS, "gets")                                                           \
    XX(GAT, "gat")                                                             \
    XX(GATS, "gats")                                                           \
    XX(SET, "set")                                                             \
    XX(ADD, "add")                                                             \
    XX(REPLACE, "replace")                                                     \
    XX(APPEND, "append")                                                       \
    XX(PREPEND, "prepend")                                                     \
    XX(CAS, "cas")                                                             \
    XX(DELETE, "delete")                                                       \
    XX(INCR, "incr")                                                           \
    XX(DECR, "decr")                                                           \
    XX(TOUCH, "touch")                                                         \
    XX(FLUSH_ALL, "flush_all")                                                 \
    XX(VERSION, "version")                                                     \
    XX(VERBOSITY, "verbosity")                                                 \
    XX(STATS, "stats")                                                         \
    XX(QUIT, "quit")                                                           \
    XX(MN, "mn")                                                               \
    XX(MG, "mg")                                                               \
    XX(MS, "ms")                                                               \
    XX(MD, "md")                                                               \
    XX(MA, "ma")                                                               \
    XX(ME, "me")

enum brim_mctext_kind {
    BRIM_MCTEXT_NONE = 0,
#define BRIM_MCTEXT_KIND_ENUM(name, word) BRIM_MCTEXT_##name,
    BRIM_MCTEXT_KIND_MAP(BRIM_MCTEXT_KIND_ENUM)
#undef BRIM_MCTEXT_KIND_ENUM
    BRIM_MCTEXT_KIND_COUNT
};

/*
 * XX(NAME, "reply line"): the protocol errors the parser finds, with the
 * exact line memcached 1.6.18 answers (without its "\r\n"). The last two
 * close the connection with no reply at all.
 */
#define BRIM_MCTEXT_ERR_MAP(XX)                                                \
    XX(UNKNOWN, "ERROR")                                                       \
    XX(FORMAT, "CLIENT_ERROR bad command line format")                         \
    XX(CHUNK, "CLIENT_ERROR bad data chunk")                                   \
    XX(TOO_LARGE, "SERVER_ERROR object too large for cache")                   \
    XX(EXPTIME, "CLIENT_ERROR invalid exptime argument")                       \
    XX(DELTA, "CLIENT_ERROR invalid numeric delta argument")                   \
    XX(DELETE_USAGE,                                                           \
       "CLIENT_ERROR bad command line format.  "                               \
       "Usage: delete <key> [noreply]")                                        \
    XX(SHUTDOWN, "ERROR: shutdown not enabled")                                \
    XX(META_FLAG, "CLIENT_ERROR invalid flag")                                 \
    XX(META_DUP, "CLIENT_ERROR duplicate flag")                                \
    XX(META_TOKEN, "CLIENT_ERROR bad token in command line format")            \
    XX(META_B64, "CLIENT_ERROR error decoding key")                            \
    XX(META_INITIAL, "CLIENT_ERROR invalid numeric initial value")             \
    XX(META_DELTA, "CLIENT_ERROR invalid numeric delta value")                 \
    XX(META_MLEN, "CLIENT_ERROR incorrect length for M token")                 \
    XX(META_MS_MODE, "CLIENT_ERROR invalid mode for ms M token")               \
    XX(META_MA_MODE, "CLIENT_ERROR invalid mode for ma M token")               \
    XX(META_OPAQUE, "CLIENT_ERROR opaque token too long")                      \
    XX(META_MANY_MG, "CLIENT_ERROR options flags are too long")                \
    XX(META_MANY, "CLIENT_ERROR options flags too long")                       \
    XX(META_BAD, "CLIENT_ERROR invalid or duplicate flag")                     \
    XX(LINE_TOO_LONG, "")                                                      \
    XX(HTTP, "")

enum brim_mctext_err {
    BRIM_MCTEXT_ERR_NONE = 0,
#define BRIM_MCTEXT_ERR_ENUM(name, line) BRIM_MCTEXT_ERR_##name,
    BRIM_MCTEXT_ERR_MAP(BRIM_MCTEXT_ERR_ENUM)
#undef BRIM_MCTEXT_ERR_ENUM
    BRIM_MCTEXT_ERR_COUNT
};

/* The bit of meta flag letter C ('A'..'Z', 'a'..'z') in
 * struct brim_mctext_meta's FLAGS; 0 for any other byte. */
#define BRIM_MCTEXT_MF(c)                                                      \
    ((c) >= 'A' && (c) <= 'Z'       ? (uint64_t) 1 << ((c) - 'A')              \
         : (c) >= 'a' && (c) <= 'z' ? (uint64_t) 1 << ((c) - 'a' + 26)         \
                                    : (uint64_t) 0)

/*
 * The flags of a meta command (protocol.txt, "Meta Get" to "Meta
 * Arithmetic", as memcached 1.6.18 accepts them: b c f h k l O P L q s t u
 * v N R T F C M J D I, each at most once; E and x came after 1.6.18 and
 * are refused as invalid). Any command accepts any of them; each command
 * uses those it documents. A field whose flag was not given is 0, except
 * DELTA, which is 1.
 */
struct brim_mctext_meta {
    uint64_t    flags; /* BRIM_MCTEXT_MF() bits given */
    char        order[BRIM_MCTEXT_META_FLAGS_MAX]; /* the flag letters in
                                       request order: return flags are
                                       written in this order */
    uint8_t     norder;                            /* letters in ORDER */
    const char *opaque;          /* O: the token after its 'O', borrowed
                                       from the buffer; echoed verbatim */
    size_t      opaque_len;      /* 0 .. BRIM_MCTEXT_OPAQUE_MAX - 1 */
    int32_t     ttl;             /* T: exptime (brim_mctext_expiry()) */
    int32_t     vivify_ttl;      /* N: exptime of a vivified item */
    int32_t     recache_ttl;     /* R: win the recache below this TTL */
    uint32_t    client_flags;    /* F: ms's client flags */
    uint64_t    cas;             /* C: compare CAS value */
    uint64_t    delta;           /* D: ma's delta, 1 when absent */
    uint64_t    initial;         /* J: ma's value for a vivified item */
    char        mode;            /* M: the mode letter, 0 when absent;
                                       checked for ms (E A P R S) and ma
                                       (I + D -) */
    enum brim_mctext_kind store; /* ms only: the text command it equals:
                                       SET ADD REPLACE APPEND PREPEND, or
                                       CAS when C is given with mode S or
                                       R (as memcached) */
    int                   incr;  /* ma only: 1 increment, 0 decrement */
};

/*
 * One answer of brim_mctext_parse(). Pointers borrow from the buffer that
 * was parsed: they stay valid until those bytes are consumed or moved.
 * Fields a command does not use are 0. The struct may be copied.
 */
struct brim_mctext_cmd {
    enum brim_mctext_kind kind;      /* the command the line names, also on
                                       most errors; NONE for an unknown
                                       word or a line too long */
    enum brim_mctext_err  err;       /* NONE: execute the command; else an
                                       error: do not (see TOO_LARGE) */
    const char           *reply;     /* ERR set: the line to send, "\r\n"
                                       included, static; NULL when noreply
                                       suppresses it or the connection
                                       closes */
    size_t                reply_len; /* bytes of REPLY */
    size_t                consumed;  /* bytes of the buffer this answer
                                       covers: the line, and a data block
                                       when one was read */
    size_t                swallow;   /* bytes after CONSUMED to discard as
                                       they arrive, possibly not buffered
                                       yet (a refused data block) */
    int                   close;     /* 1: close the connection after the
                                       replies before this one (ERR is
                                       LINE_TOO_LONG or HTTP; CONSUMED is
                                       the whole buffer) */
    int                   noreply;   /* text: "noreply" was given; meta: q.
                                       Suppress what memcached suppresses:
                                       every reply of a text command, the
                                       nominal one of a meta command
                                       (brim_mctext_put_meta() knows) */
    const char           *key;       /* the key token, borrowed; for a meta
                                       b key still base64: use
                                       brim_mctext_cmd_key() */
    size_t                key_len;   /* 1 .. max_key_bytes */
    int                   key_b64;   /* 1: meta b flag; KEY_BIN holds it */
    char        key_bin[BRIM_MCTEXT_KEY_LIMIT]; /* the decoded b key */
    size_t      key_bin_len;                    /* bytes of KEY_BIN, >= 1 */
    const char *keys;             /* get gets gat gats: the keys, one
                                       text of space-separated tokens
                                       (brim_mctext_next_key()) */
    size_t      keys_len;         /* bytes of KEYS */
    uint32_t    nkeys;            /* tokens in KEYS; 0 for "gat 10" */
    uint32_t    flags;            /* storage (ms: its F): client flags
                                       (memcached keeps the low 32 bits of
                                       a larger number) */
    int32_t     exptime;          /* storage (ms: its T), touch, gat,
                                       gats; flush_all's delay: seconds as
                                       sent, the low 32 bits as memcached
                                       (brim_mctext_expiry()) */
    int         has_exptime;      /* flush_all: a delay was given */
    uint64_t    cas;              /* cas: the cas unique */
    uint64_t    delta;            /* incr, decr: the delta */
    uint32_t    level;            /* verbosity: the level */
    const char *data;             /* storage, ms: the data block,
                                       borrowed, its "\r\n" excluded */
    size_t      data_len;         /* 0 .. max_value_bytes */
    const char *args;             /* stats: the text after "stats", may
                                       be empty; the node picks the
                                       sections it serves */
    size_t      args_len;         /* bytes of ARGS */
    struct brim_mctext_meta meta; /* mg ms md ma (me: only b) */
};

/* Fill LIM with the defaults: key 250, value 1 MiB, line 2048, get line
 * 1 MiB. */
void brim_mctext_limits_default(struct brim_mctext_limits *lim);

/*
 * Check LIM against the bounds documented in struct brim_mctext_limits.
 * Returns 0, or BRIM_EINVAL with ERRBUF (if not NULL) naming the bad
 * limit.
 */
int brim_mctext_limits_check(const struct brim_mctext_limits *lim,
                             char errbuf[BRIM_ERRBUF_LEN]);

/*
 * The most bytes brim_mctext_parse() can need buffered before it answers
 * under LIM (a line, plus a data block of max_value_bytes with its
 * "\r\n"): a connection's input buffer of this size never deadlocks.
 */
size_t brim_mctext_buffer_max(const struct brim_mctext_limits *lim);

/*
 * Parse the next command from BUF[0 .. LEN) (borrowed; a connection's
 * buffered input, starting at a command boundary) under LIM (checked).
 * Returns:
 *   0            *CMD holds one answer: a command (CMD->err NONE) or an
 *                error with its reply; CMD->consumed > 0 bytes of BUF are
 *                covered by it. CMD's pointers borrow from BUF.
 *   BRIM_EAGAIN  the command is incomplete: read more. Nothing consumed,
 *                *CMD unwritten. A retry with more bytes behind the same
 *                prefix gives the same answer, whatever the split.
 * Lines end at '\n', with an optional '\r' before it; a NUL ends a line's
 * text early, as in memcached. Nothing is allocated; a data block is
 * waited for only after its length passed LIM->max_value_bytes. A storage
 * command refused for TOO_LARGE still names its KIND and KEY: memcached
 * also deletes the stored item of a too-large set, or ms of any mode.
 */
int brim_mctext_parse(const char *buf, size_t len,
                      const struct brim_mctext_limits *lim,
                      struct brim_mctext_cmd          *cmd);

/*
 * The key of CMD (a single-key command): *KEY and *KEY_LEN are CMD->key,
 * or for a meta b key the decoded bytes in CMD->key_bin. They stay valid
 * as long as CMD and the parsed buffer do.
 */
void brim_mctext_cmd_key(const struct brim_mctext_cmd *cmd, const char **key,
                         size_t *key_len);

/*
 * Iterate over the keys of a get, gets, gat or gats: start with *POS = 0;
 * each call stores the next key in *KEY, *KEY_LEN (borrowed from the
 * buffer) and returns 1, or returns 0 after the last. Every key was
 * checked by the parser (1 .. max_key_bytes).
 */
int brim_mctext_next_key(const struct brim_mctext_cmd *cmd, size_t *pos,
                         const char **key, size_t *key_len);

/* "get", "ms", ...; "" for NONE or a value out of range. Static. */
const char *brim_mctext_kind_name(enum brim_mctext_kind kind);

/* "FORMAT", "CHUNK", ...; "NONE"; "?" out of range. Static. */
const char *brim_mctext_err_name(enum brim_mctext_err err);

/*
 * The reply line of ERR, "\r\n" included, and its length in *LEN; NULL
 * (and *LEN 0) for NONE and the two that close without a reply. Static.
 */
const char *brim_mctext_err_reply(enum brim_mctext_err err, size_t *len);

/* ---- expiry ---- */

/* What an exptime means (brim_mctext_expiry()). */
enum brim_mctext_expiry {
    BRIM_MCTEXT_EXPIRY_NEVER = 0, /* 0: never expires */
    BRIM_MCTEXT_EXPIRY_AT = 1,    /* expires at the Unix time given */
    BRIM_MCTEXT_EXPIRY_NOW = 2    /* already expired: negative, or an
                                       absolute time not after NOW_S */
};

/*
 * memcached's rule (protocol.txt, "Expiration times"; realtime() in 1.6.18):
 * EXPTIME 0 never expires; 1 .. BRIM_MCTEXT_RELATIVE_MAX seconds are
 * relative to NOW_S (Unix seconds); a larger value is an absolute Unix
 * time, expired already when not after NOW_S; a negative value is expired
 * at once. *AT_S (Unix seconds) is written only for EXPIRY_AT. For
 * flush_all's delay, NEVER means "now" (memcached flushes at once on 0).
 */
enum brim_mctext_expiry brim_mctext_expiry(int64_t exptime, uint64_t now_s,
                                           uint64_t *at_s);

/* ---- base64 (meta b keys) ---- */

/*
 * Decode base64 SRC[0 .. LEN) into OUT (room for LEN * 3 / 4 bytes) as
 * memcached 1.6.18 does: bytes outside the alphabet and '=' are skipped;
 * the others must be a positive multiple of 4; decoding stops after the
 * first group holding '=' (one: drop a byte, two: drop two, more: fail).
 * Returns the decoded length (>= 1), or 0 when SRC does not decode.
 */
size_t brim_mctext_b64_decode(const char *src, size_t len, char *out);

/*
 * Encode SRC[0 .. LEN) as padded base64 into OUT (room for
 * 4 * ((LEN + 2) / 3) bytes, no NUL written). Returns the bytes written.
 */
size_t brim_mctext_b64_encode(const void *src, size_t len, char *out);

/* ---- replies (append to OUT; 0 or BRIM_ENOMEM, OUT unchanged) ---- */

/* XX(NAME, "line"): the fixed reply lines, "\r\n" not included. */
#define BRIM_MCTEXT_REPLY_MAP(XX)                                              \
    XX(STORED, "STORED")                                                       \
    XX(NOT_STORED, "NOT_STORED")                                               \
    XX(EXISTS, "EXISTS")                                                       \
    XX(NOT_FOUND, "NOT_FOUND")                                                 \
    XX(DELETED, "DELETED")                                                     \
    XX(TOUCHED, "TOUCHED")                                                     \
    XX(OK, "OK")                                                               \
    XX(END, "END")                                                             \
    XX(ERROR, "ERROR")                                                         \
    XX(RESET, "RESET")                                                         \
    XX(MN, "MN")                                                               \
    XX(EN, "EN")

enum brim_mctext_reply {
#define BRIM_MCTEXT_REPLY_ENUM(name, line) BRIM_MCTEXT_REPLY_##name,
    BRIM_MCTEXT_REPLY_MAP(BRIM_MCTEXT_REPLY_ENUM)
#undef BRIM_MCTEXT_REPLY_ENUM
    BRIM_MCTEXT_REPLY_COUNT
};

/* Append "<line>\r\n" for REPLY (BRIM_EINVAL for a value out of range). */
int brim_mctext_put_reply(struct brim_buf *out, enum brim_mctext_reply reply);

/* Append CMD->reply (an error answer; nothing when it is NULL). */
int brim_mctext_put_err(struct brim_buf              *out,
                        const struct brim_mctext_cmd *cmd);

/*
 * Append one hit of a get family command: "VALUE <key> <flags> <bytes>"
 * then " <cas>" when WITH_CAS (gets, gats), "\r\n", the DATA_LEN bytes of
 * DATA and "\r\n". End the reply with brim_mctext_put_reply(END).
 */
int brim_mctext_put_value(struct brim_buf *out, const char *key, size_t key_len,
                          uint32_t flags, const void *data, size_t data_len,
                          int with_cas, uint64_t cas);

/* Append "<N>\r\n": incr's and decr's answer. */
int brim_mctext_put_number(struct brim_buf *out, uint64_t n);

/* Append "VERSION <VERSION>\r\n" (VERSION a NUL-terminated string). */
int brim_mctext_put_version(struct brim_buf *out, const char *version);

/* Append "STAT <NAME> <VALUE>\r\n" (NUL-terminated strings); end the list
 * with brim_mctext_put_reply(END). */
int brim_mctext_put_stat(struct brim_buf *out, const char *name,
                         const char *value);

/* As brim_mctext_put_stat() with a decimal VALUE. */
int brim_mctext_put_stat_u64(struct brim_buf *out, const char *name,
                             uint64_t value);

/*
 * Append "CLIENT_ERROR <MSG>\r\n" or "SERVER_ERROR <MSG>\r\n" (MSG a
 * NUL-terminated string; a CR or LF in it is written as a space, so the
 * reply stays one line).
 */
int brim_mctext_put_client_error(struct brim_buf *out, const char *msg);
int brim_mctext_put_server_error(struct brim_buf *out, const char *msg);

/* The outcome of a meta command, as its two-letter code. */
enum brim_mctext_meta_code {
    BRIM_MCTEXT_META_HD = 0, /* success: mg hit, ms stored, md
                                       deleted, ma applied; "VA <size>"
                                       instead when mg or ma asked v */
    BRIM_MCTEXT_META_EN,     /* mg: miss */
    BRIM_MCTEXT_META_NF,     /* md, ma, ms with C: not found */
    BRIM_MCTEXT_META_NS,     /* ms, ma: not stored */
    BRIM_MCTEXT_META_EX      /* ms, md, ma: CAS mismatch, or exists */
};

/*
 * What a meta reply reports about the item. The node fills what the
 * request's flags ask; the rest may stay 0.
 */
struct brim_mctext_meta_item {
    enum brim_mctext_meta_code code;         /* the outcome */
    const char                *value;        /* mg VA: the value, borrowed */
    size_t                     value_len;    /* mg VA: bytes; also s (mg) */
    uint64_t                   number;       /* ma: the counter after the op */
    uint64_t                   cas;          /* c */
    uint32_t                   client_flags; /* f */
    int64_t                    ttl_s; /* t: seconds left, -1 for no expiry */
    uint32_t last_access_s;           /* l: seconds since the last access */
    int      fetched;                 /* h: 1 if hit before */
    int      won;                     /* W: this client won the recache */
    int      stale;                   /* X: the item is stale */
    int      win_sent;                /* Z: a win was already sent */
};

/*
 * 1 when memcached 1.6.18 sends nothing for CODE in answer to CMD (an mg,
 * ms, md or ma): with q, mg's EN and the HD (or VA) of ms, md and ma. 0
 * otherwise; errors are always sent.
 */
int brim_mctext_meta_quiet(const struct brim_mctext_cmd *cmd,
                           enum brim_mctext_meta_code    code);

/*
 * Append the reply to the meta command CMD (mg, ms, md or ma, as parsed)
 * with outcome ITEM->code, unless brim_mctext_meta_quiet() (then nothing
 * is appended and 0 returned). The return flags follow memcached 1.6.18:
 *   mg hit   "VA <value_len>" (v) or "HD", then in request order s t c f
 *            l h O k, then Z X W as ITEM says, "\r\n", and the value and
 *            "\r\n" for VA
 *   mg miss  "EN", then O k
 *   ms       the code, then O k c
 *   md       the code, then O k
 *   ma       success: "VA <digits>" (v) or "HD", then c t O k, "\r\n",
 *            and the number and "\r\n" for VA; otherwise the code, O k
 * k writes the key, for a b key as base64 followed by " b". Returns 0,
 * BRIM_ENOMEM, or BRIM_EINVAL (CMD is not one of those four).
 */
int brim_mctext_put_meta(struct brim_buf                    *out,
                         const struct brim_mctext_cmd       *cmd,
                         const struct brim_mctext_meta_item *item);

/*
 * Append me's hit "ME <key> <TEXT>\r\n" for CMD (the key in base64 when it
 * was sent with b, as memcached; TEXT a NUL-terminated "k=v k=v" string;
 * memcached's fields are exp la cas fetch cls size). A miss is
 * brim_mctext_put_reply(EN).
 */
int brim_mctext_put_me(struct brim_buf *out, const struct brim_mctext_cmd *cmd,
                       const char *text);

#endif /* BRIM_PROTO_MCTEXT_H */
