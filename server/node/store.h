/*
 * server/node/store.h - a node's in-memory key-value store, split by
 * partition: one hash table per owned partition, allocated when first used,
 * so a whole partition can be streamed or dropped as a unit (DESIGN.md
 * section 5). Items carry a value, 32-bit client flags, a CAS value and an
 * optional expiry. A memory limit, counted at the allocator's real sizes
 * over everything the loop thread holds, is kept by evicting with SIEVE
 * (Zhang et al., "SIEVE is Simpler than LRU", NSDI 2024) or, for
 * comparison, plain LRU. No I/O and no libuv: the caller passes the clock.
 * Loop thread only.
 */
#ifndef BRIM_SERVER_NODE_STORE_H
#define BRIM_SERVER_NODE_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <brim/status.h>

/* Eviction policies. */
enum brim_evict_policy {
    BRIM_EVICT_SIEVE = 0, /* default: better hit ratio than LRU */
    BRIM_EVICT_LRU = 1    /* baseline for measurements */
};

/* How a write treats the key's current value (memcached's verbs). */
enum brim_store_mode {
    BRIM_STORE_SET = 0, /* store unconditionally */
    BRIM_STORE_ADD,     /* only if absent, else NOTSTORED */
    BRIM_STORE_REPLACE, /* only if present, else NOTSTORED */
    BRIM_STORE_CAS,     /* only if its CAS value matches */
    BRIM_STORE_APPEND,  /* add bytes after a present value */
    BRIM_STORE_PREPEND  /* add bytes before a present value */
};

/*
 * One stored item: one allocation holding this 36-byte header, the
 * optional 32-bit words its BITS name, the key and the value, like a
 * memcached item. Nothing that can be recomputed is kept: the key hash
 * is recomputed from the key (brim_store_config.key_hash) when a table
 * grows or an item is evicted, and client flags and an expiry take a
 * word only when they are not 0 (docs/design.md, "The item"). Read-only
 * outside store.c: read it through the brim_item_* accessors below.
 */
struct brim_item {
    struct brim_item *hnext;   /* next in the partition's bucket */
    struct brim_item *prev;    /* eviction queue, towards the head */
    struct brim_item *next;    /* eviction queue, towards the tail */
    uint64_t          cas;     /* changes on every write */
    uint8_t           key_len; /* key bytes, 1..250 */
    uint8_t           bits;    /* BRIM_ITEM_* */
    uint16_t          len_tag; /* low 12 bits: value bytes, unless
                                    BRIM_ITEM_LONG; high 4: the key
                                    hash's BRIM_ITEM_TAG() */
    char              data[];  /* words, key, value; 4-aligned */
};

/* Bits of brim_item.bits. The words follow the header in this order,
 * each present only when its bit is set. */
#define BRIM_ITEM_VISITED 0x01u /* SIEVE: read since the hand passed */
#define BRIM_ITEM_FLAGS 0x02u   /* word: client flags (absent: 0) */
#define BRIM_ITEM_EXPTIME 0x04u /* word: Unix seconds (absent: never) */
#define BRIM_ITEM_LONG 0x08u    /* word: value bytes, above 4,095 */
#define BRIM_ITEM_WORDS 0x0eu   /* the bits that add a word */
/* 0xf0 is free: per-item state (the memcached port's meta flags) fits
 * there without growing the header. */

/* The longest value whose length len_tag holds. */
#define BRIM_ITEM_SHORT_MAX 4095u

/* The 4 bits of a key hash kept in len_tag, so that a lookup passes over
 * most other keys of its chain without reading them: the top bits, which
 * a bucket index (the high 32 bits, below 2^28 buckets) never uses. */
#define BRIM_ITEM_TAG(hash) ((unsigned) ((uint64_t) (hash) >> 60))

/* Bytes of the header before data[]: 36 on LP64. */
#define BRIM_ITEM_HDR offsetof(struct brim_item, data)

/* Byte offset in IT->data of the word of BIT (one of BRIM_ITEM_WORDS),
 * or, with BIT 0x10, of the key: 4 bytes per word set below BIT. */
static inline size_t
brim_item_word_off(const struct brim_item *it, unsigned bit)
{
    unsigned below = it->bits & BRIM_ITEM_WORDS & (bit - 1u);

    return 4u
        * (size_t) (((below >> 1) & 1u) + ((below >> 2) & 1u)
                    + ((below >> 3) & 1u));
}

/* The word of BIT in IT, or 0 when IT has none. */
static inline uint32_t
brim_item_word(const struct brim_item *it, unsigned bit)
{
    uint32_t w = 0;

    if ((it->bits & bit) != 0) {
        memcpy(&w, it->data + brim_item_word_off(it, bit), sizeof(w));
    }
    return w;
}

/* Key bytes of IT, 1..250. */
static inline size_t
brim_item_key_len(const struct brim_item *it)
{
    return it->key_len;
}

/* Value bytes of IT. */
static inline size_t
brim_item_val_len(const struct brim_item *it)
{
    if ((it->bits & BRIM_ITEM_LONG) != 0) {
        return brim_item_word(it, BRIM_ITEM_LONG);
    }
    return it->len_tag & BRIM_ITEM_SHORT_MAX;
}

/* Client flags of IT (opaque to brim; 0 when none were given). */
static inline uint32_t
brim_item_flags(const struct brim_item *it)
{
    return brim_item_word(it, BRIM_ITEM_FLAGS);
}

/* Expiry of IT in absolute Unix seconds; 0 never expires. */
static inline uint32_t
brim_item_exptime(const struct brim_item *it)
{
    return brim_item_word(it, BRIM_ITEM_EXPTIME);
}

/* CAS value of IT: changes on every write, carried by migration. */
static inline uint64_t
brim_item_cas(const struct brim_item *it)
{
    return it->cas;
}

/* Key and value bytes of ITEM (borrowed from the store). */
static inline const char *
brim_item_key(const struct brim_item *it)
{
    return it->data + brim_item_word_off(it, 0x10u);
}

static inline const char *
brim_item_value(const struct brim_item *it)
{
    return brim_item_key(it) + it->key_len;
}

/*
 * Bytes asked of the allocator for an item of KEY_LEN key and VAL_LEN
 * value bytes with client FLAGS and EXPTIME (0: no word for it): the
 * header, its words, the key and the value. The allocator rounds it up
 * (glibc: plus 8, to a multiple of 16, at least 32); the memory limit
 * counts the rounded size.
 */
static inline size_t
brim_item_alloc_bytes(size_t key_len, size_t val_len, uint32_t flags,
                      uint32_t exptime)
{
    return BRIM_ITEM_HDR
        + 4u
        * (size_t) ((flags != 0) + (exptime != 0)
                    + (val_len > BRIM_ITEM_SHORT_MAX))
        + key_len + val_len;
}

/* Counters a node reports in STATS; all counts, bytes where named. */
struct brim_store_stats {
    uint64_t items;           /* live items (expired not yet reaped) */
    uint64_t item_bytes;      /* allocated bytes of items */
    uint64_t table_bytes;     /* allocated bytes of tables */
    uint64_t partitions_used; /* partitions with a table */
    uint64_t hits;            /* reads that found a live item */
    uint64_t misses;          /* reads that found nothing live */
    uint64_t sets;            /* successful writes of any mode */
    uint64_t deletes;         /* keys removed by DEL */
    uint64_t evictions;       /* items evicted for memory */
    uint64_t expirations;     /* expired items reclaimed */
    uint64_t reclaimed_scans; /* items looked at by the reaper */
    uint64_t dropped_pending; /* items of dropped partitions not yet freed
                                 (not in items; their bytes in item_bytes) */
};

/*
 * The cluster key hash of KEY (KEY_LEN bytes, borrowed): the function
 * whose value callers pass as HASH to every brim_store_* call, so the
 * store can recompute it for an item instead of keeping it. ARG is
 * brim_store_config.key_hash_arg. Must not change the store.
 */
typedef uint64_t (*brim_store_hash_fn)(const void *key, size_t key_len,
                                       void *arg);

/* Settings fixed at creation. */
struct brim_store_config {
    uint32_t               npartitions;     /* P, a power of two */
    size_t                 mem_limit_bytes; /* 0: no limit */
    size_t                 max_item_bytes;  /* largest key+value accepted */
    size_t                 max_value_bytes; /* largest value, APPEND and
                                              PREPEND results included;
                                              0: only max_item_bytes */
    enum brim_evict_policy policy;          /* SIEVE or LRU */
    uint64_t               cas_prefix;      /* incarnation bits, high 24 */
    size_t (*mem_used)(void);               /* bytes held; NULL: the
                                              thread's brim_alloc_bytes */
    int                data_only;           /* the limit counts the store's
                                              own bytes only (items, tables,
                                              the partition array), not
                                              MEM_USED: a node's buffers
                                              have their own bound */
    brim_store_hash_fn key_hash;            /* the HASH callers pass; NULL:
                                              brim_hash_key(0, ...) */
    void              *key_hash_arg;        /* KEY_HASH's ARG */
};

struct brim_store;

/*
 * Create a store with CONFIG (copied). Returns NULL when out of memory or
 * when npartitions is not a power of two. Free with brim_store_free().
 */
struct brim_store *brim_store_new(const struct brim_store_config *config);

/*
 * Bytes a store of NPARTITIONS partitions holds before its first item (the
 * partition array), so a memory limit can be checked against it.
 */
size_t brim_store_fixed_bytes(uint32_t npartitions);

/* Free STORE and every item it holds; NULL is fine. */
void brim_store_free(struct brim_store *store);

/*
 * Every call below that takes KEY and HASH requires HASH to be
 * config.key_hash of KEY (checked in debug builds): the store finds an
 * item's partition and bucket again from its key alone.
 *
 * Look up KEY (KEY_LEN bytes, borrowed) whose cluster hash is HASH, at Unix
 * time NOW (seconds). On a hit *OUT points at the item, valid until the
 * next call that changes STORE; reading marks it visited (SIEVE) or moves
 * it to the head (LRU). Returns 0 or BRIM_ENOTFOUND (absent or expired; an
 * expired item is reclaimed on the spot). Counts a hit or a miss.
 */
int brim_store_get(struct brim_store *store, uint64_t hash, const void *key,
                   size_t key_len, uint32_t now, const struct brim_item **out);

/*
 * Look up without counting or touching the eviction order (for internal
 * reads such as migration). Returns the live item or NULL.
 */
const struct brim_item *brim_store_peek(struct brim_store *store, uint64_t hash,
                                        const void *key, size_t key_len,
                                        uint32_t now);

/*
 * Write VAL (VAL_LEN bytes, copied) under KEY with client FLAGS and
 * EXPTIME (absolute Unix seconds, 0 never) according to MODE; for
 * BRIM_STORE_CAS, CAS_IN must equal the item's CAS value. APPEND and
 * PREPEND keep the item's flags and expiry. On success writes the new CAS
 * value to *CAS_OUT (if not NULL). Evicts to stay within the memory limit.
 * Returns 0; BRIM_ENOTSTORED (ADD on a present key, REPLACE, APPEND or
 * PREPEND on an absent one); BRIM_ENOTFOUND (CAS on an absent key);
 * BRIM_EEXISTS (CAS mismatch); BRIM_ETOOBIG (key plus value above
 * max_item_bytes, the value, APPEND's or PREPEND's result included, above
 * max_value_bytes, or above the memory limit even after evicting);
 * BRIM_EINVAL (KEY_LEN 0 or above 250); BRIM_ENOMEM. On error nothing
 * changes, except items evicted to make room.
 */
int brim_store_set(struct brim_store *store, enum brim_store_mode mode,
                   uint64_t hash, const void *key, size_t key_len,
                   const void *val, size_t val_len, uint32_t flags,
                   uint32_t exptime, uint64_t cas_in, uint32_t now,
                   uint64_t *cas_out);

/*
 * Delete KEY. Returns 0 or BRIM_ENOTFOUND (absent or expired).
 */
int brim_store_del(struct brim_store *store, uint64_t hash, const void *key,
                   size_t key_len, uint32_t now);

/*
 * Set KEY's expiry to EXPTIME (absolute Unix seconds, 0 never). An item
 * stored without an expiry has no word for one: it is copied into a new
 * allocation 4 bytes larger, in the same place in its chain and in the
 * eviction order (evicting others to make room if needed). Returns 0,
 * BRIM_ENOTFOUND, or, only when a word must be added, BRIM_ETOOBIG (no
 * room under the memory limit) or BRIM_ENOMEM; on error nothing changes
 * but items evicted to make room.
 */
int brim_store_touch(struct brim_store *store, uint64_t hash, const void *key,
                     size_t key_len, uint32_t exptime, uint32_t now);

/*
 * Add DELTA to (or with DECR, subtract it from) the decimal value of KEY,
 * memcached's rules: the value must read as memcached's strtoull() reads
 * a counter (PROTOCOL.md, INCR) and fit 64 bits; INCR wraps at 2^64, DECR
 * stops at 0. The value is rewritten as decimal text, padded with spaces
 * to the old value's length when it is no longer (memcached's in-place
 * rewrite), flags and expiry kept. Writes the result
 * to *RESULT and the new CAS value to *CAS_OUT (either may be NULL).
 * Returns 0, BRIM_ENOTFOUND, BRIM_ENONUMERIC or BRIM_ENOMEM.
 */
int brim_store_incr(struct brim_store *store, uint64_t hash, const void *key,
                    size_t key_len, uint64_t delta, int decr, uint32_t now,
                    uint64_t *result, uint64_t *cas_out);

/* Remove every item (FLUSH). */
void brim_store_flush(struct brim_store *store);

/*
 * Remove every item of PARTITION (a migration handed it over, or a commit
 * took it away). At once, the partition reads as empty, a scan of it
 * visits nothing, and its items leave stats.items for
 * stats.dropped_pending. Their memory (and the table's) is freed later,
 * in bounded steps by brim_store_reclaim, or all at once when the
 * partition is written again or the store is flushed: freeing 4,000
 * items at once held a node's loop for over a millisecond. Until then,
 * under the memory limit, they are freed before any live item is
 * evicted (not counted in stats.evictions). Returns
 * the number of items dropped (0 if PARTITION has none, or was dropped
 * already and not written since).
 */
size_t brim_store_drop_partition(struct brim_store *store, uint32_t partition);

/* Live items in PARTITION (expired ones not yet reclaimed included; a
 * dropped partition's items not). */
size_t brim_store_partition_items(const struct brim_store *store,
                                  uint32_t                 partition);

/*
 * Reclaim memory in the background, with no more than BUDGET items of
 * work: first free items of dropped partitions (brim_store_drop_partition,
 * oldest drop first), then look at items, resuming where the last call
 * stopped and cycling over every partition, and free those expired at
 * NOW. Returns the items freed or looked at (BUDGET or fewer; fewer when
 * nothing is left to free and one full cycle is done). Bounded work per
 * call, so a timer can run it without long pauses.
 */
size_t brim_store_reclaim(struct brim_store *store, uint32_t now,
                          size_t budget);

/*
 * Migration (DESIGN.md 7, step 3): insert an item streamed from the
 * partition's old owner. Stored only when KEY is absent (or expired)
 * here, so a write made here wins over the stream; kept with its CAS
 * value CAS and absolute EXPTIME (0 never), and linked at the cold end of
 * the eviction order (evicted first). Returns 0, BRIM_EEXISTS (a live
 * item is present: nothing changes), BRIM_EINVAL (KEY_LEN 0 or above
 * 250), BRIM_ETOOBIG or BRIM_ENOMEM. Counts neither a set nor a miss.
 */
int brim_store_insert_cold(struct brim_store *store, uint64_t hash,
                           const void *key, size_t key_len, const void *val,
                           size_t val_len, uint32_t flags, uint32_t exptime,
                           uint64_t cas, uint32_t now);

/* What a brim_store_scan() callback asks for, item by item. */
enum brim_scan_verdict {
    BRIM_SCAN_NEXT = 0,   /* the item is taken: go on */
    BRIM_SCAN_STOP,       /* the item is taken: stop after it */
    BRIM_SCAN_STOP_BEFORE /* the item is not taken: stop, and
                                       resume the next slice with it */
};

/*
 * Called by brim_store_scan() for each item; ARG is the caller's. Returns
 * an enum brim_scan_verdict. It must not change the store.
 */
typedef int (*brim_store_scan_cb)(const struct brim_item *it, void *arg);

/*
 * Where a scan of one partition stands between slices. Caller's memory;
 * set it up with brim_store_cursor_init(). While a slice has stopped
 * inside a bucket the store keeps a reference to the cursor (so that
 * removing the item it points at moves it on): call
 * brim_store_cursor_release() before freeing or reusing a cursor whose
 * scan did not finish.
 */
struct brim_store_cursor {
    uint32_t                  partition; /* the partition scanned */
    uint32_t                  bucket;    /* next bucket to visit */
    const struct brim_item   *mark;      /* next item inside BUCKET, NULL:
                                            the bucket's first */
    struct brim_store_cursor *next;      /* the store's list of cursors
                                            stopped inside a bucket */
    int                       linked;    /* on that list */
};

/* Point CUR (caller's memory) at the start of PARTITION. */
void brim_store_cursor_init(struct brim_store_cursor *cur, uint32_t partition);

/* Forget CUR: the store drops its reference. Idempotent; CUR may then be
 * freed or initialised again. */
void brim_store_cursor_release(struct brim_store        *store,
                               struct brim_store_cursor *cur);

/*
 * Visit the items of CUR's partition in bounded slices, for streaming it:
 * from where CUR stands, at most MAX_BUCKETS buckets, stopping at once
 * when CB asks (BRIM_SCAN_STOP after the item, BRIM_SCAN_STOP_BEFORE
 * before it: the next slice starts with that item). CUR moves past what
 * was visited. Removing items between slices is safe: an item CUR points
 * at hands the mark to its successor. The table must not grow between
 * slices (nothing is inserted into a partition being streamed out), and
 * at most one unfinished scan of a partition exists at a time. Returns 1
 * when the whole partition has been visited (CUR is then released), else
 * 0. Expired items are passed too (CB decides).
 */
int brim_store_scan(struct brim_store *store, struct brim_store_cursor *cur,
                    uint32_t max_buckets, brim_store_scan_cb cb, void *arg);

/* Bytes the store holds: its items and tables at their allocated sizes
 * and its partition array (what data_only limits). */
size_t brim_store_data_bytes(const struct brim_store *store);

/* Copy the counters into *OUT. */
void brim_store_get_stats(const struct brim_store *store,
                          struct brim_store_stats *out);

/* Longest bucket chain in PARTITION's table (tests: chains stay short). */
size_t brim_store_max_chain(const struct brim_store *store, uint32_t partition);

#endif /* BRIM_SERVER_NODE_STORE_H */
