/*
 * tests/cluster/client_coord_tool.c - libbrim in cluster mode, driven by
 * tests/cluster/client_coord.py against a real brim-coord and brim-nodes:
 *
 *   client_coord_tool COORD load N     SET then GET N keys through the
 *                                      coordinator's map; all must read back
 *   client_coord_tool COORD mload N    the same with brim_mset/brim_mget
 *   client_coord_tool COORD stale N    SET N keys, print "ready", wait for a
 *                                      line on stdin (a node joined), then
 *                                      SET and GET them again with the old
 *                                      map: each call within the timeout,
 *                                      MOVED followed, map fetched again
 *                                      (the subscription is off, so the
 *                                      map can only move by MOVED)
 *   client_coord_tool COORD nonodes    SET and GET must fail BRIM_ENONODES
 *   client_coord_tool COORD dump       for each key on stdin (a line each)
 *                                      print "KEY FLAGS HEX" (the value in
 *                                      hex) or "KEY miss": what libbrim
 *                                      reads (tests/cluster/mcport.py)
 *   client_coord_tool COORD learn      print "ready epoch=E", then GET one
 *                                      key every 5 ms until brim_epoch()
 *                                      is newer: a join, learned from the
 *                                      data replies' epochs within WAIT_MS
 *   client_coord_tool COORD churn N    SET then GET N keys round and round,
 *                                      every call within the timeout and
 *                                      none failing, while the coordinator
 *                                      is killed and restarted: stdin
 *                                      "mark" prints "mark ops=K", "stop"
 *                                      ends the loop; then as learn
 *   client_coord_tool SEEDS fleet N    open N more handles at once (RLIMIT_
 *                                      NOFILE raised to its hard limit),
 *                                      each SETs and GETs FLEET_KEYS keys,
 *                                      print "ready handles=N ms=T", wait
 *                                      for a line on stdin (the counts are
 *                                      read meanwhile), close them all
 *   client_coord_tool COORD admin      the typed calls of <brim/admin.h>
 *                                      as an admin: print every member,
 *                                      the cluster's stats and node rows,
 *                                      two plans (lines "member ...",
 *                                      "stats ...", "node ...", "plan
 *                                      ..."), check the refusals, then
 *                                      leave the last member listed and
 *                                      wait until the list lacks it
 *
 * Prints one line of counts; exit 0 on success, 1 with a reason on stderr.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <brim.h>
#include <brim/admin.h>

#include "client/lib/coordlink.h"
#include "proto/topo.h"

#define TIMEOUT_MS 3000
#define WAIT_MS 20000      /* learn: longest wait for an epoch */
#define CHURN_MAX_MS 60000 /* churn: longest loop without "stop" */
#define FLEET_KEYS 8       /* fleet: keys each handle writes and reads */
#define FLEET_MAX 100000   /* fleet: most handles */

static int64_t
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t) ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
fail(const char *what, int rc, struct brim_client *c)
{
    fprintf(stderr, "client_coord_tool: %s: %s (%s)\n", what, brim_err_name(rc),
            c != NULL ? brim_errmsg(c) : "");
    return 1;
}

/* SET key<I> = PREFIX<I> for I in 0 .. N-1, each within the timeout. */
static int
set_all(struct brim_client *c, int n, const char *prefix, int64_t *worst)
{
    char    k[32], v[48];
    int64_t t0, dt;
    int     i, rc;

    for (i = 0; i < n; i++) {
        snprintf(k, sizeof(k), "key%d", i);
        snprintf(v, sizeof(v), "%s%d", prefix, i);
        t0 = now_ms();
        rc = brim_set(c, k, strlen(k), v, strlen(v), 0, 0, NULL);
        dt = now_ms() - t0;
        if (dt > *worst) {
            *worst = dt;
        }
        if (rc != 0) {
            return fail(k, rc, c);
        }
    }
    return 0;
}

static int
get_all(struct brim_client *c, int n, const char *prefix)
{
    char   k[32], v[48];
    void  *val;
    size_t len;
    int    i, rc;

    for (i = 0; i < n; i++) {
        snprintf(k, sizeof(k), "key%d", i);
        snprintf(v, sizeof(v), "%s%d", prefix, i);
        rc = brim_get(c, k, strlen(k), &val, &len);
        if (rc != 0) {
            return fail(k, rc, c);
        }
        if (len != strlen(v) || memcmp(val, v, len) != 0) {
            fprintf(stderr, "client_coord_tool: %s: got %.*s, want %s\n", k,
                    (int) len, (char *) val, v);
            brim_free(val);
            return 1;
        }
        brim_free(val);
    }
    return 0;
}

/*
 * N handles of OPTS open together, each with FLEET_KEYS keys written and
 * read back; "ready" once all are, then held until a line on stdin.
 */
static int
fleet(const struct brim_opts *opts, int n)
{
    struct brim_client **cs;
    struct rlimit        rl;
    char                 err[BRIM_ERRBUF_LEN], k[48], line[16];
    void                *val;
    size_t               len;
    int64_t              t0;
    int                  i, j, rc = 0;

    if (n < 1 || n > FLEET_MAX) {
        fprintf(stderr, "client_coord_tool: fleet: N is 1 .. %d\n", FLEET_MAX);
        return 2;
    }
    /* Each handle holds a connection per node it talks to. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void) setrlimit(RLIMIT_NOFILE, &rl);
    }
    cs = calloc((size_t) n, sizeof(*cs));
    if (cs == NULL) {
        return fail("fleet: calloc", BRIM_ENOMEM, NULL);
    }
    t0 = now_ms();
    for (i = 0; i < n && rc == 0; i++) {
        rc = brim_connect(opts, &cs[i], err);
        if (rc != 0) {
            fprintf(stderr, "client_coord_tool: fleet: handle %d: %s: %s\n", i,
                    brim_err_name(rc), err);
            break;
        }
        for (j = 0; j < FLEET_KEYS && rc == 0; j++) {
            snprintf(k, sizeof(k), "fleet-%d-%d", i, j);
            rc = brim_set(cs[i], k, strlen(k), k, strlen(k), 0, 0, NULL);
            if (rc == 0) {
                rc = brim_get(cs[i], k, strlen(k), &val, &len);
            }
            if (rc == 0) {
                rc = len == strlen(k) && memcmp(val, k, len) == 0 ? 0 : 1;
                brim_free(val);
            }
            if (rc != 0) {
                rc = fail(k, rc, cs[i]);
            }
        }
    }
    if (rc == 0) {
        printf("ready handles=%d ms=%" PRId64 "\n", n, now_ms() - t0);
        fflush(stdout);
        if (fgets(line, sizeof(line), stdin) == NULL) {
            rc = 1;
        }
    }
    for (i = 0; i < n; i++) {
        brim_close(cs[i]);
    }
    free(cs);
    return rc;
}

static int
mload(struct brim_client *c, int n)
{
    struct brim_item        *items;
    struct brim_key         *keys;
    struct brim_mget_result *res;
    char(*kb)[32];
    int i, rc, bad;

    items = calloc((size_t) n, sizeof(*items));
    keys = calloc((size_t) n, sizeof(*keys));
    res = calloc((size_t) n, sizeof(*res));
    kb = calloc((size_t) n, sizeof(*kb));
    if (items == NULL || keys == NULL || res == NULL || kb == NULL) {
        return 1;
    }
    for (i = 0; i < n; i++) {
        snprintf(kb[i], sizeof(kb[i]), "mkey%d", i);
        items[i].key = kb[i];
        items[i].key_len = strlen(kb[i]);
        items[i].val = kb[i];
        items[i].val_len = strlen(kb[i]);
        keys[i].key = kb[i];
        keys[i].key_len = strlen(kb[i]);
    }
    bad = 0;
    rc = brim_mset(c, items, (size_t) n);
    if (rc != 0) {
        bad = fail("mset", rc, c);
    }
    for (i = 0; i < n && !bad; i++) {
        if (items[i].status != 0) {
            bad = fail(kb[i], items[i].status, c);
        }
    }
    if (!bad) {
        rc = brim_mget(c, keys, (size_t) n, res);
        if (rc != 0) {
            bad = fail("mget", rc, c);
        }
        for (i = 0; i < n && !bad; i++) {
            if (res[i].status != 0 || res[i].val_len != keys[i].key_len
                || memcmp(res[i].val, kb[i], res[i].val_len) != 0)
            {
                bad = fail(kb[i], res[i].status, c);
            }
        }
        brim_mget_free(res, (size_t) n);
    }
    free(items);
    free(keys);
    free(res);
    free(kb);
    return bad;
}

static void
sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/*
 * Print "ready epoch=E", then GET one key every 5 ms until brim_epoch()
 * passes E or WAIT_MS runs out: the client learns the new epoch from the
 * epoch its data replies carry (or a MOVED), with no coordinator.
 */
static int
await_epoch(struct brim_client *c)
{
    uint64_t e0, e;
    int64_t  t0;
    void    *val;
    size_t   len;
    int      rc;

    e0 = brim_epoch(c);
    printf("ready epoch=%" PRIu64 "\n", e0);
    fflush(stdout);
    t0 = now_ms();
    while ((e = brim_epoch(c)) <= e0) {
        if (now_ms() - t0 > WAIT_MS) {
            fprintf(stderr,
                    "client_coord_tool: epoch still %" PRIu64
                    " after %d ms: nothing learned\n",
                    e, WAIT_MS);
            return 1;
        }
        rc = brim_get(c, "learn-key", 9, &val, &len);
        if (rc == 0) {
            brim_free(val);
        } else if (rc != BRIM_ENOTFOUND) {
            return fail("learn: get", rc, c);
        }
        sleep_ms(5);
    }
    printf("learned epoch=%" PRIu64 " after_ms=%" PRId64 "\n", e,
           now_ms() - t0);
    fflush(stdout);
    return 0;
}

/* The next line on stdin when one is waiting ("" if none; "eof" at EOF). */
static const char *
stdin_line(char *line, size_t size)
{
    struct pollfd pfd = {0, POLLIN, 0};

    if (poll(&pfd, 1, 0) <= 0) {
        return "";
    }
    if (fgets(line, (int) size, stdin) == NULL) {
        return "eof";
    }
    line[strcspn(line, "\n")] = '\0';
    return line;
}

/* One SET and GET of key I at round R; 0 or 1 (with the reason printed). */
static int
churn_one(struct brim_client *c, int i, long r, int64_t *worst)
{
    char    k[32], v[48];
    void   *val;
    size_t  len;
    int64_t t0, dt;
    int     rc, bad;

    snprintf(k, sizeof(k), "ckey%d", i);
    snprintf(v, sizeof(v), "r%ld-%d", r, i);
    t0 = now_ms();
    rc = brim_set(c, k, strlen(k), v, strlen(v), 0, 0, NULL);
    if (rc != 0) {
        return fail(k, rc, c);
    }
    rc = brim_get(c, k, strlen(k), &val, &len);
    dt = now_ms() - t0;
    *worst = dt > *worst ? dt : *worst;
    if (rc != 0) {
        return fail(k, rc, c);
    }
    bad = len != strlen(v) || memcmp(val, v, len) != 0;
    if (bad) {
        fprintf(stderr, "client_coord_tool: %s: got %.*s, want %s\n", k,
                (int) len, (char *) val, v);
    }
    brim_free(val);
    return bad;
}

/*
 * SET and GET N keys round and round until "stop" (or CHURN_MAX_MS), and
 * answer "mark" with the count of ops so far; any failed call fails.
 */
static int
churn(struct brim_client *c, int n, int64_t *worst)
{
    char        line[64];
    const char *cmd;
    long        ops;
    int64_t     t0;

    setvbuf(stdin, NULL, _IONBF, 0); /* poll() sees every line */
    printf("ready\n");
    fflush(stdout);
    t0 = now_ms();
    for (ops = 0;; ops += 2) {
        cmd = stdin_line(line, sizeof(line));
        if (strcmp(cmd, "mark") == 0) {
            printf("mark ops=%ld\n", ops);
            fflush(stdout);
        } else if (strcmp(cmd, "stop") == 0 || strcmp(cmd, "eof") == 0) {
            break;
        }
        if (now_ms() - t0 > CHURN_MAX_MS) {
            fprintf(stderr, "client_coord_tool: no stop in %d ms\n",
                    CHURN_MAX_MS);
            return 1;
        }
        if (churn_one(c, (int) (ops / 2 % n), ops / 2 / n, worst) != 0) {
            return 1;
        }
    }
    printf("stopped ops=%ld worst_ms=%" PRId64 "\n", ops, *worst);
    fflush(stdout);
    return 0;
}

/* RC must be WANT: else fail with WHAT. */
static int
expect(const char *what, int rc, int want, struct brim_client *c)
{
    if (rc == want) {
        return 0;
    }
    fprintf(stderr, "client_coord_tool: %s: %s, want %s (%s)\n", what,
            brim_err_name(rc), brim_err_name(want), brim_errmsg(c));
    return 1;
}

/* Print the plan P of WHAT ("join", "leave") and check it adds up. */
static int
print_plan(const char *what, const struct brim_plan *p)
{
    printf("plan %s kind=%d name=%s moved=%" PRIu64 " arc=%" PRIu64
           " cap=%" PRIu64 " ideal=%.6g churn=%.6g cap_before=%" PRIu64
           " cap_after=%" PRIu64 " keys=%" PRIu64 "\n",
           what, p->kind, p->name, p->partitions_moved, p->moved_arc,
           p->moved_cap, p->ideal, p->churn, p->cap_before, p->cap_after,
           p->keys_estimate);
    if (p->moved_arc + p->moved_cap != p->partitions_moved
        || p->partitions_moved == 0)
    {
        fprintf(stderr, "client_coord_tool: plan %s does not add up\n", what);
        return 1;
    }
    return 0;
}

/* Print the cluster's stats: one "stats" line, one "coordinator" line,
 * one "node" line a row. */
static int
print_stats(struct brim_client *c, uint64_t *epoch)
{
    struct brim_cluster_stats *st;
    size_t                     i;
    int                        rc;

    rc = brim_cluster_stats(c, &st);
    if (rc != 0) {
        return fail("brim_cluster_stats", rc, c);
    }
    printf("stats epoch=%" PRIu64 " eps=%s partitions=%" PRIu64
           " members=%" PRIu64 " cap=%" PRIu64
           " within_cap=%d displaced=%" PRIu64
           " nnodes=%zu active=%d required=%d\n",
           st->epoch, st->eps, st->partitions, st->members, st->cap,
           st->within_cap, st->displaced, st->nnodes, st->migration.active,
           st->auth.required);
    printf("coordinator name=%s addr=%s mode=%d term=%" PRIu64 " leading=%d\n",
           st->coordinator.name, st->coordinator.addr, st->coordinator.mode,
           st->coordinator.term, st->coordinator.leading);
    for (i = 0; i < st->nnodes; i++) {
        printf("node %s %s %s %" PRIu32 " %" PRIu64 " %" PRIu64 "\n",
               st->nodes[i].name, st->nodes[i].addr,
               brim_node_state_name(st->nodes[i].state),
               st->nodes[i].weight_ppm, st->nodes[i].partitions,
               st->nodes[i].cap);
    }
    *epoch = st->epoch;
    brim_cluster_stats_free(st);
    return 0;
}

/* The refusals the admin calls must give (and nothing out written). */
static int
admin_refusals(struct brim_client *c, const char *member)
{
    struct brim_member_info *m;
    struct brim_plan         p;
    uint64_t                 e = 77;
    size_t                   n;
    int                      bad;

    bad = expect("plan leave nosuch",
                 brim_plan(c, BRIM_PLAN_LEAVE, "nosuch", 0, &p), BRIM_ENOTFOUND,
                 c);
    bad |= expect("plan join of a member",
                  brim_plan(c, BRIM_PLAN_JOIN, member, 0, &p), BRIM_EEXISTS, c);
    bad |= expect("plan kind 7", brim_plan(c, 7, "x", 0, &p), BRIM_EINVAL, c);
    bad |= expect("leave nosuch", brim_leave(c, "nosuch", 0, &e),
                  BRIM_ENOTFOUND, c);
    bad |=
        expect("members into NULL", brim_members(c, NULL, &n), BRIM_EINVAL, c);
    bad |=
        expect("members into NULL", brim_members(c, &m, NULL), BRIM_EINVAL, c);
    if (e != 77) {
        fprintf(stderr,
                "client_coord_tool: a refused leave wrote its "
                "epoch\n");
        bad = 1;
    }
    return bad;
}

/* A client of the node at ADDR (no coordinator) gets BRIM_EINVAL. */
static int
admin_standalone(const char *addr)
{
    struct brim_member_info *m;
    struct brim_client      *c;
    struct brim_opts         opts;
    char                     err[BRIM_ERRBUF_LEN];
    size_t                   n;
    int                      rc;

    memset(&opts, 0, sizeof(opts));
    opts.server_addr = addr;
    rc = brim_connect(&opts, &c, err);
    if (rc != 0) {
        fprintf(stderr, "client_coord_tool: connect %s: %s\n", addr, err);
        return 1;
    }
    rc = expect("members without a coordinator", brim_members(c, &m, &n),
                BRIM_EINVAL, c);
    if (rc == 0) {
        printf("standalone: %s\n", brim_errmsg(c));
    }
    brim_close(c);
    return rc;
}

/*
 * The admin mode: members, stats, plans and refusals; then LEAVE of the
 * last member listed, waiting (WAIT_MS at most) until the members' list
 * lacks it.
 */
static int
admin(struct brim_client *c)
{
    struct brim_member_info *m;
    struct brim_plan         p;
    char                     gone[BRIM_ADMIN_NAME_MAX + 1];
    char                     addr[BRIM_ADMIN_ADDR_MAX + 1];
    uint64_t                 epoch, left_at;
    size_t                   i, n;
    int64_t                  t0;
    int                      rc, listed;

    rc = brim_members(c, &m, &n);
    if (rc != 0 || n == 0) {
        return fail("brim_members", rc, c);
    }
    for (i = 0; i < n; i++) {
        printf("member %s %s %s %" PRIu32 " %" PRIu32 "\n", m[i].name,
               m[i].addr, brim_node_state_name(m[i].state), m[i].weight_ppm,
               m[i].partitions);
    }
    snprintf(gone, sizeof(gone), "%s", m[n - 1].name);
    snprintf(addr, sizeof(addr), "%s", m[0].addr);
    brim_members_free(m);
    if (print_stats(c, &epoch) != 0) {
        return 1;
    }
    rc = brim_plan(c, BRIM_PLAN_JOIN, "node9", 2000000, &p);
    if (rc != 0 || print_plan("join", &p) != 0) {
        return fail("plan join", rc, c);
    }
    rc = brim_plan(c, BRIM_PLAN_LEAVE, gone, 0, &p);
    if (rc != 0 || print_plan("leave", &p) != 0) {
        return fail("plan leave", rc, c);
    }
    if (admin_refusals(c, gone) != 0 || admin_standalone(addr) != 0) {
        return 1;
    }
    rc = brim_leave(c, gone, 0, &left_at);
    if (rc != 0) {
        return fail("leave", rc, c);
    }
    printf("leave %s epoch=%" PRIu64 "\n", gone, left_at);
    if (left_at <= epoch) {
        fprintf(stderr,
                "client_coord_tool: leave at epoch %" PRIu64
                ", not after %" PRIu64 "\n",
                left_at, epoch);
        return 1;
    }
    t0 = now_ms();
    for (listed = 1; listed; sleep_ms(50)) {
        if (now_ms() - t0 > WAIT_MS) {
            fprintf(stderr, "client_coord_tool: %s still listed\n", gone);
            return 1;
        }
        rc = brim_members(c, &m, &n);
        if (rc != 0) {
            return fail("brim_members", rc, c);
        }
        for (listed = 0, i = 0; i < n; i++) {
            listed |= strcmp(m[i].name, gone) == 0;
        }
        brim_members_free(m);
    }
    printf("left %s after_ms=%" PRId64 " members=%zu\n", gone, now_ms() - t0,
           n);
    return print_stats(c, &epoch);
}

/* dump: each key of stdin read through libbrim, with its flags. */
static int
dump(struct brim_client *c)
{
    char     key[300];
    void    *val;
    size_t   len, i, n;
    uint32_t flags;
    int      rc;

    while (fgets(key, sizeof(key), stdin) != NULL) {
        n = strcspn(key, "\r\n");
        key[n] = '\0';
        if (n == 0) {
            continue;
        }
        rc = brim_get_ex(c, key, n, &val, &len, &flags, NULL);
        if (rc == BRIM_ENOTFOUND) {
            printf("%s miss\n", key);
            continue;
        }
        if (rc != 0) {
            return fail("dump: get", rc, c);
        }
        printf("%s %" PRIu32 " ", key, flags);
        for (i = 0; i < len; i++) {
            printf("%02x", ((const unsigned char *) val)[i]);
        }
        printf("\n");
        brim_free(val);
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct brim_client *c;
    struct brim_opts    opts;
    char                err[BRIM_ERRBUF_LEN], line[64];
    uint64_t            moved, retry, refresh, epoch0;
    int64_t             worst;
    int                 rc, n;

    if (argc == 2
        && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: client_coord_tool COORD MODE [N]\n"
               "libbrim in cluster mode seeded with COORD (HOST:PORT of "
               "coordinators or nodes,\ncomma-separated), driven by "
               "tests/cluster/client_coord.py "
               "(CTest\nclient.coord.*); the MODEs are listed at the top "
               "of tests/cluster/client_coord_tool.c. No environment "
               "variable; no\noption but --help (-h).\n");
        return 0;
    }
    if (argc < 3) {
        fprintf(stderr, "usage: client_coord_tool COORD MODE [N]\n");
        return 2;
    }
    n = argc > 3 ? atoi(argv[3]) : 1;
    memset(&opts, 0, sizeof(opts));
    opts.coord_addr = argv[1];
    opts.request_timeout_ms = TIMEOUT_MS;
    opts.admin = strcmp(argv[2], "admin") == 0; /* LEAVE, PLAN */
    rc = brim_connect(&opts, &c, err);
    if (rc != 0) {
        fprintf(stderr, "client_coord_tool: connect: %s: %s\n",
                brim_err_name(rc), err);
        return 1;
    }
    epoch0 = brim_coordlink_topo(c)->map.epoch;
    worst = 0;
    rc = 0;
    if (strcmp(argv[2], "load") == 0) {
        rc = set_all(c, n, "v", &worst) || get_all(c, n, "v");
    } else if (strcmp(argv[2], "mload") == 0) {
        rc = mload(c, n);
    } else if (strcmp(argv[2], "learn") == 0) {
        rc = await_epoch(c);
    } else if (strcmp(argv[2], "admin") == 0) {
        rc = admin(c);
    } else if (strcmp(argv[2], "fleet") == 0) {
        rc = fleet(&opts, n);
    } else if (strcmp(argv[2], "churn") == 0) {
        rc = churn(c, n, &worst) || await_epoch(c);
    } else if (strcmp(argv[2], "stale") == 0) {
        brim_coordlink_learn(c, 0); /* MOVED is what this tests */
        rc = set_all(c, n, "v", &worst);
        if (rc == 0) {
            printf("ready epoch=%" PRIu64 "\n", epoch0);
            fflush(stdout);
            if (fgets(line, sizeof(line), stdin) == NULL) {
                rc = 1;
            }
        }
        worst = 0;
        rc = rc || set_all(c, n, "w", &worst) || get_all(c, n, "w");
        brim_coordlink_counts(c, &moved, &retry, &refresh);
        if (rc == 0
            && (moved == 0 || brim_coordlink_topo(c)->map.epoch <= epoch0)) {
            fprintf(stderr,
                    "client_coord_tool: stale map never moved "
                    "(moved=%" PRIu64 ", epoch %" PRIu64 ")\n",
                    moved, brim_coordlink_topo(c)->map.epoch);
            rc = 1;
        }
        if (worst > TIMEOUT_MS) {
            fprintf(stderr, "client_coord_tool: a call took %" PRId64 " ms\n",
                    worst);
            rc = 1;
        }
    } else if (strcmp(argv[2], "dump") == 0) {
        rc = dump(c);
    } else if (strcmp(argv[2], "nonodes") == 0) {
        void  *val;
        size_t len;

        rc = brim_set(c, "k", 1, "v", 1, 0, 0, NULL);
        if (rc != BRIM_ENONODES) {
            rc = fail("set: want ENONODES", rc, c);
        } else {
            printf("set: %s\n", brim_errmsg(c));
            rc = brim_get(c, "k", 1, &val, &len);
            rc = rc == BRIM_ENONODES ? 0 : fail("get: want ENONODES", rc, c);
        }
    } else {
        fprintf(stderr, "client_coord_tool: unknown mode %s\n", argv[2]);
        rc = 2;
    }
    brim_coordlink_counts(c, &moved, &retry, &refresh);
    printf("%s n=%d epoch=%" PRIu64 " moved=%" PRIu64 " retry=%" PRIu64
           " refresh=%" PRIu64 " learned=%" PRIu64 " worst_ms=%" PRId64 "\n",
           rc == 0 ? "ok" : "FAILED", n, brim_coordlink_topo(c)->map.epoch,
           moved, retry, refresh, brim_coordlink_learned(c), worst);
    brim_close(c);
    return rc;
}
