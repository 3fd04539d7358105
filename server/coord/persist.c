/*
 * server/coord/persist.c - brim-coord's state file (see persist.h): the
 * atomic write (temporary file, fsync, rename, fsync of the directory, the
 * sequence of DESIGN.md section 5 and of SQLite's and etcd's write-ahead
 * files) and a load that checks the header, the checksum and the msgpack
 * body, in that order, before it keeps anything. The decoding of the
 * topologies is proto/topo.c's.
 */
#include "server/coord/persist.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <msgpack.h>
#include <xxhash.h>

#include "common/alloc.h"
#include "common/defs.h"
#include "common/placement.h"
#include "proto/buf.h"
#include "proto/wire.h"

/* The file's first 8 bytes. */
static const char persist_magic[8] = {'B', 'R', 'I', 'M', 'C', 'R', 'D', '\0'};

/* Elements of the body array and of its settings array. */
#define PERSIST_BODY_FIELDS 4
#define PERSIST_SETTINGS_FIELDS 8

/* ---- settings and state ---- */

int
brim_coord_settings_check(const struct brim_coord_settings *set,
                          char errbuf[BRIM_ERRBUF_LEN])
{
    if (brim_placement_check(set->tokens_per_node, set->partitions, 0, errbuf)
        != 0) {
        return BRIM_EINVAL;
    }
    if (set->eps_ppm > BRIM_EPS_PPM_MAX && set->eps_ppm != BRIM_EPS_NONE) {
        brim_errfmt(errbuf,
                    "coord: eps is %" PRIu64 " ppm, must be 0 to "
                    "%llu (0 to 1000) or none",
                    set->eps_ppm, BRIM_EPS_PPM_MAX);
        return BRIM_EINVAL;
    }
    if (set->cluster_id == 0) {
        brim_errfmt(errbuf, "coord: cluster id is 0, which means unknown");
        return BRIM_EINVAL;
    }
    if (set->heartbeat_ms == 0 || set->pending_timeout_ms == 0) {
        brim_errfmt(errbuf,
                    "coord: heartbeat_ms is %" PRIu32 " and "
                    "pending_timeout_ms %" PRIu32 ", each must be at least 1",
                    set->heartbeat_ms, set->pending_timeout_ms);
        return BRIM_EINVAL;
    }
    /* A node heartbeating on time must never look dead. */
    if (set->dead_after_ms <= set->heartbeat_ms) {
        brim_errfmt(errbuf,
                    "coord: dead_after_ms is %" PRIu32 ", must be "
                    "above heartbeat_ms (%" PRIu32 ")",
                    set->dead_after_ms, set->heartbeat_ms);
        return BRIM_EINVAL;
    }
    return 0;
}

int
brim_coord_state_init(struct brim_coord_state          *state,
                      const struct brim_coord_settings *set,
                      char                              errbuf[BRIM_ERRBUF_LEN])
{
    int rc;

    memset(state, 0, sizeof(*state));
    rc = brim_coord_settings_check(set, errbuf);
    if (rc != 0) {
        return rc;
    }
    if (brim_topo_init(&state->committed, set->cluster_id, set->seed,
                       set->partitions, set->tokens_per_node, set->eps_ppm, 0)
        != 0)
    {
        brim_errfmt(errbuf,
                    "coord: out of memory for a map of %" PRIu32 " partitions",
                    set->partitions);
        return BRIM_ENOMEM;
    }
    state->settings = *set;
    state->next_epoch = 1;
    return 0;
}

void
brim_coord_state_destroy(struct brim_coord_state *state)
{
    brim_topo_destroy(&state->committed);
    brim_topo_destroy(&state->pending);
    brim_free(state->leaves);
    memset(state, 0, sizeof(*state));
}

/* Check that topology T (WHAT: "committed" or "pending") has SET's
 * placement settings. */
static int
persist_topo_matches(const struct brim_coord_settings *set,
                     const struct brim_topo *t, const char *what, char *errbuf)
{
    if (t->cluster_id != set->cluster_id || t->seed != set->seed
        || t->map.npartitions != set->partitions
        || t->tokens_per_node != set->tokens_per_node
        || t->eps_ppm != set->eps_ppm)
    {
        brim_errfmt(errbuf,
                    "%s topology (cluster %016" PRIx64 ", P %" PRIu32
                    ", V %" PRIu32 ") differs from the settings (cluster "
                    "%016" PRIx64 ", P %" PRIu32 ", V %" PRIu32 ")",
                    what, t->cluster_id, t->map.npartitions, t->tokens_per_node,
                    set->cluster_id, set->partitions, set->tokens_per_node);
        return BRIM_EINVAL;
    }
    return 0;
}

/* The invariants of a state that persist.h promises: settings in range,
 * topologies that carry them, epochs ordered and below next_epoch. */
static int
persist_state_check(const struct brim_coord_state *state, char *errbuf)
{
    const struct brim_topo *c = &state->committed, *p = &state->pending;

    if (brim_coord_settings_check(&state->settings, errbuf) != 0
        || persist_topo_matches(&state->settings, c, "committed", errbuf) != 0
        || (state->has_pending
            && persist_topo_matches(&state->settings, p, "pending", errbuf)
                != 0))
    {
        return BRIM_EINVAL;
    }
    if (c->map.epoch >= state->next_epoch) {
        brim_errfmt(errbuf,
                    "committed epoch %" PRIu64 " is not below "
                    "next_epoch %" PRIu64,
                    c->map.epoch, state->next_epoch);
        return BRIM_EINVAL;
    }
    if (state->has_pending
        && (p->map.epoch <= c->map.epoch || p->map.epoch >= state->next_epoch))
    {
        brim_errfmt(errbuf,
                    "pending epoch %" PRIu64 " is not between the "
                    "committed epoch %" PRIu64 " and next_epoch %" PRIu64,
                    p->map.epoch, c->map.epoch, state->next_epoch);
        return BRIM_EINVAL;
    }
    return 0;
}

/* ---- the body ---- */

/* msgpack_packer write callback: append to the struct brim_buf DATA. */
static int
persist_pack_write(void *data, const char *p, size_t n)
{
    return brim_buf_append(data, p, n) == 0 ? 0 : -1;
}

/* Append ST's body to OUT. Returns 0 or BRIM_ENOMEM. */
static int
persist_encode_body(struct brim_buf *out, const struct brim_coord_state *state)
{
    const struct brim_coord_settings *s = &state->settings;
    msgpack_packer                    pk;
    uint32_t                          i, extra;
    size_t                            n;
    int                               err;

    msgpack_packer_init(&pk, out, persist_pack_write);
    /* The flush mark is a fifth element only once there is one or a leave
     * list follows it, and the leave list a sixth only when not empty, so
     * the file of a cluster never flushed, with no leave waiting, stays
     * what older coordinators read. */
    extra = state->nleaves > 0 ? 2u : state->flush_ms != 0 ? 1u : 0u;
    err = msgpack_pack_array(&pk, PERSIST_BODY_FIELDS + extra);
    err |= msgpack_pack_array(&pk, PERSIST_SETTINGS_FIELDS);
    err |= msgpack_pack_uint64(&pk, s->cluster_id);
    err |= msgpack_pack_uint64(&pk, s->seed);
    err |= msgpack_pack_uint32(&pk, s->partitions);
    err |= msgpack_pack_uint32(&pk, s->tokens_per_node);
    err |= msgpack_pack_uint64(&pk, s->eps_ppm);
    err |= msgpack_pack_uint32(&pk, s->heartbeat_ms);
    err |= msgpack_pack_uint32(&pk, s->dead_after_ms);
    err |= msgpack_pack_uint32(&pk, s->pending_timeout_ms);
    err |= msgpack_pack_uint64(&pk, state->next_epoch);
    if (err != 0 || brim_topo_encode(out, &state->committed) != 0) {
        return BRIM_ENOMEM;
    }
    if (state->has_pending) {
        err = brim_topo_encode(out, &state->pending) == 0 ? 0 : -1;
    } else {
        err = msgpack_pack_nil(&pk);
    }
    if (err == 0 && extra > 0) {
        err = msgpack_pack_uint64(&pk, state->flush_ms);
    }
    if (err == 0 && extra > 1) {
        err = msgpack_pack_array(&pk, state->nleaves);
        for (i = 0; err == 0 && i < state->nleaves; i++) {
            n = strlen(state->leaves[i]);
            err = msgpack_pack_str(&pk, n);
            err |= msgpack_pack_str_body(&pk, state->leaves[i], n);
        }
    }
    return err == 0 ? 0 : BRIM_ENOMEM;
}

/* The elements of O when it is an array of N, else NULL with ERRBUF
 * saying that WHAT must be one. */
static const msgpack_object *
persist_array(const msgpack_object *o, uint32_t n, const char *what,
              char *errbuf)
{
    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != n) {
        brim_errfmt(errbuf, "%s must be an array of %" PRIu32, what, n);
        return NULL;
    }
    return o->via.array.ptr;
}

/* The settings array O into *SET: eight non-negative integers, the u32
 * ones within 32 bits. Ranges are judged later. */
static int
persist_decode_settings(const msgpack_object       *o,
                        struct brim_coord_settings *set, char *errbuf)
{
    const msgpack_object *a;
    uint64_t              v[PERSIST_SETTINGS_FIELDS];
    uint32_t              i;

    a = persist_array(o, PERSIST_SETTINGS_FIELDS, "settings", errbuf);
    if (a == NULL) {
        return BRIM_EINVAL;
    }
    for (i = 0; i < PERSIST_SETTINGS_FIELDS; i++) {
        if (a[i].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
            brim_errfmt(errbuf,
                        "setting %" PRIu32 " is not a non-negative "
                        "integer",
                        i);
            return BRIM_EINVAL;
        }
        v[i] = a[i].via.u64;
    }
    if (v[2] > UINT32_MAX || v[3] > UINT32_MAX || v[5] > UINT32_MAX
        || v[6] > UINT32_MAX || v[7] > UINT32_MAX)
    {
        brim_errfmt(errbuf, "a 32-bit setting is above 2^32 - 1");
        return BRIM_EINVAL;
    }
    set->cluster_id = v[0];
    set->seed = v[1];
    set->partitions = (uint32_t) v[2];
    set->tokens_per_node = (uint32_t) v[3];
    set->eps_ppm = v[4];
    set->heartbeat_ms = (uint32_t) v[5];
    set->dead_after_ms = (uint32_t) v[6];
    set->pending_timeout_ms = (uint32_t) v[7];
    return 0;
}

/* The leave list O (an array of member names) into ST's leaves. Returns
 * 0, BRIM_EINVAL (ERRBUF says why) or BRIM_ENOMEM. */
static int
persist_decode_leaves(const msgpack_object *o, struct brim_coord_state *state,
                      char *errbuf)
{
    const msgpack_object *e;
    uint32_t              i;

    if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size == 0
        || o->via.array.size > BRIM_PERSIST_LEAVES_MAX)
    {
        brim_errfmt(errbuf, "the leave list must be an array of 1 to %d names",
                    BRIM_PERSIST_LEAVES_MAX);
        return BRIM_EINVAL;
    }
    state->leaves = brim_calloc(o->via.array.size, sizeof(*state->leaves));
    if (state->leaves == NULL) {
        brim_errfmt(errbuf, "out of memory reading the leave list");
        return BRIM_ENOMEM;
    }
    for (i = 0; i < o->via.array.size; i++) {
        e = &o->via.array.ptr[i];
        if (e->type != MSGPACK_OBJECT_STR || e->via.str.size == 0
            || e->via.str.size > BRIM_NAME_MAX
            || memchr(e->via.str.ptr, '\0', e->via.str.size) != NULL)
        {
            brim_errfmt(errbuf,
                        "leave list entry %" PRIu32 " is not a name of 1 to "
                        "%d bytes",
                        i, BRIM_NAME_MAX);
            return BRIM_EINVAL;
        }
        memcpy(state->leaves[i], e->via.str.ptr, e->via.str.size);
    }
    state->nleaves = o->via.array.size;
    return 0;
}

/* The unpacked body ROOT into ST (zeroed by the caller; on error it may
 * hold topologies the caller destroys). */
static int
persist_decode_root(const msgpack_object *root, struct brim_coord_state *state,
                    char *errbuf)
{
    const msgpack_object *a;
    char                  why[BRIM_ERRBUF_LEN];
    uint32_t              n;
    int                   rc;

    /* Four elements, five with the last flush mark (Unix ms), six with
     * the leave list too. */
    n = PERSIST_BODY_FIELDS;
    if (root->type == MSGPACK_OBJECT_ARRAY
        && root->via.array.size > PERSIST_BODY_FIELDS
        && root->via.array.size <= PERSIST_BODY_FIELDS + 2)
    {
        n = root->via.array.size;
    }
    a = persist_array(root, n, "the body", errbuf);
    if (a == NULL) {
        return BRIM_EINVAL;
    }
    if (n > PERSIST_BODY_FIELDS) {
        if (a[PERSIST_BODY_FIELDS].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
            brim_errfmt(errbuf, "flush_ms is not a non-negative integer");
            return BRIM_EINVAL;
        }
        state->flush_ms = a[PERSIST_BODY_FIELDS].via.u64;
    }
    if (n > PERSIST_BODY_FIELDS + 1) {
        rc = persist_decode_leaves(&a[PERSIST_BODY_FIELDS + 1], state, errbuf);
        if (rc != 0) {
            return rc;
        }
    }
    rc = persist_decode_settings(&a[0], &state->settings, errbuf);
    if (rc != 0) {
        return rc;
    }
    if (a[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        brim_errfmt(errbuf, "next_epoch is not a non-negative integer");
        return BRIM_EINVAL;
    }
    state->next_epoch = a[1].via.u64;
    rc = brim_topo_decode(&a[2], &state->committed, why);
    if (rc != 0) {
        brim_errfmt(errbuf, "committed %s", why);
        return rc == BRIM_ENOMEM ? rc : BRIM_EINVAL;
    }
    if (a[3].type != MSGPACK_OBJECT_NIL) {
        rc = brim_topo_decode(&a[3], &state->pending, why);
        if (rc != 0) {
            brim_errfmt(errbuf, "pending %s", why);
            return rc == BRIM_ENOMEM ? rc : BRIM_EINVAL;
        }
        state->has_pending = 1;
    }
    return persist_state_check(state, errbuf);
}

/*
 * Decode BODY[0 .. LEN) into ST (uninitialised). The body is walked
 * without allocating (brim_wire_check) before msgpack-c unpacks it, so a
 * corrupt count cannot make it allocate. Returns 0, BRIM_EINVAL (ERRBUF
 * says what is wrong, without the file's name) or BRIM_ENOMEM; on error ST
 * is zeroed.
 */
static int
persist_decode_body(const char *body, size_t len,
                    struct brim_coord_state *state, char *errbuf)
{
    msgpack_zone   zone;
    msgpack_object root;
    int            rc;

    memset(state, 0, sizeof(*state));
    if (!msgpack_zone_init(&zone, MSGPACK_ZONE_CHUNK_SIZE)) {
        brim_errfmt(errbuf, "out of memory unpacking the body");
        return BRIM_ENOMEM;
    }
    rc = brim_wire_unpack(body, len, SIZE_MAX, &zone, &root);
    if (rc == BRIM_EBADREQ) {
        brim_errfmt(errbuf,
                    "malformed body: not one complete msgpack "
                    "object of %zu bytes",
                    len);
        rc = BRIM_EINVAL;
    } else if (rc != 0) {
        brim_errfmt(errbuf, "out of memory unpacking the body");
    } else {
        rc = persist_decode_root(&root, state, errbuf);
    }
    msgpack_zone_destroy(&zone);
    if (rc != 0) {
        brim_coord_state_destroy(state);
    }
    return rc;
}

/* ---- the header ---- */

/* Store V as WIDTH little-endian bytes at P. */
static void
persist_put_le(unsigned char *p, uint64_t v, int width)
{
    int i;

    for (i = 0; i < width; i++) {
        p[i] = (unsigned char) (v >> (8 * i));
    }
}

/* The WIDTH-byte little-endian number at P. */
static uint64_t
persist_get_le(const unsigned char *p, int width)
{
    uint64_t v = 0;
    int      i;

    for (i = width - 1; i >= 0; i--) {
        v = (v << 8) | p[i];
    }
    return v;
}

/* Write the header for the body that follows it in FILE (LEN bytes in
 * all, LEN >= BRIM_PERSIST_HDR). */
static void
persist_put_header(unsigned char *file, size_t len)
{
    size_t body_len = len - BRIM_PERSIST_HDR;

    memcpy(file, persist_magic, sizeof(persist_magic));
    persist_put_le(file + 8, BRIM_PERSIST_VERSION, 4);
    persist_put_le(file + 12, body_len, 8);
    persist_put_le(file + 20, XXH3_64bits(file + BRIM_PERSIST_HDR, body_len),
                   8);
}

/*
 * Check the header of FILE (LEN bytes, the whole file as read): magic,
 * version, body length against LEN, checksum. Returns 0 or BRIM_EINVAL
 * with the reason in ERRBUF (without the file's name).
 */
static int
persist_check_header(const unsigned char *file, size_t len, char *errbuf)
{
    uint64_t version, body_len, sum, want;

    /* A prefix of the magic is a file cut short; anything else is not
     * ours at all. */
    if (memcmp(file, persist_magic, BRIM_MIN(len, sizeof(persist_magic))) != 0)
    {
        brim_errfmt(errbuf, "bad magic: not a brim-coord state file");
        return BRIM_EINVAL;
    }
    if (len < BRIM_PERSIST_HDR) {
        brim_errfmt(errbuf,
                    "truncated: %zu bytes, shorter than the "
                    "%d-byte header",
                    len, BRIM_PERSIST_HDR);
        return BRIM_EINVAL;
    }
    version = persist_get_le(file + 8, 4);
    if (version != BRIM_PERSIST_VERSION) {
        brim_errfmt(errbuf,
                    "format version %" PRIu64 ", this brim-coord "
                    "reads version %d",
                    version, BRIM_PERSIST_VERSION);
        return BRIM_EINVAL;
    }
    body_len = persist_get_le(file + 12, 8);
    if (body_len != len - BRIM_PERSIST_HDR) {
        brim_errfmt(errbuf,
                    "truncated or torn: the header says %" PRIu64
                    " body bytes, the file holds %zu",
                    body_len, len - BRIM_PERSIST_HDR);
        return BRIM_EINVAL;
    }
    sum = persist_get_le(file + 20, 8);
    want = XXH3_64bits(file + BRIM_PERSIST_HDR, (size_t) body_len);
    if (sum != want) {
        brim_errfmt(errbuf,
                    "checksum mismatch: stored %016" PRIx64 ", the "
                    "body hashes to %016" PRIx64 " (corrupt)",
                    sum, want);
        return BRIM_EINVAL;
    }
    return 0;
}

/* ---- files ---- */

/* DIR/NAME into PATH (PATH_MAX bytes). Returns 0 or BRIM_EINVAL. */
static int
persist_path(char *path, const char *dir, const char *name, char *errbuf)
{
    int n;

    n = snprintf(path, PATH_MAX, "%s/%s", dir, name);
    if (n < 0 || n >= PATH_MAX) {
        brim_errfmt(errbuf,
                    "persist: data directory path of %zu bytes is "
                    "too long",
                    strlen(dir));
        return BRIM_EINVAL;
    }
    return 0;
}

/* Write all N bytes of P to FD. Returns 0 or -1 with errno set. */
static int
persist_write_all(int fd, const unsigned char *p, size_t n)
{
    ssize_t w;

    while (n > 0) {
        w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR) {
                continue;
            }
            return -1;
        }
        p += w;
        n -= (size_t) w;
    }
    return 0;
}

/* Write FILE (LEN bytes) to TMP, fsync it, and rename it over PATH. On
 * error TMP is removed and PATH is as it was. */
static int
persist_replace(const char *tmp, const char *path, const unsigned char *file,
                size_t len, char *errbuf)
{
    const char *failed;
    int         fd, err;

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        err = errno;
        brim_errfmt(errbuf, "persist: create %s: %s", tmp, strerror(err));
        return BRIM_ESYS;
    }
    /* The data must be on disk before the rename can make it the state. */
    failed = NULL;
    err = 0;
    if (persist_write_all(fd, file, len) != 0) {
        failed = "write";
    } else if (fsync(fd) != 0) {
        failed = "fsync";
    }
    if (failed != NULL) {
        err = errno;
    }
    if (close(fd) != 0 && failed == NULL) {
        failed = "close";
        err = errno;
    }
    if (failed == NULL && rename(tmp, path) != 0) {
        failed = "rename";
        err = errno;
    }
    if (failed != NULL) {
        brim_errfmt(errbuf, "persist: %s %s: %s", failed, tmp, strerror(err));
        (void) unlink(tmp);
        return BRIM_ESYS;
    }
    return 0;
}

/* fsync directory DIR, so that a rename in it survives a power loss. */
static int
persist_sync_dir(const char *dir, char *errbuf)
{
    int fd, err;

    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        brim_errfmt(errbuf, "persist: open directory %s: %s", dir,
                    strerror(err));
        return BRIM_ESYS;
    }
    /* Some file systems cannot fsync a directory (EINVAL): their renames
     * are as durable as they get. */
    if (fsync(fd) != 0 && errno != EINVAL) {
        err = errno;
        (void) close(fd);
        brim_errfmt(errbuf, "persist: fsync directory %s: %s", dir,
                    strerror(err));
        return BRIM_ESYS;
    }
    (void) close(fd);
    return 0;
}

int
brim_persist_encode(const struct brim_coord_state *state, struct brim_buf *out,
                    char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_coord_state check;
    char                    why[BRIM_ERRBUF_LEN];
    int                     rc;

    brim_buf_init(out);
    rc = brim_buf_reserve(out, BRIM_PERSIST_HDR);
    if (rc == 0) {
        brim_buf_commit(out, BRIM_PERSIST_HDR); /* filled in below */
        rc = persist_encode_body(out, state);
    }
    if (rc != 0) {
        brim_buf_destroy(out);
        brim_errfmt(errbuf, "persist: out of memory encoding the state");
        return rc;
    }
    /* Load what would be written: a state that could not be reloaded is
     * a bug here, and must not replace a good one. */
    rc = persist_decode_body(out->data + BRIM_PERSIST_HDR,
                             out->len - BRIM_PERSIST_HDR, &check, why);
    brim_coord_state_destroy(&check);
    if (rc == 0 && out->len > BRIM_PERSIST_MAX_BYTES) {
        brim_errfmt(why, "%zu bytes, more than a load accepts (%u)", out->len,
                    BRIM_PERSIST_MAX_BYTES);
        rc = BRIM_EINVAL;
    }
    if (rc != 0) {
        brim_buf_destroy(out);
        brim_errfmt(errbuf, "persist: %s: %s",
                    rc == BRIM_ENOMEM ? "checking the state"
                                      : "refusing to save an invalid "
                                        "state",
                    why);
        return rc;
    }
    persist_put_header((unsigned char *) out->data, out->len);
    return 0;
}

int
brim_persist_decode(const unsigned char *data, size_t len,
                    struct brim_coord_state *state,
                    char                     errbuf[BRIM_ERRBUF_LEN])
{
    int rc;

    memset(state, 0, sizeof(*state));
    rc = persist_check_header(data, len, errbuf);
    if (rc == 0) {
        rc = persist_decode_body((const char *) data + BRIM_PERSIST_HDR,
                                 len - BRIM_PERSIST_HDR, state, errbuf);
    }
    return rc;
}

int
brim_persist_save(const char *dir, const struct brim_coord_state *state,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    struct brim_buf file;
    char            path[PATH_MAX], tmp[PATH_MAX];
    int             rc;

    if (persist_path(path, dir, BRIM_PERSIST_FILE, errbuf) != 0
        || persist_path(tmp, dir, BRIM_PERSIST_TMP, errbuf) != 0)
    {
        return BRIM_EINVAL;
    }
    rc = brim_persist_encode(state, &file, errbuf);
    if (rc != 0) {
        return rc;
    }
    rc = persist_replace(tmp, path, (const unsigned char *) file.data, file.len,
                         errbuf);
    brim_buf_destroy(&file);
    if (rc != 0) {
        return rc;
    }
    return persist_sync_dir(dir, errbuf);
}

/*
 * Read the whole of PATH into *DATA (brim_malloc, caller frees) and *LEN.
 * Returns 0, BRIM_ENOTFOUND, BRIM_EINVAL (not a regular file, too big),
 * BRIM_ESYS or BRIM_ENOMEM, with the reason in ERRBUF.
 */
static int
persist_read(const char *path, unsigned char **data, size_t *len, char *errbuf)
{
    struct stat    sb;
    unsigned char *buf;
    size_t         size, got;
    ssize_t        r;
    int            fd, err;

    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        err = errno;
        brim_errfmt(errbuf, "persist: %s: %s", path, strerror(err));
        return err == ENOENT ? BRIM_ENOTFOUND : BRIM_ESYS;
    }
    if (fstat(fd, &sb) != 0) {
        err = errno;
        (void) close(fd);
        brim_errfmt(errbuf, "persist: stat %s: %s", path, strerror(err));
        return BRIM_ESYS;
    }
    if (!S_ISREG(sb.st_mode) || sb.st_size > (off_t) BRIM_PERSIST_MAX_BYTES) {
        (void) close(fd);
        brim_errfmt(errbuf,
                    "persist: %s: not a regular file of at most %u "
                    "bytes",
                    path, BRIM_PERSIST_MAX_BYTES);
        return BRIM_EINVAL;
    }
    size = (size_t) sb.st_size;
    buf = brim_malloc(BRIM_MAX(size, 1));
    if (buf == NULL) {
        (void) close(fd);
        brim_errfmt(errbuf, "persist: %s: out of memory for %zu bytes", path,
                    size);
        return BRIM_ENOMEM;
    }
    /* Read what fstat promised; a file that shrinks meanwhile reads short
     * and fails the length check like a torn one. */
    got = 0;
    while (got < size) {
        r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            err = errno;
            (void) close(fd);
            brim_free(buf);
            brim_errfmt(errbuf, "persist: read %s: %s", path, strerror(err));
            return BRIM_ESYS;
        }
        if (r == 0) {
            break;
        }
        got += (size_t) r;
    }
    (void) close(fd);
    *data = buf;
    *len = got;
    return 0;
}

int
brim_persist_load(const char *dir, struct brim_coord_state *state,
                  char errbuf[BRIM_ERRBUF_LEN])
{
    unsigned char *file;
    char           path[PATH_MAX], why[BRIM_ERRBUF_LEN];
    size_t         len;
    int            rc;

    memset(state, 0, sizeof(*state));
    rc = persist_path(path, dir, BRIM_PERSIST_FILE, errbuf);
    if (rc != 0) {
        return rc;
    }
    rc = persist_read(path, &file, &len, errbuf);
    if (rc != 0) {
        return rc;
    }
    rc = brim_persist_decode(file, len, state, why);
    brim_free(file);
    if (rc != 0) {
        brim_errfmt(errbuf, "persist: %s: %s", path, why);
    }
    return rc;
}

int
brim_coord_leader_format(const struct brim_coord_leader_value *lv, char *out,
                         size_t len)
{
    int n;

    if (lv->name[0] == '\0' || lv->addr[0] == '\0'
        || strchr(lv->name, ' ') != NULL || strchr(lv->addr, ' ') != NULL
        || strchr(lv->http, ' ') != NULL)
    {
        return BRIM_EINVAL;
    }
    n = lv->http[0] == '\0'
        ? snprintf(out, len, "%s %s", lv->name, lv->addr)
        : snprintf(out, len, "%s %s %s", lv->name, lv->addr, lv->http);
    return n < 0 || (size_t) n >= len ? BRIM_EINVAL : n;
}

/* The next space-separated field of [*P, END) into DST (CAP bytes with
 * the NUL); *P moves past it and its space. Returns its length, or -1
 * when it does not fit. */
static int
leader_field(const char **p, const char *end, char *dst, size_t cap)
{
    const char *sp = memchr(*p, ' ', (size_t) (end - *p));
    size_t      n = (size_t) ((sp != NULL ? sp : end) - *p);

    if (n >= cap) {
        return -1;
    }
    memcpy(dst, *p, n);
    dst[n] = '\0';
    *p = sp != NULL ? sp + 1 : end;
    return (int) n;
}

int
brim_coord_leader_parse(const void *value, size_t len,
                        struct brim_coord_leader_value *out)
{
    struct brim_coord_leader_value lv;
    const char                    *p = value, *end = p + len;

    memset(&lv, 0, sizeof(lv));
    if (leader_field(&p, end, lv.name, sizeof(lv.name)) <= 0
        || leader_field(&p, end, lv.addr, sizeof(lv.addr)) <= 0
        || leader_field(&p, end, lv.http, sizeof(lv.http)) < 0)
    {
        return BRIM_EINVAL;
    }
    *out = lv;
    return 0;
}
