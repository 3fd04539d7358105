/*
 * server/node/migrate_state.c - the bottom of migration (migrate_int.h):
 * the state a node keeps per partition coming in (migration id, source,
 * in flight or complete), the tombstones that keep a stream from undoing
 * writes and deletes made here meanwhile, and the insert of a streamed
 * entry. Calls nothing of migration above it.
 */
#include "server/node/migrate_int.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/parse.h"
#include "server/log.h"

int
mig_owns(const struct brim_node *node, uint32_t partition)
{
    return node->topo.self >= 0
        && node->topo.committed.map.owner[partition]
        == (uint16_t) node->topo.self;
}

/* BRIM_TEST_ALLOC_FAIL="tomb:N,spare:N,insert:N,send:N" (migrate_int.h). */
static void
mig_fail_parse(struct brim_migrate *m, const char *env)
{
    static const char *const names[MIG_FAIL_SITES] = {"tomb", "spare", "insert",
                                                      "send"};
    char                     item[32], *colon;
    const char              *p = env;
    size_t                   n;
    uint32_t                 i, v;

    while (p != NULL && *p != '\0') {
        n = strcspn(p, ",");
        if (n < sizeof(item)) {
            memcpy(item, p, n);
            item[n] = '\0';
            colon = strchr(item, ':');
            for (i = 0; colon != NULL && i < MIG_FAIL_SITES; i++) {
                *colon = '\0';
                if (strcmp(item, names[i]) == 0
                    && brim_parse_u32(colon + 1, 1, UINT32_MAX, &v) == 0)
                {
                    m->fail_every[i] = v;
                    brim_log_warn("migrate: BRIM_TEST_ALLOC_FAIL: every %u"
                                  "th %s allocation fails (test only)",
                                  v, names[i]);
                }
                *colon = ':';
            }
        }
        p += n;
        p += *p == ',';
    }
}

void
mig_fail_arm(struct brim_migrate *m, enum mig_fail_site site)
{
    if (m->fail_every[site] != 0
        && ++m->fail_count[site] % m->fail_every[site] == 0)
    {
        brim_alloc_fail_after(1, 0);
    }
}

void
mig_fail_disarm(struct brim_migrate *m, enum mig_fail_site site)
{
    if (m->fail_every[site] != 0) {
        brim_alloc_fail_after(0, 0);
    }
}

/* ---- the turn (MIG_TURN_NS) ---- */

/* After the loop's poll: the turn ends. */
static void
turn_check_cb(uv_check_t *h)
{
    struct brim_migrate *m = h->data;

    m->turn_spent_ns = 0;
}

/* At the next turn: run what waits for it, each once. What runs may
 * wait again (a later turn). */
static void
turn_idle_cb(uv_idle_t *h)
{
    struct brim_migrate *m = h->data;
    mig_turn_fn          fn;
    uint32_t             who;

    uv_idle_stop(h);
    m->turn_idle_on = 0;
    if (m->node->stopping) {
        return;
    }
    for (who = 0; who < MIG_TURN_WHO; who++) {
        fn = m->turn_fn[who];
        m->turn_fn[who] = NULL;
        if (fn != NULL) {
            fn(m);
        }
    }
}

int
mig_turn_open(const struct brim_migrate *m)
{
    return m->turn_spent_ns < MIG_TURN_NS;
}

void
mig_turn_spend(struct brim_migrate *m, uint64_t ns)
{
    m->turn_spent_ns += ns;
}

void
mig_turn_defer(struct brim_migrate *m, enum mig_turn_who who, mig_turn_fn fn)
{
    if (m->node->stopping) {
        return;
    }
    m->turn_fn[who] = fn;
    m->stats.turns_deferred++;
    if (!m->turn_idle_on) {
        uv_idle_start(&m->turn_idle, turn_idle_cb);
        m->turn_idle_on = 1;
    }
}

struct brim_migrate *
mig_get(struct brim_node *node)
{
    struct brim_migrate *m = node->mig;
    const char          *env;
    uint32_t             P = node->cfg.partitions;

    if (m != NULL) {
        return m;
    }
    m = brim_calloc(1, sizeof(*m));
    if (m == NULL) {
        return NULL;
    }
    m->node = node;
    m->in_epoch = brim_calloc(P, sizeof(*m->in_epoch));
    m->in_state = brim_calloc(P, 1);
    m->in_src = brim_calloc(P, sizeof(*m->in_src));
    m->in_touch = brim_calloc(P, sizeof(*m->in_touch));
    m->in_probing = brim_calloc(P, 1);
    m->tomb_head = brim_calloc(P, sizeof(*m->tomb_head));
    if (m->in_epoch == NULL || m->in_state == NULL || m->tomb_head == NULL
        || m->in_src == NULL || m->in_touch == NULL || m->in_probing == NULL)
    {
        brim_free(m->in_src);
        brim_free(m->in_epoch);
        brim_free(m->in_state);
        brim_free(m->in_touch);
        brim_free(m->in_probing);
        brim_free(m->tomb_head);
        brim_free(m);
        return NULL;
    }
    brim_buf_init(&m->scratch);
    uv_timer_init(node->loop, &m->pump);
    uv_unref((uv_handle_t *) &m->pump);
    m->pump.data = m;
    uv_timer_init(node->loop, &m->probe);
    uv_unref((uv_handle_t *) &m->probe);
    m->probe.data = m;
    uv_timer_init(node->loop, &m->in_resume);
    uv_unref((uv_handle_t *) &m->in_resume);
    m->in_resume.data = m;
    uv_idle_init(node->loop, &m->turn_idle);
    uv_unref((uv_handle_t *) &m->turn_idle);
    m->turn_idle.data = m;
    uv_check_init(node->loop, &m->turn_check);
    uv_unref((uv_handle_t *) &m->turn_check);
    m->turn_check.data = m;
    uv_check_start(&m->turn_check, turn_check_cb);
    env = getenv("BRIM_TEST_STREAM_DELAY_MS");
    if (env != NULL && *env != '\0'
        && brim_parse_u32(env, 0, 3600000, &m->stats.delay_ms) == 0)
    {
        brim_log_warn("migrate: BRIM_TEST_STREAM_DELAY_MS=%u (test only): "
                      "streaming is slowed per batch",
                      m->stats.delay_ms);
    }
    m->slice_max_ns = MIG_SLICE_NS;
    m->in_budget.slice_ns = m->out_budget.slice_ns = MIG_SLICE_NS;
    m->in_budget.window_ns = m->out_budget.window_ns = MIG_WINDOW_NS;
    m->lag_ns = MIG_LAG_NS;
    m->stats.pace_slice_us = MIG_SLICE_NS / 1000;
    m->sched_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    mig_fail_parse(m, getenv("BRIM_TEST_ALLOC_FAIL"));
    node->mig = m;
    return m;
}

/* The loop thread's run-queue wait so far, ns (schedstat's second
 * field), or -1 when it cannot be read. */
static int64_t
pace_wait_ns(int fd)
{
    char               buf[96];
    ssize_t            n;
    unsigned long long run, wait;

    if (fd < 0) {
        return -1;
    }
    n = pread(fd, buf, sizeof(buf) - 1, 0);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    if (sscanf(buf, "%llu %llu", &run, &wait) != 2) {
        return -1;
    }
    return (int64_t) wait;
}

void
mig_pace_tick(struct brim_migrate *m, uint64_t now_ns)
{
    uint64_t slice = m->out_budget.slice_ns, tick = now_ns - m->pace_at_ns;
    int64_t  wait;

    if (tick < MIG_PACE_TICK_NS || m->sched_fd < 0) {
        return;
    }
    wait = pace_wait_ns(m->sched_fd);
    if (wait < 0) {
        return;
    }
    if (m->pace_at_ns == 0 || tick >= 4 * MIG_PACE_TICK_NS) {
        /* The first work after a quiet spell: what the machine could
         * spare then says nothing of now. Start small and double each
         * tick until the first wait (TCP's slow start). */
        slice = MIG_SLICE_MIN_NS;
        m->pace_slow_start = 1;
    } else if ((double) ((uint64_t) wait - m->pace_wait_ns)
               > MIG_PACE_WAIT_HIGH * (double) tick)
    {
        slice = BRIM_MAX(slice / 2, MIG_SLICE_MIN_NS);
        m->pace_slow_start = 0;
        m->stats.pace_backoffs++;
    } else if (m->pace_slow_start) {
        slice = BRIM_MIN(slice * 2, m->slice_max_ns);
    } else {
        slice = BRIM_MIN(slice + MIG_SLICE_STEP_NS, m->slice_max_ns);
    }
    m->pace_at_ns = now_ns;
    m->pace_wait_ns = (uint64_t) wait;
    m->in_budget.slice_ns = m->out_budget.slice_ns = slice;
    m->stats.pace_slice_us = slice / 1000;
}

/* Loop time in the 100 ms units of in_touch. */
uint32_t
mig_touch_now(const struct brim_migrate *m)
{
    return (uint32_t) (uv_now(m->node->loop) / 100);
}

void
mig_free(struct brim_migrate *m)
{
    uint32_t p;

    if (m == NULL) {
        return;
    }
    for (p = 0; p < m->node->cfg.partitions; p++) {
        mig_tomb_clear(m, p);
    }
    while (m->njobs > 0) {
        brim_store_cursor_release(m->node->store,
                                  &m->jobs[m->njobs - 1]->cursor);
        brim_free(m->jobs[--m->njobs]);
    }
    if (m->sched_fd >= 0) {
        close(m->sched_fd);
    }
    brim_free(m->jobs);
    brim_free(m->in_paused);
    brim_free(m->in_turn);
    brim_free(m->cpend);
    brim_free(m->tbuckets);
    brim_free(m->spare_tomb);
    brim_free(m->in_epoch);
    brim_free(m->in_state);
    brim_free(m->in_reason);
    brim_free(m->in_src);
    brim_free(m->in_touch);
    brim_free(m->in_probing);
    brim_free(m->tomb_head);
    brim_buf_destroy(&m->scratch);
    brim_free(m);
}

/* ---- partitions coming in ---- */

void
mig_in_start(struct brim_migrate *m, uint32_t p, uint64_t epoch, int32_t src)
{
    if (m->stats.partitions_in_flight == 0) {
        /* A migration into this node starts: time it (mig_in_finish). */
        m->in_since_ms = uv_now(m->node->loop);
        m->in_since_bytes = m->stats.bytes_in;
        m->in_since_keys = m->stats.keys_in;
    }
    m->in_src[p] = src >= 0 ? (uint16_t) src : MIG_NO_SRC;
    if (m->in_state[p] == IN_FLIGHT) {
        mig_tomb_clear(m, p);
        m->stats.partitions_in_flight--;
    }
    m->in_epoch[p] = epoch;
    m->in_state[p] = IN_FLIGHT;
    m->in_touch[p] = mig_touch_now(m);
    m->stats.partitions_in_flight++;
}

void
mig_in_finish(struct brim_migrate *m, uint32_t p)
{
    uint64_t ms, bytes;

    if (m->in_state[p] != IN_FLIGHT) {
        return;
    }
    mig_tomb_clear(m, p);
    m->stats.partitions_in_flight--;
    m->in_state[p] = IN_DONE;
    if (m->stats.partitions_in_flight == 0) {
        ms = uv_now(m->node->loop) - m->in_since_ms;
        bytes = m->stats.bytes_in - m->in_since_bytes;
        brim_log_info("migrate: every incoming partition is complete: %" PRIu64
                      " keys, %" PRIu64 " bytes in %" PRIu64 " ms "
                      "(%.1f MB/s)",
                      m->stats.keys_in - m->in_since_keys, bytes, ms,
                      ms > 0 ? bytes / 1e3 / (double) ms : 0.0);
        if (m->node->migration_idle != NULL) {
            m->node->migration_idle(m->node);
        }
    }
}

void
mig_in_source_gone(struct brim_migrate *m, uint32_t p, uint64_t epoch,
                   const char *why)
{
    if (m->in_state[p] == IN_FLIGHT && m->in_epoch[p] == epoch) {
        brim_log_debug("migrate: partition %u: %s; complete with what is "
                       "here",
                       p, why);
        mig_in_finish(m, p);
        m->stats.partitions_in_done++;
        m->stats.partitions_in_unfinished++;
    }
}

int
mig_insert(struct brim_migrate *m, uint32_t p, uint64_t h,
           const struct brim_wire_entry *e, uint32_t now)
{
    int rc;

    if (mig_tomb_slot(m, h, e->key, e->key_len) != NULL) {
        m->stats.entries_skipped++;
        return 1;
    }
    mig_fail_arm(m, MIG_FAIL_INSERT);
    rc = brim_store_insert_cold(
        m->node->store, h, e->key, e->key_len, e->value, e->value_len, e->flags,
        e->ttl_s == 0 ? 0 : now + e->ttl_s, e->cas, now);
    mig_fail_disarm(m, MIG_FAIL_INSERT);
    if (rc == 0) {
        m->stats.keys_in++;
        m->stats.bytes_in += e->key_len + e->value_len;
        /* By why the partition moved, so that the two sum to keys_in
         * (streamed, forwarded and pulled keys alike). */
        if (m->in_reason != NULL && m->in_reason[p] == BRIM_MOVE_CAP) {
            m->stats.keys_in_cap++;
            m->stats.bytes_in_cap += e->key_len + e->value_len;
        } else {
            m->stats.keys_in_arc++;
            m->stats.bytes_in_arc += e->key_len + e->value_len;
        }
        return 0;
    }
    if (rc == BRIM_EEXISTS) {
        m->stats.entries_skipped++; /* written here since: it wins */
        return 1;
    }
    if (rc == BRIM_ETOOBIG || rc == BRIM_EINVAL) {
        /* Beyond this node's own limits: it could never hold it. */
        m->stats.entries_refused++;
        if (m->stats.entries_refused % 100 == 1) {
            brim_log_warn("migrate: an entry of partition %u (%zu-byte "
                          "value) is beyond this node's limits: not "
                          "stored (%" PRIu64 " so far)",
                          p, e->value_len, m->stats.entries_refused);
        }
        return 1;
    }
    m->stats.insert_failures++;
    return rc; /* BRIM_ENOMEM: the sender retries */
}

/* ---- tombstones ---- */

struct mig_tomb **
mig_tomb_slot(struct brim_migrate *m, uint64_t hash, const char *key,
              size_t key_len)
{
    struct mig_tomb **slot;

    if (m->ntbuckets == 0 || m->stats.tombstones == 0) {
        return NULL; /* no read of the bucket array for every insert */
    }
    slot = &m->tbuckets[(hash >> 32) & (m->ntbuckets - 1)];
    for (; *slot != NULL; slot = &(*slot)->hnext) {
        if ((*slot)->hash == hash && (*slot)->key_len == key_len
            && memcmp((*slot)->key, key, key_len) == 0)
        {
            return slot;
        }
    }
    return NULL;
}

static void
mig_tomb_grow(struct brim_migrate *m)
{
    struct mig_tomb **nb, *t, *next;
    uint32_t          n = m->ntbuckets == 0 ? 64 : m->ntbuckets * 2, i, b;

    nb = brim_calloc(n, sizeof(*nb));
    if (nb == NULL) {
        return;
    }
    for (i = 0; i < m->ntbuckets; i++) {
        for (t = m->tbuckets[i]; t != NULL; t = next) {
            next = t->hnext;
            b = (uint32_t) (t->hash >> 32) & (n - 1);
            t->hnext = nb[b];
            nb[b] = t;
        }
    }
    brim_free(m->tbuckets);
    m->tbuckets = nb;
    m->ntbuckets = n;
}

/* The size of a tombstone of KEY_LEN key bytes. */
static size_t
tomb_size(size_t key_len)
{
    return sizeof(struct mig_tomb) + key_len;
}

int
mig_tomb_reserve(struct brim_migrate *m)
{
    if (m->ntbuckets == 0) {
        mig_tomb_grow(m);
    }
    if (m->spare_tomb == NULL) {
        mig_fail_arm(m, MIG_FAIL_SPARE);
        m->spare_tomb = brim_malloc(tomb_size(255));
        mig_fail_disarm(m, MIG_FAIL_SPARE);
    }
    return m->ntbuckets == 0 || m->spare_tomb == NULL ? BRIM_ENOMEM : 0;
}

int
mig_tomb_add(struct brim_migrate *m, uint32_t p, uint64_t hash, const char *key,
             size_t key_len)
{
    struct mig_tomb *t;
    uint32_t         b;

    if (key_len == 0 || key_len > 255
        || mig_tomb_slot(m, hash, key, key_len) != NULL)
    {
        return 0;
    }
    if (m->stats.tombstones >= m->ntbuckets) {
        mig_tomb_grow(m); /* failing only lengthens chains */
    }
    mig_fail_arm(m, MIG_FAIL_TOMB);
    t = m->ntbuckets == 0 ? NULL : brim_malloc(tomb_size(key_len));
    mig_fail_disarm(m, MIG_FAIL_TOMB);
    if (t == NULL && m->ntbuckets != 0) {
        /* The spare (brim_migrate_before_write() refills it) makes sure
         * an accepted write always leaves its tombstone. */
        t = m->spare_tomb;
        m->spare_tomb = NULL;
    }
    if (t == NULL) {
        return BRIM_ENOMEM;
    }
    t->hash = hash;
    t->p = p;
    t->key_len = (uint8_t) key_len;
    memcpy(t->key, key, key_len);
    b = (uint32_t) (hash >> 32) & (m->ntbuckets - 1);
    t->hnext = m->tbuckets[b];
    m->tbuckets[b] = t;
    t->pnext = m->tomb_head[p];
    m->tomb_head[p] = t;
    m->stats.tombstones++;
    return 0;
}

void
mig_tomb_clear(struct brim_migrate *m, uint32_t p)
{
    struct mig_tomb *t, *next, **slot;

    for (t = m->tomb_head[p]; t != NULL; t = next) {
        next = t->pnext;
        slot = mig_tomb_slot(m, t->hash, t->key, t->key_len);
        while (slot != NULL && *slot != t) {
            slot = &(*slot)->hnext; /* same key cannot repeat */
        }
        if (slot != NULL) {
            *slot = t->hnext;
        }
        brim_free(t);
        m->stats.tombstones--;
    }
    m->tomb_head[p] = NULL;
}

int
mig_reply(struct brim_conn *c, uint64_t id, int status, const char *msg)
{
    return brim_wire_encode_status(brim_conn_out(c), id, status, msg,
                                   msg != NULL ? strlen(msg) : 0);
}

/* The stream entry of item IT with TTL seconds left. */
void
mig_item_entry(const struct brim_item *it, uint32_t ttl,
               struct brim_wire_entry *e)
{
    e->key = brim_item_key(it);
    e->key_len = brim_item_key_len(it);
    e->value = brim_item_value(it);
    e->value_len = brim_item_val_len(it);
    e->flags = brim_item_flags(it);
    e->cas = brim_item_cas(it);
    e->ttl_s = ttl;
}
