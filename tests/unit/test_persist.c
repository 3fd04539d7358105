/*
 * tests/unit/test_persist.c - server/coord/persist.c, brim-coord's state
 * file: save and load round trips (with and without a pending epoch), a
 * missing file as a new cluster, and every damaged file refused with a
 * message naming it and what is wrong (truncated, torn, a flipped byte,
 * bad magic, a future version, a malformed or inconsistent body), never
 * half loaded; the same bytes encoded and decoded in memory (etcd mode).
 * Each test works in its own temporary directory.
 */
#include "tests/support/check_main.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "common/alloc.h"
#include "common/map.h"
#include "common/placement.h"
#include "proto/buf.h"
#include "proto/topo.h"
#include "server/coord/persist.h"

#define P 1024u
#define V 16u

/* ---- fixture: a temporary data directory ---- */

static char dir[64];
static char state_path[128];
static char tmp_path[128];

static void
setup(void)
{
    strcpy(dir, "/tmp/brim-persist-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(state_path, sizeof(state_path), "%s/%s", dir, BRIM_PERSIST_FILE);
    snprintf(tmp_path, sizeof(tmp_path), "%s/%s", dir, BRIM_PERSIST_TMP);
}

/* Remove DIR and what it holds (files, and directories that are empty). */
static void
teardown(void)
{
    struct dirent *e;
    DIR           *d;
    char           path[384];

    (void) chmod(dir, 0700);
    d = opendir(dir);
    if (d != NULL) {
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
                continue;
            }
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            if (unlink(path) != 0) {
                (void) rmdir(path);
            }
        }
        closedir(d);
    }
    (void) rmdir(dir);
}

/* ---- helpers ---- */

/* The settings every test starts from. */
static void
sample_settings(struct brim_coord_settings *set)
{
    memset(set, 0, sizeof(*set));
    set->cluster_id = 0xc0ffee0123456789ull;
    set->seed = 7;
    set->partitions = P;
    set->tokens_per_node = V;
    set->eps_ppm = 50000;
    set->heartbeat_ms = 500;
    set->dead_after_ms = 3000;
    set->pending_timeout_ms = 5000;
}

/* T = a topology of SET at EPOCH with members node1 .. nodeN (N <= 9), up,
 * and a map placed by the replace rule. */
static void
make_topo(struct brim_topo *t, const struct brim_coord_settings *set,
          uint64_t epoch, uint32_t n)
{
    struct brim_ring ring;
    uint64_t        *pos;
    uint32_t         i;
    int              rc;

    rc = brim_topo_init(t, set->cluster_id, set->seed, set->partitions,
                        set->tokens_per_node, set->eps_ppm, epoch);
    ck_assert_int_eq(rc, 0);
    t->members = brim_calloc(n, sizeof(*t->members));
    ck_assert_ptr_nonnull(t->members);
    t->nmembers = n;
    for (i = 0; i < n; i++) {
        snprintf(t->members[i].name, sizeof(t->members[i].name), "node%u",
                 (unsigned) i + 1);
        snprintf(t->members[i].addr, sizeof(t->members[i].addr), "127.0.0.1:%u",
                 7000u + i);
        t->members[i].weight_ppm = BRIM_WEIGHT_PPM_ONE;
        t->members[i].state = BRIM_MEMBER_UP;
        t->members[i].incarnation = 1000 + i;
    }
    ck_assert_int_eq(brim_topo_ring(t, &ring, 1, NULL), 0);
    pos = brim_malloc(P * sizeof(*pos));
    ck_assert_ptr_nonnull(pos);
    brim_map_positions(set->seed, P, pos);
    rc = brim_place_replace(&ring, set->eps_ppm, pos, P, t->map.owner, NULL);
    ck_assert_int_eq(rc, 0);
    brim_free(pos);
    brim_ring_destroy(&ring);
}

/* ST = a new cluster of the sample settings (brim_coord_state_init). */
static void
new_cluster(struct brim_coord_state *st)
{
    struct brim_coord_settings set;
    char                       errbuf[BRIM_ERRBUF_LEN] = "";
    int                        rc;

    sample_settings(&set);
    rc = brim_coord_state_init(st, &set, errbuf);
    ck_assert_msg(rc == 0, "init: rc=%s (%s)", brim_err_name(rc), errbuf);
}

/* ST = the sample cluster: epoch COMMITTED with 3 nodes, next_epoch NEXT,
 * and, when PENDING is not 0, that epoch pending with a fourth node. */
static void
make_state(struct brim_coord_state *st, uint64_t committed, uint64_t next,
           uint64_t pending)
{
    new_cluster(st);
    brim_topo_destroy(&st->committed);
    make_topo(&st->committed, &st->settings, committed, 3);
    st->next_epoch = next;
    if (pending != 0) {
        make_topo(&st->pending, &st->settings, pending, 4);
        st->has_pending = 1;
    }
}

/* Assert that topologies A and B are equal: their encodings are. */
static void
assert_topo_eq(const struct brim_topo *a, const struct brim_topo *b)
{
    struct brim_buf ea, eb;

    brim_buf_init(&ea);
    brim_buf_init(&eb);
    ck_assert_int_eq(brim_topo_encode(&ea, a), 0);
    ck_assert_int_eq(brim_topo_encode(&eb, b), 0);
    ck_assert_uint_eq(ea.len, eb.len);
    ck_assert_mem_eq(ea.data, eb.data, ea.len);
    brim_buf_destroy(&ea);
    brim_buf_destroy(&eb);
}

/* Assert that states A and B are equal. */
static void
assert_state_eq(const struct brim_coord_state *a,
                const struct brim_coord_state *b)
{
    const struct brim_coord_settings *x = &a->settings, *y = &b->settings;

    ck_assert_uint_eq(x->cluster_id, y->cluster_id);
    ck_assert_uint_eq(x->seed, y->seed);
    ck_assert_uint_eq(x->partitions, y->partitions);
    ck_assert_uint_eq(x->tokens_per_node, y->tokens_per_node);
    ck_assert_uint_eq(x->eps_ppm, y->eps_ppm);
    ck_assert_uint_eq(x->heartbeat_ms, y->heartbeat_ms);
    ck_assert_uint_eq(x->dead_after_ms, y->dead_after_ms);
    ck_assert_uint_eq(x->pending_timeout_ms, y->pending_timeout_ms);
    ck_assert_uint_eq(a->next_epoch, b->next_epoch);
    ck_assert_uint_eq(a->flush_ms, b->flush_ms);
    ck_assert_uint_eq(a->nleaves, b->nleaves);
    for (uint32_t i = 0; i < a->nleaves; i++) {
        ck_assert_str_eq(a->leaves[i], b->leaves[i]);
    }
    assert_topo_eq(&a->committed, &b->committed);
    ck_assert_int_eq(a->has_pending, b->has_pending);
    if (a->has_pending) {
        assert_topo_eq(&a->pending, &b->pending);
    }
}

/* Save ST into the test's directory, which must succeed. */
static void
save_ok(const struct brim_coord_state *st)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_persist_save(dir, st, errbuf);
    ck_assert_msg(rc == 0, "save: rc=%s (%s)", brim_err_name(rc), errbuf);
}

/* The file at PATH: a new buffer (free with free()) and its *LEN. */
static unsigned char *
read_file(const char *path, size_t *len)
{
    unsigned char *buf;
    struct stat    sb;
    ssize_t        r;
    int            fd;

    fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(fstat(fd, &sb), 0);
    buf = malloc((size_t) sb.st_size + 1);
    ck_assert_ptr_nonnull(buf);
    r = read(fd, buf, (size_t) sb.st_size);
    ck_assert_int_eq(r, sb.st_size);
    close(fd);
    *len = (size_t) sb.st_size;
    return buf;
}

/* Replace the file at PATH with DATA (LEN bytes). */
static void
write_file(const char *path, const void *data, size_t len)
{
    int fd;

    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, data, len), (ssize_t) len);
    close(fd);
}

/* Write a state file holding BODY (LEN bytes) with a correct header, so
 * that only the body can be wrong. */
static void
write_body(const void *body, size_t len)
{
    unsigned char *file;
    uint64_t       v;
    int            i;

    file = malloc(BRIM_PERSIST_HDR + len);
    ck_assert_ptr_nonnull(file);
    memcpy(file, "BRIMCRD", 8);
    for (i = 0; i < 4; i++) {
        file[8 + i] = (unsigned char) (BRIM_PERSIST_VERSION >> (8 * i));
    }
    v = len;
    for (i = 0; i < 8; i++) {
        file[12 + i] = (unsigned char) (v >> (8 * i));
    }
    v = XXH3_64bits(body, len);
    for (i = 0; i < 8; i++) {
        file[20 + i] = (unsigned char) (v >> (8 * i));
    }
    memcpy(file + BRIM_PERSIST_HDR, body, len);
    write_file(state_path, file, BRIM_PERSIST_HDR + len);
    free(file);
}

/* Save the sample state (make_state(COMMITTED, NEXT, PENDING)) and
 * return the file's bytes (free with free()) and their count *LEN. */
static unsigned char *
saved_file(uint64_t committed, uint64_t next, uint64_t pending, size_t *len)
{
    struct brim_coord_state st;

    make_state(&st, committed, next, pending);
    save_ok(&st);
    brim_coord_state_destroy(&st);
    return read_file(state_path, len);
}

/* Save a state (epoch 3 committed, next 4) with the leave list
 * ["node3"] and return the file's bytes (free with free()) and *LEN. */
static unsigned char *
saved_leaves_file(size_t *len)
{
    struct brim_coord_state st;

    make_state(&st, 3, 4, 0);
    st.leaves = brim_calloc(1, sizeof(*st.leaves));
    ck_assert_ptr_nonnull(st.leaves);
    st.nleaves = 1;
    strcpy(st.leaves[0], "node3");
    save_ok(&st);
    brim_coord_state_destroy(&st);
    return read_file(state_path, len);
}

/* Assert that loading is refused with RC, ERRBUF naming the file and
 * holding WANT, nothing kept and ST zeroed. */
static void
assert_load_fails(int want_rc, const char *want, const char *what)
{
    struct brim_coord_state st;
    char                    errbuf[BRIM_ERRBUF_LEN] = "";
    size_t                  before;
    int                     rc;

    before = brim_alloc_bytes();
    memset(&st, 0xa5, sizeof(st));
    rc = brim_persist_load(dir, &st, errbuf);
    ck_assert_msg(rc == want_rc, "%s: rc=%s (%s)", what, brim_err_name(rc),
                  errbuf);
    ck_assert_msg(strstr(errbuf, state_path) != NULL,
                  "%s: \"%s\" does not name the file", what, errbuf);
    ck_assert_msg(strstr(errbuf, want) != NULL,
                  "%s: \"%s\" does not say \"%s\"", what, errbuf, want);
    ck_assert_msg(strchr(errbuf, '\n') == NULL, "%s: not one line", what);
    ck_assert_ptr_null(st.committed.members);
    ck_assert_ptr_null(st.committed.map.owner);
    ck_assert_ptr_null(st.pending.map.owner);
    ck_assert_uint_eq(st.next_epoch, 0);
    ck_assert_int_eq(st.has_pending, 0);
    ck_assert_uint_eq(brim_alloc_bytes(), before);
    brim_coord_state_destroy(&st);
}

/* Load the directory's state into ST, which must succeed. */
static void
load_ok(struct brim_coord_state *st)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_persist_load(dir, st, errbuf);
    ck_assert_msg(rc == 0, "load: rc=%s (%s)", brim_err_name(rc), errbuf);
}

/* ---- tests ---- */

START_TEST(persist_round_trip)
{
    struct brim_coord_state st, back;
    size_t                  before;

    before = brim_alloc_bytes();
    make_state(&st, 3, 4, 0);
    save_ok(&st);
    ck_assert_int_eq(access(tmp_path, F_OK), -1); /* renamed away */
    load_ok(&back);
    assert_state_eq(&st, &back);
    ck_assert_int_eq(back.has_pending, 0);
    ck_assert_ptr_null(back.pending.map.owner);
    brim_coord_state_destroy(&back);
    brim_coord_state_destroy(&st);

    /* The last flush mark (the memcached port's flush_all) survives a
     * restart; without one the body stays the four elements it was. */
    make_state(&st, 3, 4, 0);
    st.flush_ms = 1796142702821ull;
    save_ok(&st);
    load_ok(&back);
    assert_state_eq(&st, &back);
    ck_assert_uint_eq(back.flush_ms, 1796142702821ull);
    brim_coord_state_destroy(&back);
    brim_coord_state_destroy(&st);

    /* Accepted leaves no epoch has taken yet survive a restart too, with
     * no flush mark (then written as 0) or with one. */
    make_state(&st, 3, 4, 0);
    st.leaves = brim_calloc(2, sizeof(*st.leaves));
    ck_assert_ptr_nonnull(st.leaves);
    st.nleaves = 2;
    strcpy(st.leaves[0], "node3");
    memset(st.leaves[1], 'n', BRIM_NAME_MAX);
    save_ok(&st);
    load_ok(&back);
    assert_state_eq(&st, &back);
    ck_assert_uint_eq(back.flush_ms, 0);
    brim_coord_state_destroy(&back);
    st.flush_ms = 1796142702821ull;
    save_ok(&st);
    load_ok(&back);
    assert_state_eq(&st, &back);
    brim_coord_state_destroy(&back);
    brim_coord_state_destroy(&st);

    /* A new cluster's state: epoch 0, no members, nothing owned. */
    new_cluster(&st);
    save_ok(&st);
    load_ok(&back);
    assert_state_eq(&st, &back);
    ck_assert_uint_eq(back.committed.nmembers, 0);
    brim_coord_state_destroy(&back);
    brim_coord_state_destroy(&st);
    ck_assert_uint_eq(brim_alloc_bytes(), before);
}
END_TEST

START_TEST(persist_round_trip_pending)
{
    struct brim_coord_state st, back;
    size_t                  before;

    before = brim_alloc_bytes();
    make_state(&st, 3, 5, 4);
    st.settings.eps_ppm = BRIM_EPS_NONE; /* "none" survives too */
    st.committed.eps_ppm = BRIM_EPS_NONE;
    st.pending.eps_ppm = BRIM_EPS_NONE;
    st.pending.members[3].state = BRIM_MEMBER_JOINING;
    save_ok(&st);
    load_ok(&back);
    assert_state_eq(&st, &back);
    ck_assert_int_eq(back.has_pending, 1);
    ck_assert_uint_eq(back.pending.nmembers, 4);
    ck_assert_uint_eq(back.pending.members[3].state, BRIM_MEMBER_JOINING);
    brim_coord_state_destroy(&back);

    /* Saving again without the pending epoch (committed or aborted)
     * replaces it. */
    brim_topo_destroy(&st.pending);
    st.has_pending = 0;
    save_ok(&st);
    load_ok(&back);
    assert_state_eq(&st, &back);
    ck_assert_int_eq(back.has_pending, 0);
    brim_coord_state_destroy(&back);
    brim_coord_state_destroy(&st);
    ck_assert_uint_eq(brim_alloc_bytes(), before);
}
END_TEST

/* The bytes etcd mode stores (server/coord/leader.c): the state file's,
 * encoded and decoded in memory, with the same refusals. */
START_TEST(persist_encode_decode)
{
    struct brim_coord_state st, back;
    struct brim_buf         bytes;
    char                    errbuf[BRIM_ERRBUF_LEN] = "";
    size_t                  before;
    int                     rc;

    before = brim_alloc_bytes();
    make_state(&st, 3, 5, 4);
    rc = brim_persist_encode(&st, &bytes, errbuf);
    ck_assert_msg(rc == 0, "encode: rc=%s (%s)", brim_err_name(rc), errbuf);
    ck_assert_mem_eq(bytes.data, "BRIMCRD", 8);
    rc = brim_persist_decode((const unsigned char *) bytes.data, bytes.len,
                             &back, errbuf);
    ck_assert_msg(rc == 0, "decode: rc=%s (%s)", brim_err_name(rc), errbuf);
    assert_state_eq(&st, &back);
    ck_assert_int_eq(back.has_pending, 1);
    brim_coord_state_destroy(&back);

    /* A flipped body byte fails the checksum; a cut fails the length. */
    bytes.data[BRIM_PERSIST_HDR + 3] ^= 0x40;
    rc = brim_persist_decode((const unsigned char *) bytes.data, bytes.len,
                             &back, errbuf);
    ck_assert_int_eq(rc, BRIM_EINVAL);
    ck_assert_msg(strstr(errbuf, "checksum") != NULL, "%s", errbuf);
    bytes.data[BRIM_PERSIST_HDR + 3] ^= 0x40;
    rc = brim_persist_decode((const unsigned char *) bytes.data, bytes.len - 1,
                             &back, errbuf);
    ck_assert_int_eq(rc, BRIM_EINVAL);
    ck_assert_msg(strstr(errbuf, "torn") != NULL, "%s", errbuf);
    ck_assert_ptr_null(back.committed.map.owner); /* zeroed on error */
    brim_buf_destroy(&bytes);

    /* An inconsistent state is not encoded at all. */
    st.next_epoch = st.pending.map.epoch;
    rc = brim_persist_encode(&st, &bytes, errbuf);
    ck_assert_int_eq(rc, BRIM_EINVAL);
    brim_coord_state_destroy(&st);
    ck_assert_uint_eq(brim_alloc_bytes(), before);
}
END_TEST

START_TEST(persist_missing_is_notfound)
{
    struct brim_coord_state st;
    char                    errbuf[BRIM_ERRBUF_LEN] = "";
    char                    sub[128];

    /* An empty directory: a new cluster. */
    assert_load_fails(BRIM_ENOTFOUND, "", "empty directory");

    /* A state.tmp alone is the remains of a first save cut short: still
     * a new cluster. */
    write_file(tmp_path, "BRIMCRD", 8);
    assert_load_fails(BRIM_ENOTFOUND, "", "only state.tmp");

    /* A missing directory is no state either; a directory where the file
     * should be is refused. */
    snprintf(sub, sizeof(sub), "%s/none", dir);
    ck_assert_int_eq(brim_persist_load(sub, &st, errbuf), BRIM_ENOTFOUND);
    ck_assert_int_eq(mkdir(state_path, 0700), 0);
    ck_assert_int_eq(brim_persist_load(dir, &st, errbuf), BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(errbuf, "not a regular file"));
    ck_assert_int_eq(rmdir(state_path), 0);
}
END_TEST

START_TEST(persist_truncated)
{
    unsigned char *file, *longer;
    size_t         len, i, cuts[9];

    file = saved_file(3, 5, 4, &len);
    ck_assert_uint_gt(len, BRIM_PERSIST_HDR + 2 * 2 * P);

    /* Inside the magic, inside the header, and at several body lengths. */
    cuts[0] = 0;
    cuts[1] = 5;
    cuts[2] = 8;
    cuts[3] = 20;
    cuts[4] = BRIM_PERSIST_HDR - 1;
    cuts[5] = BRIM_PERSIST_HDR;
    cuts[6] = BRIM_PERSIST_HDR + 1;
    cuts[7] = len / 2;
    cuts[8] = len - 1;
    for (i = 0; i < 9; i++) {
        write_file(state_path, file, cuts[i]);
        assert_load_fails(BRIM_EINVAL, "truncated", "a cut file");
    }
    /* Bytes after the body: torn as well. */
    longer = malloc(len + 3);
    ck_assert_ptr_nonnull(longer);
    memcpy(longer, file, len);
    memset(longer + len, 0, 3);
    write_file(state_path, longer, len + 3);
    assert_load_fails(BRIM_EINVAL, "torn", "3 extra bytes");
    free(longer);
    free(file);
}
END_TEST

START_TEST(persist_checksum)
{
    struct brim_coord_state st;
    unsigned char          *file;
    size_t                  len, at[3], i;

    file = saved_file(3, 5, 4, &len);

    /* One flipped bit at the body's start, middle (in a map) and end, and
     * in the stored checksum itself. */
    at[0] = BRIM_PERSIST_HDR;
    at[1] = BRIM_PERSIST_HDR + (len - BRIM_PERSIST_HDR) / 2;
    at[2] = len - 1;
    for (i = 0; i < 3; i++) {
        file[at[i]] ^= 0x10;
        write_file(state_path, file, len);
        assert_load_fails(BRIM_EINVAL, "checksum mismatch", "flipped body");
        file[at[i]] ^= 0x10;
    }
    file[20] ^= 0x01;
    write_file(state_path, file, len);
    assert_load_fails(BRIM_EINVAL, "checksum mismatch", "flipped checksum");
    file[20] ^= 0x01;

    write_file(state_path, file, len);
    load_ok(&st);
    brim_coord_state_destroy(&st);
    free(file);
}
END_TEST

START_TEST(persist_bad_magic)
{
    unsigned char *file;
    size_t         len;

    file = saved_file(3, 4, 0, &len);
    file[0] = 'X';
    write_file(state_path, file, len);
    assert_load_fails(BRIM_EINVAL, "bad magic", "first byte");
    file[0] = 'B';
    file[7] = '1'; /* the NUL that ends the magic */
    write_file(state_path, file, len);
    assert_load_fails(BRIM_EINVAL, "bad magic", "last magic byte");
    /* Another program's file, shorter than a header. */
    write_file(state_path, "{\"epoch\": 3}\n", 13);
    assert_load_fails(BRIM_EINVAL, "bad magic", "a JSON file");
    free(file);
}
END_TEST

START_TEST(persist_future_version)
{
    unsigned char *file;
    size_t         len;

    file = saved_file(3, 4, 0, &len);
    ck_assert_uint_eq(file[8], BRIM_PERSIST_VERSION); /* little-endian */
    file[8] = BRIM_PERSIST_VERSION + 1;
    write_file(state_path, file, len);
    assert_load_fails(BRIM_EINVAL, "format version 2", "version 2");
    file[8] = 0;
    file[11] = 1; /* 2^24: not a byte-swapped 1 either */
    write_file(state_path, file, len);
    assert_load_fails(BRIM_EINVAL, "format version 16777216", "version 2^24");
    free(file);
}
END_TEST

START_TEST(persist_malformed_body)
{
    static const unsigned char huge[] = {0xdd, 0xff, 0xff, 0xff, 0xff};
    static const unsigned char nil[] = {0xc0};
    static const unsigned char two[] = {0x92, 0x01, 0x02};
    unsigned char             *file;
    size_t                     len;

    /* Checksums right, bodies wrong: never handed to msgpack-c's
     * allocating unpacker (an array of 2^32 - 1 asks it for 96 GiB). */
    write_body(huge, sizeof(huge));
    assert_load_fails(BRIM_EINVAL, "malformed body", "huge count");
    write_body("\x91\x01\x02", 3);
    assert_load_fails(BRIM_EINVAL, "malformed body", "trailing byte");
    write_body(nil, sizeof(nil));
    assert_load_fails(BRIM_EINVAL, "array of 4", "nil body");
    write_body(two, sizeof(two));
    assert_load_fails(BRIM_EINVAL, "array of 4", "two numbers");
    write_body("", 0);
    assert_load_fails(BRIM_EINVAL, "malformed body", "empty body");

    /* A good body with a bad topology inside: re-sign a saved file whose
     * owner map was spoilt (partition 0 owned by member 0x0909). The map
     * is the committed topology's last field, before the nil of no
     * pending epoch. */
    file = saved_file(3, 4, 0, &len);
    ck_assert_uint_eq(file[len - 1], 0xc0);
    file[len - 1 - 2 * P] = 9;
    file[len - 1 - 2 * P + 1] = 9;
    write_body(file + BRIM_PERSIST_HDR, len - BRIM_PERSIST_HDR);
    assert_load_fails(BRIM_EINVAL, "owned by member", "owner out of range");
    free(file);

    /* A leave list that is not a list of names. The saved body ends with
     * flush_ms 0, then [ "node3" ]: 0x00 0x91 0xa5 n o d e 3. */
    file = saved_leaves_file(&len);
    ck_assert_uint_eq(file[len - 7], 0x91);
    file[len - 6] = 0x05; /* [5] */
    write_body(file + BRIM_PERSIST_HDR, len - 5 - BRIM_PERSIST_HDR);
    assert_load_fails(BRIM_EINVAL, "leave list entry 0 is not a name",
                      "a number for a name");
    file[len - 7] = 0x90; /* [] */
    write_body(file + BRIM_PERSIST_HDR, len - 6 - BRIM_PERSIST_HDR);
    assert_load_fails(BRIM_EINVAL, "leave list must be an array of 1",
                      "an empty leave list");
    file[len - 7] = 0xc0; /* nil */
    write_body(file + BRIM_PERSIST_HDR, len - 6 - BRIM_PERSIST_HDR);
    assert_load_fails(BRIM_EINVAL, "leave list must be an array of 1",
                      "nil for the leave list");
    free(file);
}
END_TEST

/* Encode ST's body as persist.c does, without its checks, and write it
 * as a signed state file: how a state that save refuses would look. */
static void
write_state_unchecked(const struct brim_coord_state *st)
{
    const struct brim_coord_settings *s = &st->settings;
    msgpack_sbuffer                   sb;
    msgpack_packer                    pk;
    struct brim_buf                   topos;

    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_array(&pk, 8);
    msgpack_pack_uint64(&pk, s->cluster_id);
    msgpack_pack_uint64(&pk, s->seed);
    msgpack_pack_uint32(&pk, s->partitions);
    msgpack_pack_uint32(&pk, s->tokens_per_node);
    msgpack_pack_uint64(&pk, s->eps_ppm);
    msgpack_pack_uint32(&pk, s->heartbeat_ms);
    msgpack_pack_uint32(&pk, s->dead_after_ms);
    msgpack_pack_uint32(&pk, s->pending_timeout_ms);
    msgpack_pack_uint64(&pk, st->next_epoch);
    brim_buf_init(&topos);
    ck_assert_int_eq(brim_topo_encode(&topos, &st->committed), 0);
    if (st->has_pending) {
        ck_assert_int_eq(brim_topo_encode(&topos, &st->pending), 0);
    } else {
        ck_assert_int_eq(brim_buf_append(&topos, "\xc0", 1), 0);
    }
    msgpack_sbuffer_write(&sb, topos.data, topos.len);
    write_body(sb.data, sb.size);
    brim_buf_destroy(&topos);
    msgpack_sbuffer_destroy(&sb);
}

START_TEST(persist_inconsistent)
{
    struct brim_coord_state st, good;
    char                    errbuf[BRIM_ERRBUF_LEN];
    unsigned char          *before, *after;
    size_t                  before_len, after_len;
    int                     rc;

    /* A good state on disk, which no refused save may touch. */
    make_state(&good, 3, 5, 4);
    save_ok(&good);
    before = read_file(state_path, &before_len);

    /* Each broken state: save refuses it, and a file holding it (signed
     * correctly) is refused on load. */
    make_state(&st, 3, 5, 4);
    st.next_epoch = 4; /* pending 4 not below */
    rc = brim_persist_save(dir, &st, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "rc=%s", brim_err_name(rc));
    ck_assert_ptr_nonnull(strstr(errbuf, "pending epoch 4"));
    after = read_file(state_path, &after_len);
    ck_assert_uint_eq(after_len, before_len);
    ck_assert_mem_eq(after, before, before_len);
    free(after);
    ck_assert_int_eq(access(tmp_path, F_OK), -1);
    write_state_unchecked(&st);
    assert_load_fails(BRIM_EINVAL, "pending epoch 4", "pending >= next");
    brim_coord_state_destroy(&st);

    make_state(&st, 3, 3, 0); /* committed not below */
    ck_assert_int_eq(brim_persist_save(dir, &st, errbuf), BRIM_EINVAL);
    write_state_unchecked(&st);
    assert_load_fails(BRIM_EINVAL, "committed epoch 3", "committed >= next");
    brim_coord_state_destroy(&st);

    make_state(&st, 3, 5, 2); /* pending before commit */
    ck_assert_int_eq(brim_persist_save(dir, &st, errbuf), BRIM_EINVAL);
    write_state_unchecked(&st);
    assert_load_fails(BRIM_EINVAL, "pending epoch 2", "pending <= committed");
    brim_coord_state_destroy(&st);

    make_state(&st, 3, 5, 0); /* another cluster's map */
    st.committed.cluster_id++;
    ck_assert_int_eq(brim_persist_save(dir, &st, errbuf), BRIM_EINVAL);
    write_state_unchecked(&st);
    assert_load_fails(BRIM_EINVAL, "differs from the settings", "cluster");
    brim_coord_state_destroy(&st);

    make_state(&st, 3, 5, 0); /* settings out of range */
    st.settings.dead_after_ms = st.settings.heartbeat_ms;
    ck_assert_int_eq(brim_persist_save(dir, &st, errbuf), BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(errbuf, "dead_after_ms"));
    write_state_unchecked(&st);
    assert_load_fails(BRIM_EINVAL, "dead_after_ms", "dead_after_ms");
    brim_coord_state_destroy(&st);

    make_state(&st, 3, 5, 0); /* members out of order */
    memcpy(st.committed.members[0].name, "zed", 4);
    rc = brim_persist_save(dir, &st, errbuf);
    ck_assert_int_eq(rc, BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(errbuf, "sorted"));
    brim_coord_state_destroy(&st);

    /* The good state is still there, byte for byte. */
    write_file(state_path, before, before_len);
    load_ok(&st);
    assert_state_eq(&good, &st);
    brim_coord_state_destroy(&st);
    brim_coord_state_destroy(&good);
    free(before);
}
END_TEST

START_TEST(persist_leftover_tmp_ignored)
{
    struct brim_coord_state st, back;
    unsigned char          *file;
    size_t                  len;

    make_state(&st, 3, 4, 0);
    save_ok(&st);

    /* A crash mid-save of the next epoch left half a state.tmp: the
     * previous state loads. */
    make_state(&back, 3, 6, 5);
    save_ok(&back);
    file = read_file(state_path, &len);
    brim_coord_state_destroy(&back);
    make_state(&back, 3, 4, 0);
    save_ok(&back); /* state is the first one again */
    brim_coord_state_destroy(&back);
    write_file(tmp_path, file, len / 2);
    load_ok(&back);
    assert_state_eq(&st, &back);
    brim_coord_state_destroy(&back);

    /* Even a complete state.tmp (crash between fsync and rename) is not
     * the state: only the rename commits it. */
    write_file(tmp_path, file, len);
    load_ok(&back);
    assert_state_eq(&st, &back);
    brim_coord_state_destroy(&back);

    /* The next save overwrites the leftover and renames it away. */
    st.next_epoch = 9;
    save_ok(&st);
    ck_assert_int_eq(access(tmp_path, F_OK), -1);
    load_ok(&back);
    ck_assert_uint_eq(back.next_epoch, 9);
    brim_coord_state_destroy(&back);
    brim_coord_state_destroy(&st);
    free(file);
}
END_TEST

START_TEST(persist_save_fails)
{
    struct brim_coord_state st, back;
    char                    errbuf[BRIM_ERRBUF_LEN] = "";
    char                    sub[128], *deep;
    int                     rc;

    make_state(&st, 3, 4, 0);

    /* A missing directory. */
    snprintf(sub, sizeof(sub), "%s/missing", dir);
    rc = brim_persist_save(sub, &st, errbuf);
    ck_assert_msg(rc == BRIM_ESYS, "rc=%s", brim_err_name(rc));
    ck_assert_msg(strstr(errbuf, sub) != NULL, "%s", errbuf);
    ck_assert_msg(strstr(errbuf, strerror(ENOENT)) != NULL, "%s", errbuf);

    /* A regular file where the directory should be. */
    write_file(sub, "x", 1);
    errbuf[0] = '\0';
    rc = brim_persist_save(sub, &st, errbuf);
    ck_assert_msg(rc == BRIM_ESYS, "rc=%s", brim_err_name(rc));
    ck_assert_msg(strstr(errbuf, strerror(ENOTDIR)) != NULL, "%s", errbuf);
    ck_assert_int_eq(unlink(sub), 0);

    /* A directory without write permission (root writes anyway). */
    save_ok(&st);
    if (geteuid() != 0) {
        ck_assert_int_eq(chmod(dir, 0500), 0);
        st.next_epoch = 8;
        errbuf[0] = '\0';
        rc = brim_persist_save(dir, &st, errbuf);
        ck_assert_msg(rc == BRIM_ESYS, "rc=%s", brim_err_name(rc));
        ck_assert_msg(strstr(errbuf, strerror(EACCES)) != NULL, "%s", errbuf);
        ck_assert_int_eq(chmod(dir, 0700), 0);
        st.next_epoch = 4;
    }

    /* A path too long for the file names. */
    deep = malloc(PATH_MAX + 16);
    ck_assert_ptr_nonnull(deep);
    memset(deep, 'd', PATH_MAX + 15);
    deep[PATH_MAX + 15] = '\0';
    ck_assert_int_eq(brim_persist_save(deep, &st, errbuf), BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(errbuf, "too long"));
    free(deep);

    /* The state saved before the failures is intact. */
    load_ok(&back);
    assert_state_eq(&st, &back);
    brim_coord_state_destroy(&back);
    brim_coord_state_destroy(&st);
}
END_TEST

START_TEST(persist_epochs_survive)
{
    struct brim_coord_state st;
    uint64_t                e, seen[8];
    int                     i, n, j;

    /* A coordinator's life over restarts: propose, persist, restart,
     * commit or abort, persist, restart. Every epoch it takes comes from
     * the loaded next_epoch, so none repeats, aborted ones included. */
    new_cluster(&st);
    save_ok(&st);
    n = 0;
    for (i = 0; i < 4; i++) {
        brim_coord_state_destroy(&st);
        load_ok(&st); /* restart */
        e = st.next_epoch++;
        for (j = 0; j < n; j++) {
            ck_assert_uint_ne(seen[j], e);
        }
        seen[n++] = e;
        make_topo(&st.pending, &st.settings, e, 3);
        st.has_pending = 1;
        save_ok(&st); /* proposed */

        brim_coord_state_destroy(&st);
        load_ok(&st); /* restart */
        ck_assert_int_eq(st.has_pending, 1);
        ck_assert_uint_eq(st.pending.map.epoch, e);
        ck_assert_uint_eq(st.next_epoch, e + 1);
        if (i % 2 == 0) { /* commit */
            brim_topo_destroy(&st.committed);
            st.committed = st.pending;
            memset(&st.pending, 0, sizeof(st.pending));
        } else { /* abort */
            brim_topo_destroy(&st.pending);
        }
        st.has_pending = 0;
        save_ok(&st);
    }
    brim_coord_state_destroy(&st);
    load_ok(&st);
    ck_assert_uint_eq(st.next_epoch, 5);
    ck_assert_uint_eq(st.committed.map.epoch, 3); /* 1 and 3 committed */
    ck_assert_int_eq(st.has_pending, 0);
    brim_coord_state_destroy(&st);
}
END_TEST

/* Assert that SET is refused with a message holding WANT. */
static void
assert_setting_refused(const struct brim_coord_settings *set, const char *want)
{
    char errbuf[BRIM_ERRBUF_LEN] = "";
    int  rc;

    rc = brim_coord_settings_check(set, errbuf);
    ck_assert_msg(rc == BRIM_EINVAL, "%s: rc=%s", want, brim_err_name(rc));
    ck_assert_msg(strstr(errbuf, want) != NULL, "\"%s\" lacks \"%s\"", errbuf,
                  want);
}

START_TEST(persist_nomem)
{
    struct brim_coord_state st, back;
    char                    errbuf[BRIM_ERRBUF_LEN];
    size_t                  before;
    uint64_t                n;
    int                     rc;

    /* Every allocation of a load and of a save fails in turn: ENOMEM,
     * nothing leaked, nothing half loaded, the file on disk intact. */
    make_state(&st, 3, 5, 4);
    save_ok(&st);
    before = brim_alloc_bytes();
    for (n = 1;; n++) {
        memset(&back, 0xa5, sizeof(back));
        brim_alloc_fail_after(n, 0);
        rc = brim_persist_load(dir, &back, errbuf);
        brim_alloc_fail_after(0, 0);
        if (rc == 0) {
            break;
        }
        ck_assert_msg(rc == BRIM_ENOMEM, "n=%" PRIu64 ": rc=%s", n,
                      brim_err_name(rc));
        ck_assert_ptr_null(back.committed.map.owner);
        ck_assert_ptr_null(back.pending.members);
        ck_assert_uint_eq(brim_alloc_bytes(), before);
    }
    ck_assert_uint_gt(n, 3);
    assert_state_eq(&st, &back);
    brim_coord_state_destroy(&back);

    st.next_epoch = 6;
    for (n = 1;; n++) {
        brim_alloc_fail_after(n, 0);
        rc = brim_persist_save(dir, &st, errbuf);
        brim_alloc_fail_after(0, 0);
        if (rc == 0) {
            break;
        }
        ck_assert_msg(rc == BRIM_ENOMEM, "n=%" PRIu64 ": rc=%s", n,
                      brim_err_name(rc));
        ck_assert_uint_eq(brim_alloc_bytes(), before);
        load_ok(&back);
        ck_assert_uint_eq(back.next_epoch, 5);
        brim_coord_state_destroy(&back);
    }
    load_ok(&back);
    ck_assert_uint_eq(back.next_epoch, 6);
    brim_coord_state_destroy(&back);
    brim_coord_state_destroy(&st);
}
END_TEST

/* The sample settings SET with FIELD set to VALUE are refused, with a
 * message holding WANT. */
#define REFUSED(field, value, want)                                            \
    do {                                                                       \
        sample_settings(&set);                                                 \
        set.field = (value);                                                   \
        assert_setting_refused(&set, (want));                                  \
    } while (0)

START_TEST(persist_settings_check)
{
    struct brim_coord_settings set;
    struct brim_coord_state    st;
    char                       errbuf[BRIM_ERRBUF_LEN];

    sample_settings(&set);
    ck_assert_int_eq(brim_coord_settings_check(&set, errbuf), 0);
    set.eps_ppm = 0; /* eps = 0 is accepted */
    ck_assert_int_eq(brim_coord_settings_check(&set, errbuf), 0);

    /* I04: each bad setting named with its limit; init refuses it too. */
    REFUSED(tokens_per_node, 0, "(V) is 0");
    memset(&st, 0xa5, sizeof(st));
    ck_assert_int_eq(brim_coord_state_init(&st, &set, errbuf), BRIM_EINVAL);
    ck_assert_ptr_null(st.committed.map.owner);
    REFUSED(partitions, 1000, "power of two");
    REFUSED(eps_ppm, BRIM_EPS_PPM_MAX + 1, "eps");
    REFUSED(cluster_id, 0, "cluster id");
    REFUSED(heartbeat_ms, 0, "heartbeat_ms");
    REFUSED(pending_timeout_ms, 0, "pending_timeout_ms");
    REFUSED(dead_after_ms, 400, "dead_after_ms");
    REFUSED(dead_after_ms, 500, "dead_after_ms");

    /* A new cluster's state. */
    sample_settings(&set);
    ck_assert_int_eq(brim_coord_state_init(&st, &set, errbuf), 0);
    ck_assert_uint_eq(st.next_epoch, 1);
    ck_assert_uint_eq(st.committed.map.epoch, 0);
    ck_assert_uint_eq(st.committed.map.npartitions, P);
    ck_assert_uint_eq(st.committed.map.owner[0], BRIM_NODE_NONE);
    ck_assert_uint_eq(st.committed.nmembers, 0);
    ck_assert_int_eq(st.has_pending, 0);
    brim_coord_state_destroy(&st);
}
END_TEST

/* Parse the NUL-terminated TEXT as a leader key value. */
static int
leader_parse(const char *text, struct brim_coord_leader_value *lv)
{
    return brim_coord_leader_parse(text, strlen(text), lv);
}

/* etcd mode's leader key: the three-field value round trips, the older
 * two-field one still parses (no HTTP port), later fields are ignored,
 * and what lacks a name or address or overflows a field is refused
 * with nothing written. */
START_TEST(persist_leader_value)
{
    struct brim_coord_leader_value lv, got;
    char                           buf[BRIM_COORD_LEADER_VALUE_MAX];
    char                           big[200];
    int                            n;

    memset(&lv, 0, sizeof(lv));
    strcpy(lv.name, "c1");
    strcpy(lv.addr, "127.0.0.1:7000");
    strcpy(lv.http, "127.0.0.1:7080");
    n = brim_coord_leader_format(&lv, buf, sizeof(buf));
    ck_assert_int_eq(n, (int) strlen("c1 127.0.0.1:7000 127.0.0.1:7080"));
    ck_assert_str_eq(buf, "c1 127.0.0.1:7000 127.0.0.1:7080");
    ck_assert_int_eq(brim_coord_leader_parse(buf, (size_t) n, &got), 0);
    ck_assert_str_eq(got.name, "c1");
    ck_assert_str_eq(got.addr, "127.0.0.1:7000");
    ck_assert_str_eq(got.http, "127.0.0.1:7080");

    /* No HTTP port: the two-field form, as written before HTTP. */
    lv.http[0] = '\0';
    n = brim_coord_leader_format(&lv, buf, sizeof(buf));
    ck_assert_str_eq(buf, "c1 127.0.0.1:7000");
    ck_assert_int_eq(leader_parse("c2 10.0.0.2:7000", &got), 0);
    ck_assert_str_eq(got.name, "c2");
    ck_assert_str_eq(got.addr, "10.0.0.2:7000");
    ck_assert_str_eq(got.http, "");
    ck_assert_int_eq(leader_parse("c3 a:1 b:2 later fields", &got), 0);
    ck_assert_str_eq(got.http, "b:2");

    /* Refused, *OUT untouched. */
    memset(&got, 0x5a, sizeof(got));
    ck_assert_int_eq(leader_parse("", &got), BRIM_EINVAL);
    ck_assert_int_eq(leader_parse("c1", &got), BRIM_EINVAL);
    ck_assert_int_eq(leader_parse("c1 ", &got), BRIM_EINVAL);
    ck_assert_int_eq(leader_parse(" 127.0.0.1:7000", &got), BRIM_EINVAL);
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    big[2] = ' ';
    ck_assert_int_eq(leader_parse(big, &got), BRIM_EINVAL);
    ck_assert_uint_eq((unsigned char) got.name[0], 0x5a);
    strcpy(lv.addr, "a b");
    ck_assert_int_eq(brim_coord_leader_format(&lv, buf, sizeof(buf)),
                     BRIM_EINVAL);
    strcpy(lv.addr, "127.0.0.1:7000");
    ck_assert_int_eq(brim_coord_leader_format(&lv, buf, 8), BRIM_EINVAL);
}
END_TEST

/* Add the TCase TC holding the one test FN, with the fixture. */
static void
add_case(Suite *s, TCase *tc, const TTest *fn)
{
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, fn);
    suite_add_tcase(s, tc);
}

Suite *
brim_test_suite(void)
{
    Suite *s;

    s = suite_create("persist");
    add_case(s, tcase_create("round_trip"), persist_round_trip);
    add_case(s, tcase_create("round_trip_pending"), persist_round_trip_pending);
    add_case(s, tcase_create("encode_decode"), persist_encode_decode);
    add_case(s, tcase_create("missing_is_notfound"),
             persist_missing_is_notfound);
    add_case(s, tcase_create("truncated"), persist_truncated);
    add_case(s, tcase_create("checksum"), persist_checksum);
    add_case(s, tcase_create("bad_magic"), persist_bad_magic);
    add_case(s, tcase_create("future_version"), persist_future_version);
    add_case(s, tcase_create("malformed_body"), persist_malformed_body);
    add_case(s, tcase_create("inconsistent"), persist_inconsistent);
    add_case(s, tcase_create("leftover_tmp_ignored"),
             persist_leftover_tmp_ignored);
    add_case(s, tcase_create("save_fails"), persist_save_fails);
    add_case(s, tcase_create("epochs_survive"), persist_epochs_survive);
    add_case(s, tcase_create("settings_check"), persist_settings_check);
    add_case(s, tcase_create("nomem"), persist_nomem);
    add_case(s, tcase_create("leader_value"), persist_leader_value);
    return s;
}
