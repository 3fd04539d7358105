/*
 * client/brimctl/import.c - brimctl import and verify. Import stores the
 * records of records.c with brim_mset() in batches (one round trip per
 * node per batch; libbrim follows MOVED and RETRY); verify reads every
 * distinct key back with brim_mget() and compares byte for byte, or with
 * --loop reads random keys at a bounded rate until a deadline or a signal
 * (a reader running beside a membership change). A key that repeats is
 * counted, and its last record is the one that counts: import never puts
 * two writes of one key in one batch, so the later one lands last.
 */
#include "client/brimctl/ctl.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <brim.h>

#include "client/brimctl/records.h"
#include "common/hash.h"
#include "common/rng.h"

/* One brim_mset() call takes at most this many records and bytes. */
#define IMPORT_BATCH_ITEMS 1024
#define IMPORT_BATCH_BYTES (4u << 20)

/* One brim_mget() of verify asks this many keys at most, and values of
 * about this many bytes in all (the expected ones). */
#define VERIFY_BATCH_KEYS 256
#define VERIFY_BATCH_BYTES (4u << 20)

/* verify --loop: keys per brim_mget() at most, and the pause when no
 * read is due, seconds. */
#define VERIFY_LOOP_BATCH 64
#define VERIFY_LOOP_TICK_S 0.01

/* Bad keys listed on stderr by verify. */
#define VERIFY_SHOW_BAD 10

/* Bytes of an arena block (a larger copy gets a block of its own). */
#define IMPORT_BLOCK_BYTES (16u << 20)

/* A block of the arena that holds the keys (and verify's values). */
struct imp_block {
    struct imp_block *next;   /* the block filled before this */
    size_t            used;   /* bytes of DATA used */
    size_t            cap;    /* bytes of DATA */
    char              data[]; /* the copies */
};

/* One distinct key of the input. */
struct imp_entry {
    const char *key;     /* PREFIX and key field (arena) */
    size_t      key_len; /* bytes */
    const char *val;     /* verify: last record's value (arena) */
    size_t      val_len; /* bytes */
    uint64_t    line;    /* last record's first line */
    uint64_t    batch;   /* import: the batch that sent it last */
    uint64_t    hash;    /* of KEY */
};

/* The distinct keys, in the order first seen, and a hash index on them. */
struct imp_set {
    struct imp_entry *entries; /* N entries, room for CAP */
    size_t            n;       /* distinct keys */
    size_t            cap;     /* room in ENTRIES */
    uint32_t         *slots;   /* entry index + 1; 0: empty */
    size_t            nslots;  /* a power of two, > 2 N */
    struct imp_block *blocks;  /* the arena, newest first */
};

/* What verify found for one key. */
enum ver_outcome {
    VER_OK = 0,
    VER_MISSING,   /* NOTFOUND */
    VER_DIFFERENT, /* the bytes differ */
    VER_ERROR,     /* the read failed */
    VER_UNCHECKED  /* the key is over the node's limit */
};

/* A key verify lists on stderr. */
struct ver_bad {
    const struct imp_entry *e;       /* the key and its record */
    int                     outcome; /* enum ver_outcome */
    int                     status;  /* VER_ERROR: the read's status */
    size_t                  got_len; /* VER_DIFFERENT: the node's bytes */
};

/* One run of import or verify. */
struct imp_run {
    struct brim_ctl         *ctl;        /* the command line, the client */
    const char              *cmd;        /* "import" or "verify" */
    const char              *skip_word;  /* "skipped" or "not checked" */
    struct brim_ctl_reader   rd;         /* the input */
    struct brim_ctl_progress prog;       /* on stderr */
    struct imp_set           set;        /* the distinct keys */
    const char              *prefix;     /* --prefix, or the default */
    size_t                   prefix_len; /* its bytes */
    char                    *key;        /* scratch: PREFIX and a key field */
    size_t                   key_cap;    /* bytes of KEY */
    size_t                   value_max;  /* the node's value limit */
    uint64_t                 records;    /* read, skipped ones included */
    uint64_t                 repeated;   /* records whose key came before */
    uint64_t                 skipped;    /* records not stored / checked */
    /* import: the batch being filled */
    struct brim_item *items;        /* IMPORT_BATCH_ITEMS */
    uint64_t         *lines;        /* each item's first line */
    char             *data;         /* the items' keys and values */
    size_t            used;         /* bytes of DATA used */
    size_t            nitems;       /* items in the batch */
    uint64_t          batch;        /* its number, from 1 */
    uint64_t          stored;       /* records stored */
    uint64_t          stored_bytes; /* their values' bytes */
    /* verify: the counts, and the first bad keys */
    uint64_t       reads;                    /* keys read */
    uint64_t       count[VER_UNCHECKED + 1]; /* by outcome */
    uint64_t       got_bytes;                /* value bytes read back */
    struct ver_bad bad[VERIFY_SHOW_BAD];     /* the first ones */
    size_t         nbad;                     /* of BAD */
};

/* ---- the key set ---- */

/* A copy of P (N bytes) in S's arena; NULL when out of memory. */
static const char *
set_copy(struct imp_set *s, const void *p, size_t n)
{
    struct imp_block *b;
    size_t            cap;

    b = s->blocks;
    if (b == NULL || b->cap - b->used < n) {
        cap = n > IMPORT_BLOCK_BYTES ? n : IMPORT_BLOCK_BYTES;
        b = malloc(sizeof(*b) + cap);
        if (b == NULL) {
            return NULL;
        }
        b->next = s->blocks;
        b->used = 0;
        b->cap = cap;
        s->blocks = b;
    }
    if (n > 0) {
        memcpy(b->data + b->used, p, n);
    }
    b->used += n;
    return b->data + b->used - n;
}

/* Double S's index (or make the first one); 0 or -1. */
static int
set_grow(struct imp_set *s)
{
    uint32_t *slots;
    size_t    nslots, i, j;

    nslots = s->nslots == 0 ? 1024 : s->nslots * 2;
    slots = calloc(nslots, sizeof(*slots));
    if (slots == NULL) {
        return -1;
    }
    for (i = 0; i < s->n; i++) {
        j = s->entries[i].hash & (nslots - 1);
        while (slots[j] != 0) {
            j = (j + 1) & (nslots - 1); /* linear probing */
        }
        slots[j] = (uint32_t) (i + 1);
    }
    free(s->slots);
    s->slots = slots;
    s->nslots = nslots;
    return 0;
}

/*
 * The entry of KEY (LEN bytes, copied when new) in S, added when absent;
 * *ADDED says which. NULL when out of memory (or past 2^31 keys).
 */
static struct imp_entry *
set_add(struct imp_set *s, const char *key, size_t len, int *added)
{
    struct imp_entry *e;
    uint64_t          h;
    size_t            j;

    h = brim_hash_key(0, key, len);
    for (j = s->nslots > 0 ? h & (s->nslots - 1) : 0;
         s->nslots > 0 && s->slots[j] != 0; j = (j + 1) & (s->nslots - 1))
    {
        e = &s->entries[s->slots[j] - 1];
        if (e->hash == h && e->key_len == len && memcmp(e->key, key, len) == 0)
        {
            *added = 0;
            return e;
        }
    }
    if ((s->n + 1) * 2 > s->nslots) {
        if (s->n >= INT32_MAX || set_grow(s) != 0) {
            return NULL;
        }
        for (j = h & (s->nslots - 1); s->slots[j] != 0;
             j = (j + 1) & (s->nslots - 1)) {
        }
    }
    if (s->n == s->cap) {
        e = realloc(s->entries, (s->cap == 0 ? 1024 : s->cap * 2) * sizeof(*e));
        if (e == NULL) {
            return NULL;
        }
        s->entries = e;
        s->cap = s->cap == 0 ? 1024 : s->cap * 2;
    }
    e = &s->entries[s->n];
    memset(e, 0, sizeof(*e));
    e->key = set_copy(s, key, len);
    if (e->key == NULL) {
        return NULL;
    }
    e->key_len = len;
    e->hash = h;
    s->slots[j] = (uint32_t) ++s->n;
    *added = 1;
    return e;
}

static void
set_free(struct imp_set *s)
{
    struct imp_block *b, *next;

    for (b = s->blocks; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    free(s->entries);
    free(s->slots);
    memset(s, 0, sizeof(*s));
}

/* ---- reading the input (both commands) ---- */

/* A message about the record at LINE on stderr, the bar taken off first. */
static void imp_say(struct imp_run *run, uint64_t line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
imp_say(struct imp_run *run, uint64_t line, const char *fmt, ...)
{
    va_list ap;

    brim_ctl_progress_clear(&run->prog);
    fprintf(stderr, "brimctl: %s: %s:%" PRIu64 ": ", run->cmd, run->rd.name,
            line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* Input bytes used so far (read ahead ones excluded). */
static uint64_t
imp_consumed(const struct imp_run *run)
{
    return run->rd.bytes_read - (run->rd.len - run->rd.off);
}

/*
 * Check the options of import/verify, open the input and prepare RUN.
 * Returns 0 or an exit status after a message.
 */
static int
imp_open(struct imp_run *run, struct brim_ctl *ctl, const char *cmd)
{
    char err[BRIM_ERRBUF_LEN];

    memset(run, 0, sizeof(*run));
    run->ctl = ctl;
    run->cmd = cmd;
    run->skip_word = strcmp(cmd, "import") == 0 ? "skipped" : "not checked";
    if (ctl->format == BRIM_CTL_FORMAT_JSONL && ctl->key_field != NULL) {
        fprintf(stderr,
                "brimctl: %s: --key-field is for --format deb822 "
                "(jsonl keys are the \"key\" fields)\n",
                cmd);
        return BRIM_CTL_EXIT_USAGE;
    }
    run->prefix = ctl->prefix;
    if (run->prefix == NULL) {
        run->prefix = ctl->format == BRIM_CTL_FORMAT_DEB822
            ? BRIM_CTL_DEFAULT_PREFIX
            : "";
    }
    run->prefix_len = strlen(run->prefix);
    if (run->prefix_len >= BRIM_KEY_MAX) {
        fprintf(stderr,
                "brimctl: %s: --prefix is %zu bytes: no room for a "
                "key field within the key limit of %d\n",
                cmd, run->prefix_len, BRIM_KEY_MAX);
        return BRIM_CTL_EXIT_USAGE;
    }
    run->value_max = brim_value_max(ctl->client);
    if (brim_ctl_reader_open(&run->rd, ctl->argv[0], ctl->format,
                             ctl->key_field != NULL
                                 ? ctl->key_field
                                 : BRIM_CTL_DEFAULT_KEY_FIELD,
                             err)
        != 0)
    {
        fprintf(stderr, "brimctl: %s: %s\n", cmd, err);
        return BRIM_CTL_EXIT_USAGE;
    }
    brim_ctl_progress_init(&run->prog, ctl->progress, 0);
    return 0;
}

static void
imp_close(struct imp_run *run)
{
    brim_ctl_reader_close(&run->rd);
    set_free(&run->set);
    free(run->key);
    free(run->items);
    free(run->lines);
    free(run->data);
}

/*
 * The next record that can be stored: records without a key and values
 * over the node's limit are reported and counted as skipped. *KEY_LEN
 * bytes of RUN->key are its key (PREFIX and field). Returns 1, 0 at the
 * end, or an exit status (negated) after a message.
 */
static int
imp_read(struct imp_run *run, struct brim_ctl_rec *rec, size_t *key_len)
{
    char   why[BRIM_ERRBUF_LEN];
    char  *p;
    size_t need;
    int    rc;

    for (;;) {
        rc = brim_ctl_reader_next(&run->rd, rec, why);
        if (rc == 0) {
            return 0;
        }
        if (rc < 0) {
            brim_ctl_progress_clear(&run->prog);
            fprintf(stderr, "brimctl: %s: %s: %s\n", run->cmd, run->rd.name,
                    why);
            return -BRIM_CTL_EXIT_NO;
        }
        run->records++;
        if (rc == BRIM_CTL_READ_SKIP) {
            imp_say(run, rec->line, "%s; %s", why, run->skip_word);
            run->skipped++;
            continue;
        }
        if (rec->val_len > run->value_max) {
            imp_say(run, rec->line,
                    "value is %zu bytes, over the node's "
                    "limit of %zu; %s",
                    rec->val_len, run->value_max, run->skip_word);
            run->skipped++;
            continue;
        }
        need = run->prefix_len + rec->key_len;
        if (need > run->key_cap) {
            p = realloc(run->key, need);
            if (p == NULL) {
                fprintf(stderr, "brimctl: %s: out of memory\n", run->cmd);
                return -BRIM_CTL_EXIT_NO;
            }
            run->key = p;
            run->key_cap = need;
        }
        memcpy(run->key, run->prefix, run->prefix_len);
        memcpy(run->key + run->prefix_len, rec->key, rec->key_len);
        *key_len = need;
        return 1;
    }
}

/* The entry of RUN->key (KEY_LEN bytes), counting a repeat; NULL after a
 * message when out of memory. */
static struct imp_entry *
imp_entry(struct imp_run *run, size_t key_len)
{
    struct imp_entry *e;
    int               added;

    e = set_add(&run->set, run->key, key_len, &added);
    if (e == NULL) {
        brim_ctl_progress_clear(&run->prog);
        fprintf(stderr, "brimctl: %s: out of memory for %zu keys\n", run->cmd,
                run->set.n);
        return NULL;
    }
    run->repeated += added ? 0 : 1;
    return e;
}

/* A status after which no other call can do better: stop the command. */
static int
imp_fatal(int status)
{
    return brim_ctl_conn_error(status) || status == BRIM_ENONODES;
}

/* "N records/s, X MB/s" for COUNT and BYTES over SECONDS, into BUF. */
static const char *
imp_rates(char *buf, size_t len, uint64_t count, const char *unit,
          uint64_t bytes, double seconds)
{
    seconds = seconds > 1e-6 ? seconds : 1e-6;
    snprintf(buf, len, "%.0f %s/s, %.1f MB/s", (double) count / seconds, unit,
             (double) bytes / 1e6 / seconds);
    return buf;
}

/* ---- import ---- */

/* Store the batch; report the items refused. Returns 0 or the exit
 * status of a failure that ends the import (after a message). */
static int
import_flush(struct imp_run *run)
{
    struct brim_item *it;
    const char       *k;
    char              shown[BRIM_CTL_KEY_SHOWN + 4], what[128];
    size_t            i;
    int               fatal;

    if (run->nitems == 0) {
        return 0;
    }
    (void) brim_mset(run->ctl->client, run->items, run->nitems);
    fatal = 0;
    for (i = 0; i < run->nitems; i++) {
        it = &run->items[i];
        if (it->status == 0) {
            run->stored++;
            run->stored_bytes += it->val_len;
        } else if (imp_fatal(it->status)) {
            fatal = fatal != 0 ? fatal : (int) i + 1;
        } else {
            /* The key is not empty and the value not NULL: INVAL can
             * only be the key's length. */
            run->skipped++;
            k = brim_ctl_show_key((const char *) it->key, it->key_len, shown);
            if (it->status == BRIM_EINVAL) {
                imp_say(run, run->lines[i],
                        "key %s is %zu bytes, over the "
                        "node's key limit; skipped",
                        k, it->key_len);
            } else {
                imp_say(run, run->lines[i],
                        "key %s (value %zu bytes): %s; "
                        "skipped",
                        k, it->val_len, brim_strerror(it->status));
            }
        }
    }
    run->nitems = 0;
    run->used = 0;
    run->batch++;
    if (fatal != 0) {
        brim_ctl_progress_clear(&run->prog);
        snprintf(what, sizeof(what), "import: %.64s:%" PRIu64, run->rd.name,
                 run->lines[fatal - 1]);
        return brim_ctl_fail(run->ctl, what, run->items[fatal - 1].status);
    }
    return 0;
}

/* Add the record REC under RUN->key (KEY_LEN bytes) to the batch, which
 * has room (import_room()). */
static void
import_add(struct imp_run *run, const struct brim_ctl_rec *rec, size_t key_len)
{
    struct brim_item *it;
    char             *k;

    k = run->data + run->used;
    memcpy(k, run->key, key_len);
    if (rec->val_len > 0) {
        memcpy(k + key_len, rec->val, rec->val_len);
    }
    run->used += key_len + rec->val_len;
    it = &run->items[run->nitems];
    memset(it, 0, sizeof(*it));
    it->key = k;
    it->key_len = key_len;
    it->val = k + key_len;
    it->val_len = rec->val_len;
    it->ttl_s = run->ctl->ttl_s;
    it->flags = run->ctl->flags;
    run->lines[run->nitems++] = rec->line;
}

/* The progress of import; FINAL ends the bar. */
static void
import_progress(struct imp_run *run, int final)
{
    char   rates[64];
    double frac;

    if (!final && !brim_ctl_progress_due(&run->prog)) {
        return;
    }
    frac = run->rd.size > 0 ? (double) imp_consumed(run) / run->rd.size : -1;
    brim_ctl_progress_draw(
        &run->prog, frac, final, "%" PRIu64 " records, %.1f MB read, %s",
        run->records, imp_consumed(run) / 1e6,
        imp_rates(rates, sizeof(rates), run->records, "records",
                  imp_consumed(run), brim_ctl_progress_elapsed(&run->prog)));
}

/* Allocate the batch: its buffer fits IMPORT_BATCH_BYTES and one record
 * of the largest size accepted more. 0 or -1. */
static int
import_alloc(struct imp_run *run)
{
    run->items = calloc(IMPORT_BATCH_ITEMS, sizeof(*run->items));
    run->lines = calloc(IMPORT_BATCH_ITEMS, sizeof(*run->lines));
    run->data = malloc(IMPORT_BATCH_BYTES + run->value_max + BRIM_KEY_MAX);
    run->batch = 1;
    return run->items != NULL && run->lines != NULL && run->data != NULL ? 0
                                                                         : -1;
}

int
brim_ctl_import(struct brim_ctl *ctl)
{
    struct brim_ctl_rec rec;
    struct imp_entry   *e;
    struct imp_run      run;
    char                rates[64];
    size_t              key_len;
    double              secs;
    int                 rc, st;

    rc = imp_open(&run, ctl, "import");
    if (rc != 0) {
        imp_close(&run);
        return rc;
    }
    st = 0;
    rc = 0;
    if (import_alloc(&run) != 0) {
        fprintf(stderr, "brimctl: import: out of memory for a batch\n");
        st = BRIM_CTL_EXIT_NO;
    }
    while (st == 0 && (rc = imp_read(&run, &rec, &key_len)) == 1) {
        /* A repeat inside the batch goes out after it: the batch's SETs
         * to one key could land in any order after a redirect. */
        e = imp_entry(&run, key_len);
        if (e == NULL) {
            st = BRIM_CTL_EXIT_NO;
            break;
        }
        if (run.nitems > 0
            && (e->batch == run.batch || run.nitems == IMPORT_BATCH_ITEMS
                || run.used + key_len + rec.val_len > IMPORT_BATCH_BYTES))
        {
            st = import_flush(&run);
            if (st != 0) {
                break;
            }
        }
        e->batch = run.batch;
        import_add(&run, &rec, key_len);
        import_progress(&run, 0);
    }
    if (st == 0) {
        st = rc < 0 ? -rc : 0;
        rc = import_flush(&run);
        st = st != 0 ? st : rc;
    }
    import_progress(&run, 1);
    secs = brim_ctl_progress_elapsed(&run.prog);
    printf("imported %" PRIu64 " records (%" PRIu64 " bytes) in %.2f s: %s; "
           "repeated %" PRIu64 ", skipped %" PRIu64 "\n",
           run.stored, run.stored_bytes, secs,
           imp_rates(rates, sizeof(rates), run.stored, "records",
                     run.stored_bytes, secs),
           run.repeated, run.skipped);
    imp_close(&run);
    if (st != 0) {
        return st;
    }
    return run.skipped > 0 ? BRIM_CTL_EXIT_NO : BRIM_CTL_EXIT_OK;
}

/* ---- verify ---- */

/*
 * Judge the read R of entry E, count it, and remember it when bad. A
 * failure that ends the command returns its exit status (unless LOOP:
 * then it is one more error).
 */
static int
verify_judge(struct imp_run *run, const struct imp_entry *e,
             const struct brim_mget_result *r, int loop)
{
    struct ver_bad *b;
    int             out;

    run->reads++;
    if (r->status == 0) {
        run->got_bytes += r->val_len;
        out = r->val_len == e->val_len
                && (e->val_len == 0 || memcmp(r->val, e->val, e->val_len) == 0)
            ? VER_OK
            : VER_DIFFERENT;
    } else if (r->status == BRIM_ENOTFOUND) {
        out = VER_MISSING;
    } else if (r->status == BRIM_EINVAL && !loop) {
        out = VER_UNCHECKED;
    } else if (imp_fatal(r->status) && !loop) {
        char what[128];

        brim_ctl_progress_clear(&run->prog);
        snprintf(what, sizeof(what), "verify: %.64s:%" PRIu64, run->rd.name,
                 e->line);
        return brim_ctl_fail(run->ctl, what, r->status);
    } else {
        out = VER_ERROR;
    }
    run->count[out]++;
    if (out == VER_UNCHECKED) {
        char shown[BRIM_CTL_KEY_SHOWN + 4];

        imp_say(run, e->line,
                "key %s is %zu bytes, over the node's key "
                "limit; not checked",
                brim_ctl_show_key(e->key, e->key_len, shown), e->key_len);
    } else if (out != VER_OK && run->nbad < VERIFY_SHOW_BAD) {
        b = &run->bad[run->nbad++];
        b->e = e;
        b->outcome = out;
        b->status = r->status;
        b->got_len = r->val_len;
    }
    return 0;
}

/* List the first bad keys on stderr, and how many more there are. */
static void
verify_list_bad(const struct imp_run *run)
{
    const struct ver_bad *b;
    char                  shown[BRIM_CTL_KEY_SHOWN + 4];
    uint64_t              nbad;
    size_t                i;

    for (i = 0; i < run->nbad; i++) {
        b = &run->bad[i];
        fprintf(stderr, "brimctl: verify: %s %s (%s:%" PRIu64 ")",
                b->outcome == VER_MISSING         ? "missing"
                    : b->outcome == VER_DIFFERENT ? "different"
                                                  : "error",
                brim_ctl_show_key(b->e->key, b->e->key_len, shown),
                run->rd.name, b->e->line);
        if (b->outcome == VER_DIFFERENT) {
            fprintf(stderr, ": the node has %zu bytes, the record %zu",
                    b->got_len, b->e->val_len);
        } else if (b->outcome == VER_ERROR) {
            fprintf(stderr, ": %s", brim_strerror(b->status));
        }
        fputc('\n', stderr);
    }
    nbad = run->count[VER_MISSING] + run->count[VER_DIFFERENT]
        + run->count[VER_ERROR];
    if (nbad > run->nbad) {
        fprintf(stderr,
                "brimctl: verify: ... and %" PRIu64 " more bad "
                "keys\n",
                nbad - run->nbad);
    }
}

/*
 * Read the N entries ENTS[] back in one brim_mget() and judge them. KEYS
 * and RES have room for N. Returns 0 or an exit status (not in LOOP).
 */
static int
verify_batch(struct imp_run *run, const struct imp_entry **ents, size_t n,
             struct brim_key *keys, struct brim_mget_result *res, int loop)
{
    size_t i;
    int    rc;

    for (i = 0; i < n; i++) {
        keys[i].key = ents[i]->key;
        keys[i].key_len = ents[i]->key_len;
    }
    (void) brim_mget(run->ctl->client, keys, n, res); /* per key */
    rc = 0;
    for (i = 0; i < n && rc == 0; i++) {
        rc = verify_judge(run, ents[i], &res[i], loop);
    }
    brim_mget_free(res, n);
    return rc;
}

/* The progress of verify's reading, then of its checking (FINAL: end). */
static void
verify_progress(struct imp_run *run, int checking, int final)
{
    char   rates[64];
    double frac, secs;

    if (!final && !brim_ctl_progress_due(&run->prog)) {
        return;
    }
    secs = brim_ctl_progress_elapsed(&run->prog);
    if (!checking) {
        frac =
            run->rd.size > 0 ? (double) imp_consumed(run) / run->rd.size : -1;
        brim_ctl_progress_draw(&run->prog, frac, final,
                               "reading: %" PRIu64 " records, %.1f MB",
                               run->records, imp_consumed(run) / 1e6);
        return;
    }
    frac = run->set.n > 0 ? (double) run->reads / run->set.n : 1;
    brim_ctl_progress_draw(&run->prog, frac, final, "%" PRIu64 "/%zu keys, %s",
                           run->reads, run->set.n,
                           imp_rates(rates, sizeof(rates), run->reads, "keys",
                                     run->got_bytes, secs));
}

/* Every distinct key once, in input order. Returns the exit status. */
static int
verify_all(struct imp_run *run, const struct imp_entry **ents,
           struct brim_key *keys, struct brim_mget_result *res)
{
    uint64_t checked, bad;
    size_t   i, n, bytes;
    int      rc;

    rc = 0;
    for (i = 0; i < run->set.n && rc == 0;) {
        n = 0;
        bytes = 0;
        while (
            i < run->set.n && n < VERIFY_BATCH_KEYS
            && (n == 0
                || bytes + run->set.entries[i].val_len <= VERIFY_BATCH_BYTES))
        {
            bytes += run->set.entries[i].val_len;
            ents[n++] = &run->set.entries[i++];
        }
        rc = verify_batch(run, ents, n, keys, res, 0);
        verify_progress(run, 1, 0);
    }
    verify_progress(run, 1, 1);
    if (rc != 0) {
        return rc;
    }
    checked = run->set.n - run->count[VER_UNCHECKED];
    bad = run->count[VER_MISSING] + run->count[VER_DIFFERENT]
        + run->count[VER_ERROR];
    if (bad == 0) {
        printf("verified %" PRIu64 "/%" PRIu64 "\n", checked, checked);
        return BRIM_CTL_EXIT_OK;
    }
    printf("verified %" PRIu64 "/%" PRIu64 ": %" PRIu64 " missing, %" PRIu64
           " different",
           run->count[VER_OK], checked, run->count[VER_MISSING],
           run->count[VER_DIFFERENT]);
    if (run->count[VER_ERROR] > 0) {
        printf(", %" PRIu64 " errors", run->count[VER_ERROR]);
    }
    printf("\n");
    fflush(stdout);
    verify_list_bad(run);
    return BRIM_CTL_EXIT_NO;
}

/*
 * --loop: random keys, at most RUN->ctl->rate a second (a token bucket
 * that holds a tenth of a second's worth, so a stall is not followed by a
 * burst), until --duration has passed or SIGINT/SIGTERM. Every failure is
 * counted, none stops the loop. Returns the exit status.
 */
static int
verify_loop(struct imp_run *run, const struct imp_entry **ents,
            struct brim_key *keys, struct brim_mget_result *res)
{
    struct brim_rng rng;
    double          rate, burst, tokens, last, now, end;
    size_t          i, n;

    rate = run->ctl->rate != 0 ? run->ctl->rate : BRIM_CTL_DEFAULT_RATE;
    burst = rate / 10 > VERIFY_LOOP_BATCH ? rate / 10 : VERIFY_LOOP_BATCH;
    brim_rng_seed(&rng, (uint64_t) time(NULL) ^ (uint64_t) getpid() << 32);
    brim_ctl_catch_signals();
    last = brim_ctl_now();
    end = run->ctl->duration_s > 0 ? last + run->ctl->duration_s : 0;
    tokens = 0;
    while (brim_ctl_stopped() == 0) {
        now = brim_ctl_now();
        if (end > 0 && now >= end) {
            break;
        }
        tokens += rate * (now - last);
        tokens = tokens < burst ? tokens : burst;
        last = now;
        n = tokens < VERIFY_LOOP_BATCH ? (size_t) tokens : VERIFY_LOOP_BATCH;
        for (i = 0; i < n; i++) {
            ents[i] = &run->set.entries[brim_rng_below(&rng, run->set.n)];
        }
        if (n > 0) {
            (void) verify_batch(run, ents, n, keys, res, 1);
            tokens -= (double) n;
        }
        if (brim_ctl_progress_due(&run->prog)) {
            brim_ctl_progress_draw(
                &run->prog,
                end > 0 ? 1 - (end - now) / run->ctl->duration_s : -1, 0,
                "%" PRIu64 " reads: %" PRIu64 " ok, %" PRIu64
                " missing, %" PRIu64 " different, %" PRIu64 " errors",
                run->reads, run->count[VER_OK], run->count[VER_MISSING],
                run->count[VER_DIFFERENT], run->count[VER_ERROR]);
        }
        if (tokens < VERIFY_LOOP_BATCH) {
            brim_ctl_sleep(end > 0 && end - now < VERIFY_LOOP_TICK_S
                               ? end - now
                               : VERIFY_LOOP_TICK_S);
        }
    }
    brim_ctl_progress_clear(&run->prog);
    printf("reads=%" PRIu64 " ok=%" PRIu64 " missing=%" PRIu64
           " different=%" PRIu64 " errors=%" PRIu64 "\n",
           run->reads, run->count[VER_OK], run->count[VER_MISSING],
           run->count[VER_DIFFERENT], run->count[VER_ERROR]);
    fflush(stdout);
    verify_list_bad(run);
    return run->reads == run->count[VER_OK] ? BRIM_CTL_EXIT_OK
                                            : BRIM_CTL_EXIT_NO;
}

/* Read the whole input into RUN->set: each key's last record. Returns 0
 * or an exit status. */
static int
verify_load(struct imp_run *run)
{
    struct brim_ctl_rec rec;
    struct imp_entry   *e;
    size_t              key_len;
    int                 rc;

    while ((rc = imp_read(run, &rec, &key_len)) == 1) {
        e = imp_entry(run, key_len);
        if (e == NULL) {
            return BRIM_CTL_EXIT_NO;
        }
        e->val = set_copy(&run->set, rec.val, rec.val_len);
        if (e->val == NULL) {
            fprintf(stderr, "brimctl: verify: out of memory for values\n");
            return BRIM_CTL_EXIT_NO;
        }
        e->val_len = rec.val_len;
        e->line = rec.line;
        verify_progress(run, 0, 0);
    }
    return rc < 0 ? -rc : 0;
}

int
brim_ctl_verify(struct brim_ctl *ctl)
{
    const struct imp_entry **ents;
    struct brim_mget_result *res;
    struct brim_key         *keys;
    struct imp_run           run;
    int                      rc;

    if (!ctl->loop && (ctl->duration_s > 0 || ctl->rate != 0)) {
        fprintf(stderr,
                "brimctl: verify: --duration and --rate are for "
                "--loop\n");
        return BRIM_CTL_EXIT_USAGE;
    }
    rc = imp_open(&run, ctl, "verify");
    ents = calloc(VERIFY_BATCH_KEYS, sizeof(*ents));
    keys = calloc(VERIFY_BATCH_KEYS, sizeof(*keys));
    res = calloc(VERIFY_BATCH_KEYS, sizeof(*res));
    if (rc == 0 && (ents == NULL || keys == NULL || res == NULL)) {
        fprintf(stderr, "brimctl: verify: out of memory\n");
        rc = BRIM_CTL_EXIT_NO;
    }
    if (rc == 0) {
        rc = verify_load(&run);
    }
    if (rc == 0 && ctl->loop && run.set.n == 0) {
        fprintf(stderr, "brimctl: verify: %s holds no key to read\n",
                run.rd.name);
        rc = BRIM_CTL_EXIT_NO;
    }
    if (rc == 0) {
        /* The reading's line stays; checking gets a new bar and clock. */
        verify_progress(&run, 0, 1);
        brim_ctl_progress_init(&run.prog, ctl->progress, 0);
        rc = ctl->loop ? verify_loop(&run, ents, keys, res)
                       : verify_all(&run, ents, keys, res);
    }
    free(ents);
    free(keys);
    free(res);
    imp_close(&run);
    return rc;
}
