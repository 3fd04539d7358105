/*
 * server/coord/leader.c - brim-coord on etcd (--etcd, DESIGN.md 12): the
 * election and the etcd back end of the state. Every coordinator holds an
 * etcd lease (--election-ttl, kept alive every third of what etcd
 * granted) and tries, while no one leads, to create PREFIX/leader under
 * it in one transaction; the one that creates it leads, with the key's
 * create revision as its term, until its lease is lost. The leader keeps
 * the state file's bytes (persist.h) at PREFIX/state, written only in
 * transactions that compare the term and the state's mod revision, so a
 * deposed leader writes nothing. A coordinator that loses its lease or
 * fails such a compare steps down by running itself again (execv): it
 * then starts as a follower, with no member, connection or map in memory
 * from its time as leader.
 *
 * The gateway calls block the loop, each for at most ETCD_CALL_MS. That
 * is accepted here as the state file's fsync is (docs/design.md): the
 * coordinator serves only nodes and operators, never data ops, and a
 * call to a loopback or LAN etcd takes a few ms (a keepalive 1 to 8 ms,
 * a 140 KiB state transaction on tmpfs about 10 ms, measured), while
 * heartbeats come every 500 ms and a node is declared dead after 3 s.
 */
#include "server/coord/coord.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include <sys/file.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "server/coord/etcd.h"
#include "server/log.h"
#include "server/random.h"

/* One gateway call at most, ms: well under a heartbeat interval. */
#define ETCD_CALL_MS 300u
/* How often a follower looks for a leader, ms. */
#define ETCD_POLL_MS 100u
/* A follower reads the committed map again after this long, ms. */
#define ETCD_FOLLOW_MS 100u
/* etcd failures are logged at most this often, ms. */
#define ETCD_LOG_MS 5000u

/* Log an etcd failure, at most once per ETCD_LOG_MS. */
static void
etcd_log(struct brim_coord *co, const char *what, const char *err)
{
    uint64_t now = uv_now(co->loop);

    if (co->etcd->logged_ms == 0 || now - co->etcd->logged_ms >= ETCD_LOG_MS) {
        co->etcd->logged_ms = now;
        brim_log_warn("etcd: %s: %s", what, err);
    }
}

/*
 * Step down: this coordinator may no longer lead (its lease is gone or a
 * guarded write failed). It revokes its lease (so its key, if still
 * there, goes at once) and runs itself again from the start as a
 * follower: nothing it held as leader survives, and every node
 * connection closes with the process image (libuv opens them CLOEXEC).
 */
static void
etcd_step_down(struct brim_coord *co, const char *why)
{
    char err[BRIM_ERRBUF_LEN];

    brim_log_warn("stepping down as leader (term %" PRId64 "): %s; "
                  "starting again as a follower",
                  co->etcd->term, why);
    if (co->etcd->lease != 0) {
        (void) brim_etcd_lease_revoke(co->etcd->cli, co->etcd->lease, err);
    }
    execv("/proc/self/exe", co->argv);
    brim_log_error("execv /proc/self/exe: cannot run again; exiting");
    _exit(1);
}

/* A state in etcd that this coordinator refuses (or cannot build): an
 * operator must look, as at a refused state file. Exit rather than run
 * again, which would only be elected and refuse it again. */
static void
etcd_refuse(struct brim_coord *co, const char *why)
{
    char err[BRIM_ERRBUF_LEN];

    brim_log_error("etcd: %s: exiting (status 1)", why);
    (void) brim_etcd_lease_revoke(co->etcd->cli, co->etcd->lease, err);
    _exit(1);
}

/* Loop ms now, with the loop's clock brought up to date (a gateway call
 * may have blocked it). */
static uint64_t
etcd_now(struct brim_coord *co)
{
    uv_update_time(co->loop);
    return uv_now(co->loop);
}

/* Renew (or first grant) our lease. Returns 0 when we hold a live one. */
static int
etcd_lease(struct brim_coord *co)
{
    struct brim_coord_etcd *e = co->etcd;
    char                    err[BRIM_ERRBUF_LEN];
    int64_t                 ttl_s;
    uint64_t                sent = etcd_now(co);
    int                     rc;

    if (e->lease == 0) {
        rc = brim_etcd_lease_grant(e->cli, co->cfg.election_ttl_s, &e->lease,
                                   &ttl_s, err);
        if (rc != 0) {
            etcd_log(co, "lease grant", err);
            return rc;
        }
        if (ttl_s != (int64_t) co->cfg.election_ttl_s) {
            brim_log_info("etcd granted a lease of %" PRId64
                          " s (asked %" PRIu32 " s)",
                          ttl_s, co->cfg.election_ttl_s);
        }
    } else {
        rc = brim_etcd_lease_keepalive(e->cli, e->lease, &ttl_s, err);
        if (rc == BRIM_ENOTFOUND) {
            e->lease = 0;
            if (e->term != 0) {
                etcd_step_down(co, "our etcd lease expired");
            }
            return rc;
        }
        if (rc != 0) {
            etcd_log(co, "lease keepalive", err);
            return rc;
        }
    }
    e->keepalive_ms = sent;
    e->lease_good_ms = sent;
    e->lease_ttl_ms = ttl_s * 1000;
    /* Heartbeats are acknowledged only within the lease, counted from
     * the send of its last renewal, less a quarter of it for the
     * clocks (DESIGN.md 12). */
    if (e->term != 0) {
        co->ack_until_ms = sent + (uint64_t) (e->lease_ttl_ms * 3 / 4);
    }
    return 0;
}

/* A leader key read by a follower (persist.h's "NAME ADDR HTTP", or the
 * older "NAME ADDR") into CO->leader_addr, CO->leader_http and the
 * leader's term. */
static void
etcd_note_leader(struct brim_coord *co, const struct brim_etcd_kv *kv)
{
    struct brim_coord_leader_value lv;
    int64_t                        was = co->etcd->leader_term;

    co->etcd->leader_seen_ms = etcd_now(co);
    co->etcd->leader_term = kv->create_revision;
    if (brim_coord_leader_parse(kv->value, kv->len, &lv) != 0) {
        co->leader_addr[0] = '\0';
        co->leader_http[0] = '\0';
        etcd_log(co, "the leader key", "a value that is not NAME ADDR [HTTP]");
        return;
    }
    if (was != kv->create_revision || strcmp(co->leader_addr, lv.addr) != 0
        || strcmp(co->leader_http, lv.http) != 0)
    {
        snprintf(co->leader_addr, sizeof(co->leader_addr), "%s", lv.addr);
        snprintf(co->leader_http, sizeof(co->leader_http), "%s", lv.http);
        brim_log_info("leader is %s %s (HTTP %s, term %" PRId64 ")", lv.name,
                      lv.addr, lv.http[0] != '\0' ? lv.http : "none",
                      kv->create_revision);
    }
}

/*
 * --import-state DIR, elected with no state in etcd: DIR/state becomes
 * the cluster's (written by brim_coord_resume()'s first guarded write),
 * and DIR gets BRIM_PERSIST_MOVED, fsynced, so that a file-mode
 * brim-coord refuses DIR from then on. The marker is written before the
 * state reaches etcd: a crash between leaves DIR refused and etcd empty,
 * and a second run imports again, where the other order could leave
 * two live copies.
 */
static void
etcd_import(struct brim_coord *co)
{
    char  err[BRIM_ERRBUF_LEN], why[2 * BRIM_ERRBUF_LEN], path[4200];
    FILE *f;
    int   fd;

    /* A file-mode brim-coord holds DIR/lock while it runs: never move a
     * state that is still being written. The lock stays held. */
    snprintf(path, sizeof(path), "%s/lock", co->cfg.import_dir);
    fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) != 0) {
        snprintf(why, sizeof(why),
                 "--import-state: %.200s is locked (a file-mode brim-coord "
                 "runs on it?) or cannot be opened",
                 path);
        etcd_refuse(co, why);
    }
    if (brim_persist_load(co->cfg.import_dir, &co->state, err) != 0) {
        snprintf(why, sizeof(why), "--import-state: %s", err);
        etcd_refuse(co, why);
    }
    co->etcd->state_mod = 0;
    snprintf(path, sizeof(path), "%s/%s", co->cfg.import_dir,
             BRIM_PERSIST_MOVED);
    f = fopen(path, "w");
    if (f == NULL
        || fprintf(f, "moved into etcd %s, key %s\n", co->cfg.etcd,
                   co->etcd->key_state)
            < 0
        || fflush(f) != 0 || fsync(fileno(f)) != 0)
    {
        snprintf(why, sizeof(why), "--import-state: cannot write %.200s", path);
        if (f != NULL) {
            (void) fclose(f);
        }
        etcd_refuse(co, why);
    }
    (void) fclose(f);
    brim_log_info("cluster %016" PRIx64 " imported from %s at epoch %" PRIu64
                  " (next_epoch %" PRIu64 "); %s marks it moved",
                  co->state.settings.cluster_id, co->cfg.import_dir,
                  co->state.committed.map.epoch, co->state.next_epoch, path);
}

/*
 * Elected with term TERM: load the state from etcd (or create a new
 * cluster), then do what a restarted coordinator does.
 */
static void
etcd_lead(struct brim_coord *co)
{
    struct brim_coord_etcd *e = co->etcd;
    struct brim_etcd_kv     kv;
    char                    err[BRIM_ERRBUF_LEN] = "";
    int                     rc;

    brim_coord_state_destroy(&co->state); /* a follower's copy */
    rc = brim_etcd_get(e->cli, e->key_state, &kv, err);
    if (rc == 0) {
        rc = brim_persist_decode(kv.value, kv.len, &co->state, err);
        e->state_mod = kv.mod_revision;
        brim_free(kv.value);
        if (rc != 0) {
            char why[2 * BRIM_ERRBUF_LEN];

            /* A refused state needs an operator, as a refused file. */
            snprintf(why, sizeof(why), "%s holds a state that is refused: %s",
                     e->key_state, err);
            etcd_refuse(co, why);
        }
        if (co->cfg.import_dir[0] != '\0') {
            brim_log_warn("etcd already holds a state: --import-state %s "
                          "ignored",
                          co->cfg.import_dir);
        }
        brim_log_info("cluster %016" PRIx64
                      " loaded from etcd at epoch %" PRIu64
                      " (next_epoch %" PRIu64 ")",
                      co->state.settings.cluster_id,
                      co->state.committed.map.epoch, co->state.next_epoch);
    } else if (rc == BRIM_ENOTFOUND && co->cfg.import_dir[0] != '\0') {
        etcd_import(co);
    } else if (rc == BRIM_ENOTFOUND) {
        e->state_mod = 0;
        co->cfg.set.cluster_id = brim_random_u64() | 1;
        co->cfg.set.seed = brim_random_u64();
        rc = brim_coord_state_init(&co->state, &co->cfg.set, err);
        if (rc != 0) {
            etcd_refuse(co, err);
        }
        brim_log_info(
            "new cluster %016" PRIx64 " in etcd: P %" PRIu32 ", V %" PRIu32,
            co->state.settings.cluster_id, co->state.settings.partitions,
            co->state.settings.tokens_per_node);
    } else {
        /* Nothing is loaded yet: give the leadership back and stay a
         * follower (a new lease is granted on the next turn). */
        etcd_log(co, "reading the state after the election", err);
        (void) brim_etcd_lease_revoke(e->cli, e->lease, err);
        e->lease = 0;
        e->term = 0;
        co->ack_until_ms = 0;
        return;
    }
    co->leading = 1;
    snprintf(co->leader_addr, sizeof(co->leader_addr), "%s", co->cfg.listen);
    snprintf(co->leader_http, sizeof(co->leader_http), "%s",
             co->cfg.http_listen);
    if (brim_coord_resume(co) != 0) {
        etcd_step_down(co, "the state could not be written");
    }
}

/* No one leads that we know of: try to, under our lease. */
static void
etcd_campaign(struct brim_coord *co)
{
    struct brim_coord_etcd        *e = co->etcd;
    struct brim_etcd_kv            holder;
    struct brim_coord_leader_value lv;
    char                           val[BRIM_COORD_LEADER_VALUE_MAX];
    char                           err[BRIM_ERRBUF_LEN];
    int64_t                        rev;
    int                            n, rc;

    /* main.c checked the name, and the addresses parsed at bind: a
     * space is refused all the same, as the value could not be read. */
    snprintf(lv.name, sizeof(lv.name), "%s", co->cfg.name);
    snprintf(lv.addr, sizeof(lv.addr), "%s", co->cfg.listen);
    snprintf(lv.http, sizeof(lv.http), "%s", co->cfg.http_listen);
    n = brim_coord_leader_format(&lv, val, sizeof(val));
    if (n < 0) {
        etcd_log(co, "campaign",
                 "--name, --listen or --http-listen holds a "
                 "space: not a leader key value");
        return;
    }
    rc = brim_etcd_put_if_absent(e->cli, e->key_leader, val, (size_t) n,
                                 e->lease, &rev, &holder, err);
    if (rc == BRIM_EEXISTS && holder.lease == e->lease) {
        /* Ours: an earlier campaign timed out here but was applied. */
        rev = holder.create_revision;
        brim_free(holder.value);
        rc = 0;
    } else if (rc == BRIM_EEXISTS) {
        etcd_note_leader(co, &holder);
        brim_free(holder.value);
        return;
    }
    if (rc != 0) {
        etcd_log(co, "campaign", err);
        return;
    }
    e->term = rev;
    co->ack_until_ms = e->lease_good_ms + (uint64_t) (e->lease_ttl_ms * 3 / 4);
    brim_log_info("elected leader: term %" PRId64 " (%s, lease %" PRId64 " ms)",
                  rev, e->key_leader, e->lease_ttl_ms);
    etcd_lead(co);
}

static void
etcd_timer_cb(uv_timer_t *t)
{
    struct brim_coord      *co = t->data;
    struct brim_coord_etcd *e = co->etcd;
    uint64_t                now = etcd_now(co);

    if (co->stopping) {
        return;
    }
    if (e->lease == 0
        || now - e->keepalive_ms >= (uint64_t) e->lease_ttl_ms / 3) {
        if (etcd_lease(co) != 0 && e->term != 0
            && etcd_now(co) >= e->lease_good_ms + (uint64_t) e->lease_ttl_ms)
        {
            /* etcd unreachable for a whole lease: another may lead. */
            etcd_step_down(co,
                           "etcd has not renewed our lease within its "
                           "TTL");
        }
    }
    if (e->term == 0 && e->lease != 0) {
        etcd_campaign(co);
    }
    if (e->term == 0 && co->state.settings.cluster_id == 0) {
        /* A follower with no copy of the state yet: read one now, so a
         * MAP_FETCH while etcd is unreachable is still served. */
        (void) brim_coord_etcd_follow(co);
    }
}

int
brim_coord_etcd_start(struct brim_coord *co, char *err)
{
    struct brim_coord_etcd *e;
    int                     rc;

    e = brim_calloc(1, sizeof(*e));
    if (e == NULL) {
        brim_errfmt(err, "out of memory");
        return BRIM_ENOMEM;
    }
    rc = brim_etcd_new(co->cfg.etcd, ETCD_CALL_MS, &e->cli, err);
    if (rc != 0) {
        brim_free(e);
        return rc;
    }
    snprintf(e->key_leader, sizeof(e->key_leader), "%s/leader",
             co->cfg.etcd_prefix);
    snprintf(e->key_state, sizeof(e->key_state), "%s/state",
             co->cfg.etcd_prefix);
    e->lease_ttl_ms = (int64_t) co->cfg.election_ttl_s * 1000;
    co->etcd = e;
    co->save = brim_coord_etcd_save;
    co->deposed = etcd_step_down;
    co->leading = 0;
    co->ack_until_ms = 0;
    brim_log_info("etcd mode: %s as %s, keys %s/*", co->cfg.etcd, co->cfg.name,
                  co->cfg.etcd_prefix);
    uv_timer_init(co->loop, &e->timer);
    e->timer.data = co;
    uv_timer_start(&e->timer, etcd_timer_cb, 0, ETCD_POLL_MS);
    return 0;
}

void
brim_coord_etcd_stop(struct brim_coord *co)
{
    char err[BRIM_ERRBUF_LEN];

    if (co->etcd == NULL) {
        return;
    }
    /* A clean stop hands leadership on at once rather than after a TTL. */
    if (co->etcd->lease != 0) {
        (void) brim_etcd_lease_revoke(co->etcd->cli, co->etcd->lease, err);
        co->etcd->lease = 0;
    }
    uv_close((uv_handle_t *) &co->etcd->timer, NULL);
}

void
brim_coord_etcd_free(struct brim_coord *co)
{
    if (co->etcd != NULL) {
        brim_etcd_free(co->etcd->cli);
        brim_free(co->etcd);
        co->etcd = NULL;
    }
}

int
brim_coord_etcd_save(struct brim_coord *co, char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_coord_etcd *e = co->etcd;
    struct brim_buf         bytes;
    int64_t                 mod;
    int                     rc;

    if (e->term == 0) {
        brim_errfmt(errbuf, "etcd: not the leader: nothing is written");
        return BRIM_EDENIED;
    }
    rc = brim_persist_encode(&co->state, &bytes, errbuf);
    if (rc != 0) {
        return rc;
    }
    rc = brim_etcd_put_guarded(e->cli, e->key_state, bytes.data, bytes.len,
                               e->key_leader, e->term, e->state_mod, &mod,
                               errbuf);
    brim_buf_destroy(&bytes);
    (void) etcd_now(co);
    if (rc == BRIM_EDENIED) {
        etcd_step_down(co, errbuf);
    }
    if (rc == 0) {
        e->state_mod = mod;
    }
    return rc;
}

int
brim_coord_etcd_follow(struct brim_coord *co)
{
    struct brim_coord_etcd *e = co->etcd;
    struct brim_coord_state st;
    struct brim_etcd_kv     kv;
    char                    err[BRIM_ERRBUF_LEN];
    uint64_t                now = uv_now(co->loop);
    int                     rc;

    if (e == NULL || co->leading
        || (e->read_ms != 0 && now - e->read_ms < ETCD_FOLLOW_MS))
    {
        return co->state.settings.cluster_id != 0 ? 0 : BRIM_ENOTFOUND;
    }
    e->read_ms = now;
    rc = brim_etcd_get(e->cli, e->key_state, &kv, err);
    (void) etcd_now(co);
    if (rc == BRIM_ENOTFOUND) {
        return co->state.settings.cluster_id != 0 ? 0 : rc;
    }
    if (rc != 0) {
        etcd_log(co, "reading the state", err);
        return co->state.settings.cluster_id != 0 ? 0 : rc;
    }
    if (kv.mod_revision != e->state_mod) {
        rc = brim_persist_decode(kv.value, kv.len, &st, err);
        if (rc == 0) {
            brim_coord_state_destroy(&co->state);
            co->state = st;
            e->state_mod = kv.mod_revision;
        } else {
            etcd_log(co, "the state in etcd", err);
        }
    }
    brim_free(kv.value);
    return co->state.settings.cluster_id != 0 ? 0 : BRIM_ENOTFOUND;
}
