/*
 * server/node/store.c - the partitioned key-value store of a node. Each
 * partition owns a chained hash table indexed by the key hash's high 32
 * bits (its low bits are the partition itself, shared by every key in it).
 * Items do not keep the hash: it is recomputed from the key where a table
 * grows or an evicted item is unlinked, which costs one XXH3 of the key.
 * One eviction queue spans the store: SIEVE (Zhang et al., NSDI 2024) keeps
 * a FIFO with a "visited" bit and a hand that sweeps from the oldest item,
 * sparing and clearing visited items and evicting the first unvisited one;
 * LRU moves items to the head on every hit. New items enter at the head.
 */
#include "server/node/store.h"

#include <malloc.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/hash.h"

#define STORE_KEY_MAX 250
#define STORE_BUCKETS_MIN 4u
/* Items per bucket before a table doubles. 2, not 1: a table then costs
 * 4 to 8 bytes per item instead of 8 to 16, and a partition's growth
 * frees fewer small bucket arrays, which glibc cannot hand to the larger
 * items that follow (docs/performance.md, "Memory per item"). */
#define STORE_LOAD_MAX 2u
#define STORE_CAS_BITS 40 /* counter bits under cas_prefix */

/* The header budget of docs/design.md ("The item"): three links, the CAS
 * value and one 32-bit word, so 32-byte keys with 100-byte values fit a
 * 176-byte glibc chunk. */
_Static_assert(sizeof(void *) != 8 || BRIM_ITEM_HDR == 36,
               "struct brim_item grew past 36 bytes on LP64");

/* One partition: its table, allocated when the first item arrives. */
struct store_part {
    struct brim_item **buckets;      /* nbuckets chains, or NULL */
    uint32_t           nbuckets;     /* power of two, 0 when unused */
    uint32_t           nitems : 31;  /* items in this partition */
    uint32_t           dropping : 1; /* dropped, its items not yet freed */
};
/* 16 bytes: at 65,536 partitions the array is 1 MiB of every node. */
_Static_assert(sizeof(void *) != 8 || sizeof(struct store_part) == 16,
               "struct store_part grew past 16 bytes on LP64");

#define STORE_NO_PART UINT32_MAX

struct brim_store {
    struct brim_store_config  cfg;         /* copied settings */
    struct store_part        *parts;       /* npartitions entries */
    struct brim_item         *head;        /* newest item */
    struct brim_item         *tail;        /* oldest item */
    struct brim_item         *hand;        /* SIEVE hand; NULL: start at tail */
    uint64_t                  cas_next;    /* counter under the prefix */
    uint32_t                  reap_part;   /* reclaim cursor: partition */
    uint32_t                  reap_bucket; /* reclaim cursor: bucket */
    uint32_t                  drop_head;   /* dropped partitions to free,
                                              oldest first (STORE_NO_PART) */
    uint32_t                  drop_tail;   /* newest of them */
    uint32_t                  drop_at;     /* drop_head's buckets below it
                                              are empty */
    uint32_t                 *drop_next;   /* npartitions links of the drop
                                              list; NULL while it is empty */
    struct brim_store_cursor *cursors;     /* scans stopped inside a bucket */
    struct brim_store_stats   stats;       /* counters */
};

static size_t
store_mem_used(const struct brim_store *s)
{
    if (s->cfg.data_only) {
        return brim_store_data_bytes(s);
    }
    return s->cfg.mem_used != NULL ? s->cfg.mem_used() : brim_alloc_bytes();
}

static inline uint32_t
store_part_of(const struct brim_store *s, uint64_t hash)
{
    return (uint32_t) (hash & (uint64_t) (s->cfg.npartitions - 1));
}

/* Bucket of HASH in a table of NBUCKETS: the high 32 bits, which the
 * partition index (at most 20 low bits) never uses. */
static inline uint32_t
store_bucket_of(uint64_t hash, uint32_t nbuckets)
{
    return (uint32_t) (hash >> 32) & (nbuckets - 1);
}

static inline int
item_expired(const struct brim_item *it, uint32_t now)
{
    uint32_t exptime = brim_item_exptime(it);

    return exptime != 0 && exptime <= now;
}

/* The cluster key hash of IT, recomputed from its key. */
static inline uint64_t
item_hash(const struct brim_store *s, const struct brim_item *it)
{
    if (s->cfg.key_hash != NULL) {
        return s->cfg.key_hash(brim_item_key(it), it->key_len,
                               s->cfg.key_hash_arg);
    }
    return brim_hash_key(0, brim_item_key(it), it->key_len);
}

struct brim_store *
brim_store_new(const struct brim_store_config *config)
{
    struct brim_store *s;
    uint32_t           p = config->npartitions;

    if (p == 0 || (p & (p - 1)) != 0) {
        return NULL;
    }
    s = brim_calloc(1, sizeof(*s));
    if (s == NULL) {
        return NULL;
    }
    s->cfg = *config;
    s->parts = brim_calloc(p, sizeof(*s->parts));
    if (s->parts == NULL) {
        brim_free(s);
        return NULL;
    }
    s->stats.table_bytes = malloc_usable_size(s->parts);
    s->drop_head = s->drop_tail = STORE_NO_PART;
    return s;
}

size_t
brim_store_fixed_bytes(uint32_t npartitions)
{
    return sizeof(struct brim_store)
        + (size_t) npartitions * sizeof(struct store_part);
}

/* ---- eviction queue ---- */

static void
queue_push_head(struct brim_store *s, struct brim_item *it)
{
    it->prev = NULL;
    it->next = s->head;
    if (s->head != NULL) {
        s->head->prev = it;
    }
    s->head = it;
    if (s->tail == NULL) {
        s->tail = it;
    }
}

static void
queue_unlink(struct brim_store *s, struct brim_item *it)
{
    if (s->hand == it) {
        s->hand = it->prev; /* the hand moves towards the head */
    }
    if (it->prev != NULL) {
        it->prev->next = it->next;
    } else {
        s->head = it->next;
    }
    if (it->next != NULL) {
        it->next->prev = it->prev;
    } else {
        s->tail = it->prev;
    }
    it->prev = NULL;
    it->next = NULL;
}

/* ---- tables ---- */

/* The slot that points at the live-or-expired item KEY in its partition,
 * or NULL. Returning the slot lets callers unlink in O(1). */
static struct brim_item **
table_slot(struct brim_store *s, uint64_t hash, const void *key, size_t key_len)
{
    struct store_part *part = &s->parts[store_part_of(s, hash)];
    struct brim_item **slot;
    unsigned           tag = BRIM_ITEM_TAG(hash);

    if (part->nbuckets == 0 || part->dropping) {
        return NULL; /* a dropped partition reads as empty */
    }
    slot = &part->buckets[store_bucket_of(hash, part->nbuckets)];
    /* Chains hold 1 to 2 items (load factor at most 2). The 4-bit tag
     * passes over 15 in 16 other keys without reading their bytes, which
     * for keys longer than 28 bytes reach into a second cache line. */
    while (*slot != NULL) {
        if (((*slot)->len_tag >> 12) == tag && (*slot)->key_len == key_len
            && memcmp(brim_item_key(*slot), key, key_len) == 0)
        {
            return slot;
        }
        slot = &(*slot)->hnext;
    }
    return NULL;
}

/* Double PART's bucket array (or create it). On failure the table keeps
 * its old size, which only lengthens chains. */
static void
table_grow(struct brim_store *s, struct store_part *part)
{
    struct brim_item **nb, *it, *next;
    uint32_t           n, i, b;

    n = part->nbuckets == 0 ? STORE_BUCKETS_MIN : part->nbuckets * 2;
    nb = brim_calloc(n, sizeof(*nb));
    if (nb == NULL) {
        return;
    }
    for (i = 0; i < part->nbuckets; i++) {
        for (it = part->buckets[i]; it != NULL; it = next) {
            next = it->hnext;
            b = store_bucket_of(item_hash(s, it), n);
            it->hnext = nb[b];
            nb[b] = it;
        }
    }
    if (part->buckets != NULL) {
        s->stats.table_bytes -= malloc_usable_size(part->buckets);
        brim_free(part->buckets);
    } else {
        s->stats.partitions_used++;
    }
    s->stats.table_bytes += malloc_usable_size(nb);
    part->buckets = nb;
    part->nbuckets = n;
}

/* Remove the item at *SLOT, in PART's table, from the table and the
 * queue, and free it. */
static void
item_remove(struct brim_store *s, struct store_part *part,
            struct brim_item **slot)
{
    struct brim_item         *it = *slot;
    struct brim_store_cursor *cur;

    /* A scan that stopped at this item resumes at its successor (or, at
     * the end of the chain, at the next bucket). */
    for (cur = s->cursors; cur != NULL; cur = cur->next) {
        if (cur->mark == it) {
            cur->mark = it->hnext;
            if (cur->mark == NULL) {
                cur->bucket++;
            }
        }
    }
    *slot = it->hnext;
    part->nitems--;
    queue_unlink(s, it);
    if (part->dropping) {
        s->stats.dropped_pending--;
    } else {
        s->stats.items--;
    }
    s->stats.item_bytes -= malloc_usable_size(it);
    brim_free(it);
}

/* Remove IT wherever it is (evictions start from the queue, not a slot):
 * its bucket comes from its recomputed hash, then the chain is searched
 * for IT itself, without comparing keys. Returns 1 when IT was live, 0
 * when its partition was dropped (it only waited to be freed). */
static int
item_remove_any(struct brim_store *s, struct brim_item *it)
{
    struct store_part *part;
    struct brim_item **slot;
    uint64_t           hash = item_hash(s, it);

    part = &s->parts[store_part_of(s, hash)];
    BRIM_ASSERT(part->nbuckets != 0); /* every item is indexed */
    slot = &part->buckets[store_bucket_of(hash, part->nbuckets)];
    while (*slot != it) {
        BRIM_ASSERT(*slot != NULL); /* key_hash is what callers pass */
        slot = &(*slot)->hnext;
    }
    item_remove(s, part, slot);
    return !part->dropping;
}

/* ---- dropped partitions, freed in bounded steps ---- */

/* Free up to BUDGET of PART's items, bucket by bucket from *AT (below
 * it every bucket is empty; the table keeps its size, as an eviction
 * finds an item's bucket by it); once it holds none, free its table and
 * end its drop. Returns the items freed. */
static size_t
part_free(struct brim_store *s, struct store_part *part, uint32_t *at,
          size_t budget)
{
    size_t freed = 0;

    while (part->nitems > 0 && freed < budget) {
        BRIM_ASSERT(*at < part->nbuckets);
        if (part->buckets[*at] == NULL) {
            (*at)++;
            continue;
        }
        item_remove(s, part, &part->buckets[*at]);
        freed++;
    }
    if (part->nitems == 0 && part->buckets != NULL) {
        s->stats.table_bytes -= malloc_usable_size(part->buckets);
        if (!part->dropping) {
            s->stats.partitions_used--;
        }
        brim_free(part->buckets);
        part->buckets = NULL;
        part->nbuckets = 0;
    }
    if (part->buckets == NULL) {
        part->dropping = 0;
    }
    return freed;
}

/* Take partition P off the drop list (the list's links go with its last
 * entry). */
static void
drop_unlist(struct brim_store *s, uint32_t p)
{
    uint32_t *link = &s->drop_head, prev = STORE_NO_PART;

    while (*link != STORE_NO_PART && *link != p) {
        prev = *link;
        link = &s->drop_next[*link];
    }
    BRIM_ASSERT(*link == p);
    if (p == s->drop_head) {
        s->drop_at = 0; /* the next head starts at its first bucket */
    }
    *link = s->drop_next[p];
    if (s->drop_tail == p) {
        s->drop_tail = prev;
    }
    if (s->drop_head == STORE_NO_PART) {
        brim_free(s->drop_next);
        s->drop_next = NULL;
    }
}

/* Free every item of partition P now, on the drop list or not. */
static void
part_free_all(struct brim_store *s, uint32_t p)
{
    uint32_t at = 0;

    if (s->parts[p].dropping) {
        if (p == s->drop_head) {
            at = s->drop_at;
        }
        drop_unlist(s, p);
    }
    (void) part_free(s, &s->parts[p], &at, SIZE_MAX);
}

/* Free up to BUDGET items of dropped partitions, oldest drop first.
 * Returns the items freed. */
static size_t
drop_step(struct brim_store *s, size_t budget)
{
    size_t   freed = 0;
    uint32_t p;

    while (s->drop_head != STORE_NO_PART && freed < budget) {
        p = s->drop_head;
        freed += part_free(s, &s->parts[p], &s->drop_at, budget - freed);
        if (!s->parts[p].dropping) {
            drop_unlist(s, p);
        }
    }
    return freed;
}

/* Choose and evict one item, sparing PROTECT. Returns 0, or -1 when
 * nothing but PROTECT is left. */
static int
store_evict_one(struct brim_store *s, const struct brim_item *protect)
{
    struct brim_item *o;

    if (s->tail == NULL || (s->tail == protect && s->head == protect)) {
        return -1;
    }
    if (s->cfg.policy == BRIM_EVICT_LRU) {
        o = s->tail == protect ? s->tail->prev : s->tail;
    } else {
        /* The hand sweeps from the tail towards the head, wrapping, and
         * clears visited bits; it stops at the first unvisited item. */
        o = s->hand != NULL ? s->hand : s->tail;
        while ((o->bits & BRIM_ITEM_VISITED) != 0 || o == protect) {
            o->bits &= (uint8_t) ~BRIM_ITEM_VISITED;
            o = o->prev != NULL ? o->prev : s->tail;
        }
        s->hand = o->prev;
    }
    /* An item of a dropped partition goes first at no loss: not counted. */
    s->stats.evictions += (uint64_t) item_remove_any(s, o);
    return 0;
}

/* Evict until NEED more bytes fit the limit. Returns 0 or BRIM_ETOOBIG. */
static int
store_make_room(struct brim_store *s, size_t need,
                const struct brim_item *protect)
{
    if (s->cfg.mem_limit_bytes == 0) {
        return 0;
    }
    while (store_mem_used(s) + need > s->cfg.mem_limit_bytes) {
        if (s->drop_head != STORE_NO_PART) {
            /* Dropped items first, wherever the hand is: they hold
             * memory for nothing, and a live item would go instead. */
            (void) drop_step(s, 1);
            continue;
        }
        if (store_evict_one(s, protect) != 0) {
            return BRIM_ETOOBIG;
        }
    }
    return 0;
}

/* The live item at KEY's slot, reclaiming it if expired. */
static struct brim_item **
store_find_live(struct brim_store *s, uint64_t hash, const void *key,
                size_t key_len, uint32_t now)
{
    struct brim_item **slot;

    slot = table_slot(s, hash, key, key_len);
    if (slot != NULL && item_expired(*slot, now)) {
        item_remove(s, &s->parts[store_part_of(s, hash)], slot);
        s->stats.expirations++;
        return NULL;
    }
    return slot;
}

int
brim_store_get(struct brim_store *s, uint64_t hash, const void *key,
               size_t key_len, uint32_t now, const struct brim_item **out)
{
    struct brim_item **slot;
    struct brim_item  *it;

    slot = store_find_live(s, hash, key, key_len, now);
    if (slot == NULL) {
        s->stats.misses++;
        return BRIM_ENOTFOUND;
    }
    it = *slot;
    if (s->cfg.policy == BRIM_EVICT_LRU) {
        queue_unlink(s, it);
        queue_push_head(s, it);
    } else {
        it->bits |= BRIM_ITEM_VISITED;
    }
    s->stats.hits++;
    *out = it;
    return 0;
}

const struct brim_item *
brim_store_peek(struct brim_store *s, uint64_t hash, const void *key,
                size_t key_len, uint32_t now)
{
    struct brim_item **slot;

    slot = table_slot(s, hash, key, key_len);
    if (slot == NULL || item_expired(*slot, now)) {
        return NULL;
    }
    return *slot;
}

/* Check MODE against the current item OLD (NULL if absent). */
static int
store_mode_check(enum brim_store_mode mode, const struct brim_item *old,
                 uint64_t cas_in)
{
    switch (mode) {
    case BRIM_STORE_SET:
        return 0;
    case BRIM_STORE_ADD:
        return old != NULL ? BRIM_ENOTSTORED : 0;
    case BRIM_STORE_REPLACE:
    case BRIM_STORE_APPEND:
    case BRIM_STORE_PREPEND:
        return old == NULL ? BRIM_ENOTSTORED : 0;
    case BRIM_STORE_CAS:
        if (old == NULL) {
            return BRIM_ENOTFOUND;
        }
        return old->cas != cas_in ? BRIM_EEXISTS : 0;
    }
    return BRIM_EINVAL;
}

static uint64_t
store_next_cas(struct brim_store *s)
{
    s->cas_next = (s->cas_next + 1) & ((1ull << STORE_CAS_BITS) - 1);
    if (s->cas_next == 0) {
        s->cas_next = 1; /* 0 means "no CAS" to clients */
    }
    return (s->cfg.cas_prefix << STORE_CAS_BITS) | s->cas_next;
}

/* Link the new item IT, whose key hashes to HASH, into its partition at
 * the head of the queue. */
static void
store_link(struct brim_store *s, struct brim_item *it, uint64_t hash)
{
    struct store_part *part = &s->parts[store_part_of(s, hash)];
    uint32_t           b;

    BRIM_DASSERT(item_hash(s, it) == hash); /* O(key): debug builds */
    if (part->dropping) {
        /* Written again before its old items were freed: free them now,
         * so the table holds only what was written since the drop. */
        part_free_all(s, store_part_of(s, hash));
    }
    if (part->nitems >= STORE_LOAD_MAX * part->nbuckets) {
        table_grow(s, part); /* keeps the load factor at most 2 */
    }
    b = store_bucket_of(hash, part->nbuckets);
    it->hnext = part->buckets[b];
    part->buckets[b] = it;
    part->nitems++;
    queue_push_head(s, it);
    s->stats.items++;
    s->stats.item_bytes += malloc_usable_size(it);
}

/* Put WORD in IT's word for BIT, which IT->bits already names. */
static inline void
item_set_word(struct brim_item *it, unsigned bit, uint32_t word)
{
    memcpy(it->data + brim_item_word_off(it, bit), &word, sizeof(word));
}

/*
 * Fill the header of IT, an allocation of brim_item_alloc_bytes(KEY_LEN,
 * VAL_LEN, FLAGS, EXPTIME) bytes, for KEY hashed to HASH, and copy KEY
 * in: the words for FLAGS and EXPTIME only when they are not 0, the value
 * length's only above BRIM_ITEM_SHORT_MAX. Returns where the VAL_LEN
 * value bytes go.
 */
static char *
item_init(struct brim_item *it, uint64_t hash, const void *key, size_t key_len,
          size_t val_len, uint32_t flags, uint32_t exptime)
{
    memset(it, 0, BRIM_ITEM_HDR);
    it->key_len = (uint8_t) key_len;
    it->bits =
        (uint8_t) ((flags != 0 ? BRIM_ITEM_FLAGS : 0)
                   | (exptime != 0 ? BRIM_ITEM_EXPTIME : 0)
                   | (val_len > BRIM_ITEM_SHORT_MAX ? BRIM_ITEM_LONG : 0));
    if (flags != 0) {
        item_set_word(it, BRIM_ITEM_FLAGS, flags);
    }
    if (exptime != 0) {
        item_set_word(it, BRIM_ITEM_EXPTIME, exptime);
    }
    it->len_tag = (uint16_t) (BRIM_ITEM_TAG(hash) << 12);
    if (val_len > BRIM_ITEM_SHORT_MAX) {
        item_set_word(it, BRIM_ITEM_LONG, (uint32_t) val_len);
    } else {
        it->len_tag |= (uint16_t) val_len;
    }
    memcpy((char *) brim_item_key(it), key, key_len);
    return (char *) brim_item_value(it);
}

/*
 * Allocate an item for KEY (copied into it) with room for VAL_LEN value
 * bytes, after checking the size limits and making room under the memory
 * limit (sparing PROTECT, which a caller may still read). The header is
 * filled but for the CAS value; the caller copies the value and links it.
 * Returns 0 with *OUT, BRIM_ETOOBIG or BRIM_ENOMEM; on error nothing is
 * allocated (items evicted for room stay evicted).
 */
static int
store_item_alloc(struct brim_store *s, uint64_t hash, const void *key,
                 size_t key_len, size_t val_len, uint32_t flags,
                 uint32_t exptime, const struct brim_item *protect,
                 struct brim_item **out)
{
    struct store_part *part;
    struct brim_item  *it;
    size_t             size;
    int                rc;

    /* The value bound matters for APPEND and PREPEND: the wire checks
     * only the bytes added, and a value above the peers' max_value_bytes
     * could be stored but never read back. */
    if (key_len + val_len > s->cfg.max_item_bytes || val_len > UINT32_MAX
        || (s->cfg.max_value_bytes != 0 && val_len > s->cfg.max_value_bytes))
    {
        return BRIM_ETOOBIG;
    }
    size = brim_item_alloc_bytes(key_len, val_len, flags, exptime);
    /* An item larger than the whole limit can never fit: refuse it before
     * evicting anything for it. */
    if (s->cfg.mem_limit_bytes != 0 && size > s->cfg.mem_limit_bytes) {
        return BRIM_ETOOBIG;
    }
    /* An old item is freed only after the new one is built, so make room
     * for the whole new item, sparing PROTECT (APPEND still reads it). */
    rc = store_make_room(s, size, protect);
    if (rc != 0) {
        return rc;
    }
    /* The partition's first item creates its table; without one the item
     * cannot be linked, so that failure is this write's ENOMEM. */
    part = &s->parts[store_part_of(s, hash)];
    if (part->nbuckets == 0) {
        table_grow(s, part);
        if (part->nbuckets == 0) {
            return BRIM_ENOMEM;
        }
    }
    it = brim_malloc(size);
    if (it == NULL) {
        return BRIM_ENOMEM;
    }
    (void) item_init(it, hash, key, key_len, val_len, flags, exptime);
    *out = it;
    return 0;
}

int
brim_store_set(struct brim_store *s, enum brim_store_mode mode, uint64_t hash,
               const void *key, size_t key_len, const void *val, size_t val_len,
               uint32_t flags, uint32_t exptime, uint64_t cas_in, uint32_t now,
               uint64_t *cas_out)
{
    struct brim_item **slot, *old, *it;
    size_t             total_val, old_len = 0;
    char              *dst;
    int                rc;

    if (key_len == 0 || key_len > STORE_KEY_MAX) {
        return BRIM_EINVAL;
    }
    slot = store_find_live(s, hash, key, key_len, now);
    old = slot != NULL ? *slot : NULL;
    rc = store_mode_check(mode, old, cas_in);
    if (rc != 0) {
        return rc;
    }
    total_val = val_len;
    if (mode == BRIM_STORE_APPEND || mode == BRIM_STORE_PREPEND) {
        old_len = brim_item_val_len(old);
        total_val += old_len;
        flags = brim_item_flags(old);
        exptime = brim_item_exptime(old);
    }
    rc = store_item_alloc(s, hash, key, key_len, total_val, flags, exptime, old,
                          &it);
    if (rc != 0) {
        return rc;
    }
    dst = (char *) brim_item_value(it);
    if (mode == BRIM_STORE_APPEND) {
        memcpy(dst, brim_item_value(old), old_len);
        memcpy(dst + old_len, val, val_len);
    } else if (mode == BRIM_STORE_PREPEND) {
        memcpy(dst, val, val_len);
        memcpy(dst + val_len, brim_item_value(old), old_len);
    } else if (val_len > 0) {
        memcpy(dst, val, val_len);
    }
    it->cas = store_next_cas(s);
    if (old != NULL) {
        /* Evictions above may have changed the chain: find it again. */
        item_remove(s, &s->parts[store_part_of(s, hash)],
                    table_slot(s, hash, key, key_len));
    }
    store_link(s, it, hash);
    /* The room made above was for the requested size; the allocator's
     * rounding and a table that doubled in store_link() can take a few
     * bytes more. Trim back under the limit, sparing the new item. */
    (void) store_make_room(s, 0, it);
    s->stats.sets++;
    if (cas_out != NULL) {
        *cas_out = it->cas;
    }
    return 0;
}

int
brim_store_del(struct brim_store *s, uint64_t hash, const void *key,
               size_t key_len, uint32_t now)
{
    struct brim_item **slot;

    slot = store_find_live(s, hash, key, key_len, now);
    if (slot == NULL) {
        return BRIM_ENOTFOUND;
    }
    item_remove(s, &s->parts[store_part_of(s, hash)], slot);
    s->stats.deletes++;
    return 0;
}

/* Put NEW, a copy of the item at *SLOT, in the old one's place: in its
 * chain, in the eviction order (the hand included) and under any cursor
 * marking it; then free the old one. */
static void
item_replace(struct brim_store *s, struct brim_item **slot,
             struct brim_item *new)
{
    struct brim_item         *old = *slot;
    struct brim_store_cursor *cur;

    new->hnext = old->hnext;
    *slot = new;
    new->prev = old->prev;
    new->next = old->next;
    if (old->prev != NULL) {
        old->prev->next = new;
    } else {
        s->head = new;
    }
    if (old->next != NULL) {
        old->next->prev = new;
    } else {
        s->tail = new;
    }
    if (s->hand == old) {
        s->hand = new;
    }
    for (cur = s->cursors; cur != NULL; cur = cur->next) {
        if (cur->mark == old) {
            cur->mark = new;
        }
    }
    s->stats.item_bytes -= malloc_usable_size(old);
    s->stats.item_bytes += malloc_usable_size(new);
    brim_free(old);
}

/* Give the live item of KEY, which has no expiry word, one holding
 * EXPTIME (not 0): a new allocation in its place, after making room for
 * the bytes it adds. Returns 0, BRIM_ETOOBIG or BRIM_ENOMEM. */
static int
store_add_exptime(struct brim_store *s, uint64_t hash, const void *key,
                  size_t key_len, uint32_t exptime)
{
    struct brim_item **slot, *old, *it;
    size_t             val_len, size, have;
    int                rc;

    old = *table_slot(s, hash, key, key_len);
    val_len = brim_item_val_len(old);
    size =
        brim_item_alloc_bytes(key_len, val_len, brim_item_flags(old), exptime);
    if (s->cfg.mem_limit_bytes != 0 && size > s->cfg.mem_limit_bytes) {
        return BRIM_ETOOBIG;
    }
    /* Room for the growth only: the old copy goes as soon as the new one
     * is filled, so TOUCH evicts nothing for a transient copy. */
    have = malloc_usable_size(old);
    rc = store_make_room(s, size > have ? size - have : 0, old);
    if (rc != 0) {
        return rc;
    }
    it = brim_malloc(size);
    if (it == NULL) {
        return BRIM_ENOMEM;
    }
    memcpy(item_init(it, hash, key, key_len, val_len, brim_item_flags(old),
                     exptime),
           brim_item_value(old), val_len);
    it->cas = old->cas;
    it->bits |= old->bits & ~BRIM_ITEM_WORDS; /* SIEVE's bit, any other */
    /* Evictions above may have changed the chain: find the slot again. */
    slot = table_slot(s, hash, key, key_len);
    item_replace(s, slot, it);
    (void) store_make_room(s, 0, it); /* the allocator's rounding */
    return 0;
}

int
brim_store_touch(struct brim_store *s, uint64_t hash, const void *key,
                 size_t key_len, uint32_t exptime, uint32_t now)
{
    struct brim_item **slot;

    slot = store_find_live(s, hash, key, key_len, now);
    if (slot == NULL) {
        return BRIM_ENOTFOUND;
    }
    if (((*slot)->bits & BRIM_ITEM_EXPTIME) != 0) {
        item_set_word(*slot, BRIM_ITEM_EXPTIME, exptime); /* 0: never */
        return 0;
    }
    if (exptime == 0) {
        return 0; /* no word, no expiry: nothing to change */
    }
    return store_add_exptime(s, hash, key, key_len, exptime);
}

static int
counter_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f'
        || c == '\r';
}

/* Parse a counter as memcached reads one (strtoull(3) base 10 and its
 * safe_strtoull() check): optional leading white space, an optional '+',
 * decimal digits fitting 64 bits, then the value's end, or white space or
 * a NUL and anything after it. So " 12", "12 " (memcached pads its own
 * results with spaces), "+5" and "12\0" count as 12 or 5; "-5", "12abc"
 * and 2^64 do not. */
static int
parse_counter(const char *p, size_t len, uint64_t *out)
{
    uint64_t v = 0, d;
    size_t   i = 0, digits;

    while (i < len && counter_space(p[i])) {
        i++;
    }
    if (i < len && p[i] == '+') {
        i++;
    }
    for (digits = i; i < len && p[i] >= '0' && p[i] <= '9'; i++) {
        d = (uint64_t) (p[i] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return BRIM_ENONUMERIC;
        }
        v = v * 10 + d;
    }
    if (i == digits || (i < len && !counter_space(p[i]) && p[i] != '\0')) {
        return BRIM_ENONUMERIC;
    }
    *out = v;
    return 0;
}

int
brim_store_incr(struct brim_store *s, uint64_t hash, const void *key,
                size_t key_len, uint64_t delta, int decr, uint32_t now,
                uint64_t *result, uint64_t *cas_out)
{
    struct brim_item **slot;
    char               text[24], small[64], *buf, *padded = NULL;
    const char        *value;
    uint64_t           v;
    size_t             old_len, len;
    int                rc, n;

    slot = store_find_live(s, hash, key, key_len, now);
    if (slot == NULL) {
        return BRIM_ENOTFOUND;
    }
    rc = parse_counter(brim_item_value(*slot), brim_item_val_len(*slot), &v);
    if (rc != 0) {
        return rc;
    }
    if (decr) {
        v = v < delta ? 0 : v - delta; /* memcached: DECR stops at 0 */
    } else {
        v += delta; /* and INCR wraps at 2^64 */
    }
    n = snprintf(text, sizeof(text), "%llu", (unsigned long long) v);
    old_len = brim_item_val_len(*slot);
    len = (size_t) n;
    value = text;
    if (len < old_len) {
        /* memcached writes a result no longer than the old value over it
         * in place, padded with spaces to the old length ("100", decr 1:
         * "99 "); GET then answers the same bytes as memcached's. A
         * counter's value is short: the heap only for a long one ("7"
         * and a NUL and anything after it). */
        buf = small;
        if (old_len > sizeof(small)) {
            buf = padded = brim_malloc(old_len);
            if (padded == NULL) {
                return BRIM_ENOMEM;
            }
        }
        memcpy(buf, text, len);
        memset(buf + len, ' ', old_len - len);
        value = buf;
        len = old_len;
    }
    rc = brim_store_set(s, BRIM_STORE_SET, hash, key, key_len, value, len,
                        brim_item_flags(*slot), brim_item_exptime(*slot), 0,
                        now, cas_out);
    brim_free(padded);
    if (rc == 0 && result != NULL) {
        *result = v;
    }
    return rc;
}

void
brim_store_flush(struct brim_store *s)
{
    uint32_t p;

    while (s->drop_head != STORE_NO_PART) {
        part_free_all(s, s->drop_head);
    }
    for (p = 0; p < s->cfg.npartitions; p++) {
        part_free_all(s, p);
    }
}

size_t
brim_store_drop_partition(struct brim_store *s, uint32_t partition)
{
    struct store_part *part = &s->parts[partition];
    size_t             n = part->nitems;

    if (part->nbuckets == 0 || part->dropping) {
        return 0;
    }
    if (s->drop_next == NULL && n > 0) {
        s->drop_next = brim_malloc(s->cfg.npartitions * sizeof(uint32_t));
    }
    if (n == 0 || s->drop_next == NULL) {
        part_free_all(s, partition); /* empty, or no room for the list */
        return n;
    }
    /* Out of sight now; freed by brim_store_reclaim, a few at a time
     * (freeing 4,000 items took over a millisecond of the loop). */
    part->dropping = 1;
    s->drop_next[partition] = STORE_NO_PART;
    if (s->drop_tail == STORE_NO_PART) {
        s->drop_head = partition;
        s->drop_at = 0;
    } else {
        s->drop_next[s->drop_tail] = partition;
    }
    s->drop_tail = partition;
    s->stats.items -= n;
    s->stats.dropped_pending += n;
    s->stats.partitions_used--;
    return n;
}

size_t
brim_store_partition_items(const struct brim_store *s, uint32_t partition)
{
    const struct store_part *part = &s->parts[partition];

    return part->dropping ? 0 : part->nitems;
}

size_t
brim_store_reclaim(struct brim_store *s, uint32_t now, size_t budget)
{
    struct store_part *part;
    struct brim_item **slot;
    size_t             looked, freed;
    uint32_t           parts_seen = 0;

    /* Dropped partitions' items first: they hold memory for nothing. */
    freed = drop_step(s, budget);
    looked = freed;
    /* Resume at the cursor; stop after BUDGET items or one full cycle. */
    while (looked < budget && parts_seen <= s->cfg.npartitions) {
        part = &s->parts[s->reap_part];
        if (s->reap_bucket >= part->nbuckets || part->dropping) {
            s->reap_part = (s->reap_part + 1) & (s->cfg.npartitions - 1);
            s->reap_bucket = 0;
            parts_seen++;
            continue;
        }
        slot = &part->buckets[s->reap_bucket];
        while (*slot != NULL) {
            looked++;
            if (item_expired(*slot, now)) {
                item_remove(s, part, slot);
                s->stats.expirations++;
            } else {
                slot = &(*slot)->hnext;
            }
        }
        s->reap_bucket++;
    }
    s->stats.reclaimed_scans += looked - freed;
    return looked;
}

int
brim_store_insert_cold(struct brim_store *s, uint64_t hash, const void *key,
                       size_t key_len, const void *val, size_t val_len,
                       uint32_t flags, uint32_t exptime, uint64_t cas,
                       uint32_t now)
{
    struct brim_item *it;
    int               rc;

    if (key_len == 0 || key_len > STORE_KEY_MAX) {
        return BRIM_EINVAL;
    }
    if (store_find_live(s, hash, key, key_len, now) != NULL) {
        return BRIM_EEXISTS;
    }
    rc = store_item_alloc(s, hash, key, key_len, val_len, flags, exptime, NULL,
                          &it);
    if (rc != 0) {
        return rc;
    }
    it->cas = cas;
    if (val_len > 0) {
        memcpy((char *) brim_item_value(it), val, val_len);
    }
    store_link(s, it, hash);
    /* Move it from the head to the cold end: evicted first. */
    queue_unlink(s, it);
    it->prev = s->tail;
    it->next = NULL;
    if (s->tail != NULL) {
        s->tail->next = it;
    }
    s->tail = it;
    if (s->head == NULL) {
        s->head = it;
    }
    (void) store_make_room(s, 0, it);
    return 0;
}

void
brim_store_cursor_init(struct brim_store_cursor *cur, uint32_t partition)
{
    memset(cur, 0, sizeof(*cur));
    cur->partition = partition;
}

void
brim_store_cursor_release(struct brim_store *s, struct brim_store_cursor *cur)
{
    struct brim_store_cursor **pp;

    if (!cur->linked) {
        return;
    }
    for (pp = &s->cursors; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == cur) {
            *pp = cur->next;
            break;
        }
    }
    cur->linked = 0;
    cur->next = NULL;
}

/* How many buckets ahead brim_store_scan() prefetches. */
#define SCAN_PREFETCH 4

int
brim_store_scan(struct brim_store *s, struct brim_store_cursor *cur,
                uint32_t max_buckets, brim_store_scan_cb cb, void *arg)
{
    struct store_part      *part = &s->parts[cur->partition];
    const struct brim_item *it, *next;
    uint32_t                done = 0, b;
    int                     verdict = BRIM_SCAN_NEXT;

    BRIM_ASSERT(cur->partition < s->cfg.npartitions);
    brim_store_cursor_release(s, cur);
    if (part->dropping) {
        return 1; /* dropped: nothing to visit */
    }
    for (b = cur->bucket + 1;
         b < cur->bucket + SCAN_PREFETCH && b < part->nbuckets; b++)
    {
        if (part->buckets[b] != NULL) {
            __builtin_prefetch(part->buckets[b]); /* the loop's first ones */
        }
    }
    while (cur->bucket < part->nbuckets && done < max_buckets) {
        it = cur->mark != NULL ? cur->mark : part->buckets[cur->bucket];
        cur->mark = NULL;
        /* A later bucket's first item is a cache miss (and on a large
         * store a TLB miss) of its own: start it now, SCAN_PREFETCH
         * buckets ahead, while this bucket's items are visited; each
         * item's successor in the chain likewise. */
        if (cur->bucket + SCAN_PREFETCH < part->nbuckets
            && part->buckets[cur->bucket + SCAN_PREFETCH] != NULL)
        {
            __builtin_prefetch(part->buckets[cur->bucket + SCAN_PREFETCH]);
        }
        for (; it != NULL; it = next) {
            next = it->hnext;
            if (next != NULL) {
                __builtin_prefetch(next);
            }
            verdict = cb(it, arg);
            if (verdict == BRIM_SCAN_STOP_BEFORE) {
                cur->mark = it;
                break;
            }
            if (verdict == BRIM_SCAN_STOP && next != NULL) {
                cur->mark = next;
                break;
            }
            if (verdict == BRIM_SCAN_STOP) {
                break;
            }
        }
        if (cur->mark != NULL) {
            /* Stopped inside the chain: removals must move the mark. */
            cur->next = s->cursors;
            s->cursors = cur;
            cur->linked = 1;
            return 0;
        }
        cur->bucket++;
        done++;
        if (verdict == BRIM_SCAN_STOP) {
            break;
        }
    }
    return cur->bucket >= part->nbuckets;
}

size_t
brim_store_data_bytes(const struct brim_store *s)
{
    return (size_t) (s->stats.item_bytes + s->stats.table_bytes) + sizeof(*s);
}

void
brim_store_get_stats(const struct brim_store *s, struct brim_store_stats *out)
{
    *out = s->stats;
}

size_t
brim_store_max_chain(const struct brim_store *s, uint32_t partition)
{
    const struct store_part *part = &s->parts[partition];
    const struct brim_item  *it;
    size_t                   best = 0, n;
    uint32_t                 b;

    for (b = 0; b < part->nbuckets; b++) {
        n = 0;
        for (it = part->buckets[b]; it != NULL; it = it->hnext) {
            n++;
        }
        best = BRIM_MAX(best, n);
    }
    return best;
}

void
brim_store_free(struct brim_store *s)
{
    if (s == NULL) {
        return;
    }
    brim_store_flush(s);
    brim_free(s->parts);
    brim_free(s);
}
