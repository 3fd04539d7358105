/*
 * brim.h - the libbrim client API. This file, <brim/admin.h> (the
 * operator's calls of cluster mode) and <brim/status.h> are the installed
 * headers; every function here is exported with BRIM_EXTERN.
 * Handles are opaque and are not safe to share between threads: use one
 * handle per thread (or hand one from thread to thread with a lock around
 * every call). Every call is synchronous and returns within the request
 * timeout; none ever aborts the process on bad input from the server.
 *
 * Return values follow <brim/status.h>: 0 on success, a negative BRIM_E*
 * code on failure; brim_strerror() gives its text and brim_errmsg() the
 * detail of the last failure on a handle.
 */
#ifndef BRIM_H
#define BRIM_H

#include <stddef.h>
#include <stdint.h>

#include <brim/status.h> /* BRIM_EXTERN, BRIM_E*, BRIM_ERRBUF_LEN */

#ifdef __cplusplus
extern "C" {
#endif

struct brim_client; /* opaque */

/* Default limits of a node; brim_value_max() tells a connected node's. */
#define BRIM_KEY_MAX 250          /* bytes in a key */
#define BRIM_VALUE_MAX (1u << 20) /* bytes in a value: 1 MiB */

/*
 * Options of brim_connect(). Zero the whole struct, then set what you need:
 * fields added later default to 0. Strings are copied.
 */
struct brim_opts {
    const char *server_addr;        /* "host:port" of one node (standalone) */
    const char *coord_addr;         /* cluster: seeds, "host:port" of
                                     * nodes or coordinators, comma-
                                     * separated; any of them serves the
                                     * map */
    uint32_t    connect_timeout_ms; /* per connection attempt; 0: 1000 */
    uint32_t    request_timeout_ms; /* per call, retries included; 0: 5000 */
    int         admin;              /* non-zero: HELLO as role admin, which
                                     * brim_flush() needs (brimctl) */
    const char *secret_file;        /* NULL: none. A secret file (mode
                                     * 0600, 32 to 4096 bytes; read at
                                     * connect): every connection proves it
                                     * after HELLO (AUTH) and checks the
                                     * server's proof, PROTOCOL.md 12. An
                                     * admin needs the cluster's to leave,
                                     * plan or flush where it has one */
};

/*
 * Connect to the node at OPTS->server_addr ("host:port", "[v6addr]:port")
 * and greet it with HELLO. On success *OUT is a new client; free it with
 * brim_close(). Exactly one of server_addr and coord_addr must be set.
 * With coord_addr, HELLO goes to each seed in turn until one serves the
 * topology (MAP_FETCH; a node serves its committed one under a fresh
 * lease), and each key is routed to its partition's owner node;
 * BRIM_ENONODES is then returned by calls on a key whose partition has no
 * owner (docs/client.md, "Cluster mode"). The client keeps no
 * coordinator connection: every data reply names the node's committed
 * epoch, and a newer one makes the client fetch the map from that node
 * (adopted only when it is of the client's cluster, newer, and has a
 * member up), so a coordinator that is down never fails a call, nor the
 * start of a client seeded with a node.
 * Returns 0, BRIM_EINVAL (bad address or options), BRIM_ECONNREFUSED,
 * BRIM_ETIMEDOUT (no connection or no HELLO reply within
 * connect_timeout_ms), BRIM_ESYS (name resolution or socket error, or an
 * unreadable secret file), BRIM_EDENIED (the node refused the role, or
 * AUTH failed: either side's proof of the secret), BRIM_EBADREPLY or
 * BRIM_ENOMEM. On error *OUT is untouched and ERRBUF (if not NULL) holds a
 * one-line reason naming the address.
 */
BRIM_EXTERN int brim_connect(const struct brim_opts *opts,
                             struct brim_client    **out,
                             char                    errbuf[BRIM_ERRBUF_LEN]);

/* Close every connection of C and free it. NULL is allowed. */
BRIM_EXTERN void brim_close(struct brim_client *c);

/*
 * Free a buffer returned by libbrim (a value from brim_get() and friends).
 * NULL is allowed. May be called from any thread.
 */
BRIM_EXTERN void brim_free(void *p);

/*
 * A one-line text about the last failed call on C: the server's message or
 * the local reason, naming the address ("127.0.0.1:7000: connection
 * refused"). "" when the last call succeeded in full. brim_mget() and
 * brim_mset() return 0 when some keys failed on their own (each key's
 * status says which): then it is the reason of one of those keys ("key is
 * 251 bytes, allowed 1 .. 250"), and "" only when none failed. Valid until
 * the next call on C; never free it.
 */
BRIM_EXTERN const char *brim_errmsg(const struct brim_client *c);

/*
 * The largest value, in bytes, that the node C talks to accepts (its
 * max_value_bytes from HELLO; BRIM_VALUE_MAX until one is known).
 */
BRIM_EXTERN size_t brim_value_max(const struct brim_client *c);

/*
 * The epoch of the map C routes with: in cluster mode the committed epoch
 * of the newest topology C has fetched (a data reply that names a newer
 * epoch makes the call that got it fetch the map), in standalone mode the
 * newest a node's MOVED named; 0 when none is known or C is NULL. It
 * sends nothing, never waits and never fails. Returns the epoch.
 */
BRIM_EXTERN uint64_t brim_epoch(struct brim_client *c);

/*
 * Errors every data call below may return, beside those it lists:
 *   BRIM_EINVAL       a key of 0 or more than the node's key limit (250)
 *                     bytes, or a NULL pointer where one is required
 *   BRIM_ETOOBIG      a value above the node's value limit (not sent)
 *   BRIM_ETIMEDOUT    no answer within request_timeout_ms; the connection
 *                     is closed, and a write may or may not have happened
 *   BRIM_ECONNREFUSED, BRIM_ESYS   the node could not be reached
 *   BRIM_ECLOSED      the connection was lost and the call could not be
 *                     sent again within the timeout
 *   BRIM_EUNKNOWN     the connection was lost after a non-idempotent op
 *                     (ADD, REPLACE, CAS, APPEND, PREPEND, INCR, DECR,
 *                     FLUSH) was sent: it may or may not have run
 *   BRIM_EBADREPLY    the server sent something malformed; the
 *                     connection was closed
 *   BRIM_ENOMEM, and any final status the node answers (BRIM_EBADREQ...)
 * Keys (KEY_LEN bytes) and values (VAL_LEN bytes) are binary-safe and
 * borrowed for the call only. GET, GAT, SET, DEL and TOUCH (and MGET, MSET,
 * PING, STATS) are sent again after a lost connection; the others are not.
 * RETRY, BUSY and MOVED answers from a node are followed inside the call,
 * within the timeout (BRIM_ETIMEDOUT when it runs out; BRIM_EMOVED when a
 * redirect leads back at the same epoch). The handle stays usable after
 * any error.
 *
 * TTL_S follows memcached: seconds from now, 0 for no expiry, and a value
 * above 30 days (2592000) is an absolute Unix time in seconds. FLAGS are 32
 * opaque client bits stored with the value. A CAS value is a 64-bit number
 * that changes on every write of a key.
 */

/*
 * Fetch the value under KEY. On success *VAL is a new buffer of *VAL_LEN
 * bytes (plus a NUL byte after them, not counted, so text values can be
 * used as strings) that the caller frees with brim_free(). Returns 0 or
 * BRIM_ENOTFOUND; the out-parameters are written only on success.
 */
BRIM_EXTERN int brim_get(struct brim_client *c, const void *key, size_t key_len,
                         void **val, size_t *val_len);

/*
 * As brim_get(), and on success also the item's client FLAGS and CAS value
 * into *FLAGS and *CAS when those are not NULL.
 */
BRIM_EXTERN int brim_get_ex(struct brim_client *c, const void *key,
                            size_t key_len, void **val, size_t *val_len,
                            uint32_t *flags, uint64_t *cas);

/*
 * Get and touch: as brim_get_ex(), and the item's TTL becomes TTL_S.
 * VAL and VAL_LEN may both be NULL to only touch and learn FLAGS and CAS.
 * Returns 0 or BRIM_ENOTFOUND.
 */
BRIM_EXTERN int brim_gat(struct brim_client *c, const void *key, size_t key_len,
                         uint32_t ttl_s, void **val, size_t *val_len,
                         uint32_t *flags, uint64_t *cas);

/*
 * Store VAL under KEY, unconditionally, with TTL_S and FLAGS. On success
 * the new CAS value goes to *CAS when CAS is not NULL. Returns 0, or
 * BRIM_ENOMEM / BRIM_ETOOBIG when the node cannot hold it.
 */
BRIM_EXTERN int brim_set(struct brim_client *c, const void *key, size_t key_len,
                         const void *val, size_t val_len, uint32_t ttl_s,
                         uint32_t flags, uint64_t *cas);

/* As brim_set(), only if KEY is absent: else BRIM_ENOTSTORED. */
BRIM_EXTERN int brim_add(struct brim_client *c, const void *key, size_t key_len,
                         const void *val, size_t val_len, uint32_t ttl_s,
                         uint32_t flags, uint64_t *cas);

/* As brim_set(), only if KEY is present: else BRIM_ENOTSTORED. */
BRIM_EXTERN int brim_replace(struct brim_client *c, const void *key,
                             size_t key_len, const void *val, size_t val_len,
                             uint32_t ttl_s, uint32_t flags, uint64_t *cas);

/*
 * Compare and swap: as brim_set(), only if KEY's CAS value is still
 * EXPECT (from brim_get_ex() or a write). The new CAS value goes to
 * *CAS_OUT when not NULL. Returns 0, BRIM_EEXISTS (KEY changed since) or
 * BRIM_ENOTFOUND (KEY is absent).
 */
BRIM_EXTERN int brim_cas(struct brim_client *c, const void *key, size_t key_len,
                         const void *val, size_t val_len, uint32_t ttl_s,
                         uint32_t flags, uint64_t expect, uint64_t *cas_out);

/*
 * Append VAL to the value under KEY, keeping its TTL and flags. The new CAS
 * value goes to *CAS when not NULL. Returns 0, BRIM_ENOTSTORED (KEY is
 * absent) or BRIM_ETOOBIG (the result would exceed the value limit).
 */
BRIM_EXTERN int brim_append(struct brim_client *c, const void *key,
                            size_t key_len, const void *val, size_t val_len,
                            uint64_t *cas);

/* As brim_append(), putting VAL in front of the value. */
BRIM_EXTERN int brim_prepend(struct brim_client *c, const void *key,
                             size_t key_len, const void *val, size_t val_len,
                             uint64_t *cas);

/* Delete KEY. Returns 0 or BRIM_ENOTFOUND. */
BRIM_EXTERN int brim_del(struct brim_client *c, const void *key,
                         size_t key_len);

/* Set KEY's TTL to TTL_S without reading it. Returns 0 or BRIM_ENOTFOUND. */
BRIM_EXTERN int brim_touch(struct brim_client *c, const void *key,
                           size_t key_len, uint32_t ttl_s);

/*
 * Add DELTA to the decimal number stored under KEY (memcached semantics:
 * unsigned 64-bit, wrapping at 2^64) and write the result to *RESULT when
 * not NULL. Returns 0, BRIM_ENOTFOUND or BRIM_ENONUMERIC (the value is not
 * a decimal number of at most 20 digits).
 */
BRIM_EXTERN int brim_incr(struct brim_client *c, const void *key,
                          size_t key_len, uint64_t delta, uint64_t *result);

/* As brim_incr(), subtracting; the result floors at 0. */
BRIM_EXTERN int brim_decr(struct brim_client *c, const void *key,
                          size_t key_len, uint64_t delta, uint64_t *result);

/*
 * Drop every item of the node (every node, in cluster mode) after DELAY_S
 * seconds (0: now). Needs a client connected with opts.admin set: else
 * BRIM_EDENIED. Not sent again after a lost connection. In cluster mode
 * one flush mark (this host's clock, Unix ms, plus the delay) goes first
 * to the coordinator, which records it for later joiners, then to every
 * member; when the coordinator does not record it, its error is returned
 * and nothing is flushed (a client that knows no coordinator skips that
 * step). Otherwise the first member's failure is returned once all were
 * asked, or BRIM_ENONODES when the map has no member.
 */
BRIM_EXTERN int brim_flush(struct brim_client *c, uint32_t delay_s);

/* One round trip to the node. Returns 0 or a transport error. */
BRIM_EXTERN int brim_ping(struct brim_client *c);

/* ---- statistics ---- */

/* What a struct brim_stat holds (its KIND). */
enum brim_stat_kind {
    BRIM_STAT_U64 = 1, /* u64 */
    BRIM_STAT_I64 = 2, /* i64 (negative numbers only) */
    BRIM_STAT_F64 = 3, /* f64 */
    BRIM_STAT_STR = 4  /* str, str_len */
};

/*
 * One statistic, as brim_stats() hands it to its callback. Every pointer
 * is borrowed and valid only until the callback returns.
 */
struct brim_stat {
    const char *node;    /* "host:port" of the node reporting */
    const char *section; /* name of the nested map, or NULL */
    const char *name;    /* NUL-terminated, at most 127 bytes */
    int         kind;    /* enum brim_stat_kind */
    uint64_t    u64;     /* BRIM_STAT_U64 */
    int64_t     i64;     /* BRIM_STAT_I64 */
    double      f64;     /* BRIM_STAT_F64 */
    const char *str;     /* BRIM_STAT_STR: bytes, and a NUL */
    size_t      str_len; /* BRIM_STAT_STR: bytes */
    /* The value as text, NUL-terminated: "42", "0.5" (a decimal as an
     * integer or fixed decimals, never an exponent), the string. */
    const char *text;
};

/*
 * Called once per statistic, in the node's order. Return 0 to go on, or
 * non-zero to stop: brim_stats() then returns that value. It must not call
 * libbrim with the same handle.
 */
typedef int (*brim_stats_cb)(const struct brim_stat *st, void *arg);

/*
 * Ask the node (in cluster mode the coordinator; the figures of every node
 * are brim_cluster_stats()'s, <brim/admin.h>) for its STATS and call
 * CB(stat, ARG) for each name/value pair: top-level scalars with SECTION
 * NULL, then the pairs of a nested map with SECTION set to the map's
 * name. SECTION_FILTER (NUL-terminated, at
 * most 64 bytes) asks for one section only; NULL or "" for all. Returns 0,
 * a callback's non-zero value, or an error.
 */
BRIM_EXTERN int brim_stats(struct brim_client *c, const char *section_filter,
                           brim_stats_cb cb, void *arg);

/* ---- many keys at once ---- */

/* A key for brim_mget(): KEY_LEN bytes at KEY, borrowed for the call. */
struct brim_key {
    const void *key;     /* binary-safe bytes */
    size_t      key_len; /* 1 .. the key limit */
};

/*
 * The outcome for one key of brim_mget(). VAL is a new buffer (with a NUL
 * after its VAL_LEN bytes) owned by the caller: free it with brim_free(),
 * or free the whole array's values with brim_mget_free().
 */
struct brim_mget_result {
    int      status;  /* 0 (hit), BRIM_ENOTFOUND or an error */
    void    *val;     /* status 0: the value; else NULL */
    size_t   val_len; /* status 0: bytes */
    uint32_t flags;   /* status 0: client flags */
    uint64_t cas;     /* status 0: CAS value */
};

/*
 * Fetch NKEYS keys: all requests are written, then all replies read (one
 * round trip per node; keys are sent in MGET frames of up to the node's
 * key-count limit). RESULTS is the caller's array of NKEYS entries, fully
 * written by every call: RESULTS[i] is the outcome for KEYS[i]. A key whose
 * own status is an error (BRIM_EINVAL for a bad key, ...) does not fail the
 * others. Returns 0 when every key got its answer, or the transport error
 * (BRIM_ETIMEDOUT, ...) that left some keys without one: those carry it as
 * their status, and the others keep their results. Either way, free the
 * values with brim_mget_free(). NKEYS 0 returns 0.
 */
BRIM_EXTERN int brim_mget(struct brim_client *c, const struct brim_key *keys,
                          size_t nkeys, struct brim_mget_result *results);

/* Free the NRESULTS results' values and set them to NULL. NULL is fine. */
BRIM_EXTERN void brim_mget_free(struct brim_mget_result *results,
                                size_t                   nresults);

/*
 * An item for brim_mset(): the inputs are borrowed for the call; STATUS
 * and CAS are written by it.
 */
struct brim_item {
    const void *key;     /* in: binary-safe bytes */
    size_t      key_len; /* in: 1 .. the key limit */
    const void *val;     /* in: the value (NULL when VAL_LEN 0) */
    size_t      val_len; /* in: bytes */
    uint32_t    ttl_s;   /* in: as brim_set() */
    uint32_t    flags;   /* in: client flags */
    int         status;  /* out: 0 or the item's error */
    uint64_t    cas;     /* out: status 0: the new CAS value */
};

/*
 * SET NITEMS items, pipelined: all requests written, then all replies read
 * (one round trip per node). Every item's STATUS is written. Returns 0 when
 * every item got its answer (check each STATUS), or the transport error
 * that left some items without one (those carry it as their status).
 * NITEMS 0 returns 0.
 */
BRIM_EXTERN int brim_mset(struct brim_client *c, struct brim_item *items,
                          size_t nitems);

#ifdef __cplusplus
}
#endif

#endif /* BRIM_H */
