/*
 * tests/cluster/client_faults.c - libbrim against a scripted fake node, for
 * what a healthy brim-node never does: malformed and oversized replies,
 * wrong request ids, unsolicited frames, RETRY and MOVED, silence (to a
 * request, or to a reconnect's HELLO), and a connection lost after a
 * request was sent (idempotent ops are sent again; the others report
 * "outcome unknown"). Every case checks that the call returns within its
 * timeout and that the next call works.
 */
#include "tests/support/check_main.h"

#include <inttypes.h>
#include <string.h>

#include <brim.h>

#include "proto/frame.h"
#include "tests/cluster/client_node.h"

/* A connected client to ADDR with REQUEST_TIMEOUT_MS (0: default). */
static struct brim_client *
connect_to(const char *addr, uint32_t request_timeout_ms)
{
    struct brim_client *c;
    struct brim_opts    opts;
    char                err[BRIM_ERRBUF_LEN];
    int                 rc;

    memset(&opts, 0, sizeof(opts));
    opts.server_addr = addr;
    opts.request_timeout_ms = request_timeout_ms;
    rc = brim_connect(&opts, &c, err);
    ck_assert_msg(rc == 0, "connect %s: %s: %s", addr, brim_err_name(rc), err);
    return c;
}

#define ck_rc(expr, want)                                                      \
    do {                                                                       \
        int rc_ = (expr);                                                      \
        ck_assert_msg(rc_ == (want), "%s: got %s, want %s (%s)", #expr,        \
                      brim_err_name(rc_), brim_err_name(want),                 \
                      brim_errmsg(c));                                         \
    } while (0)

/* GET's OK reply with value "v". */
static int
reply_value(const struct brim_req *req, struct brim_buf *out)
{
    struct brim_rep rep;

    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.value = "v";
    rep.value_len = 1;
    rep.flags = 3;
    rep.cas = 99;
    ck_assert_int_eq(brim_wire_encode_rep(out, req->op, &rep), 0);
    return CLIENT_FAKE_REPLY;
}

/* Append a frame whose body is the LEN bytes at BODY. */
static void
raw_frame(struct brim_buf *out, const void *body, uint32_t len)
{
    char hdr[BRIM_FRAME_HDR];

    brim_frame_put_hdr(hdr, len);
    ck_assert_int_eq(brim_buf_append(out, hdr, sizeof(hdr)), 0);
    ck_assert_int_eq(brim_buf_append(out, body, len), 0);
}

/* Connection 0 answers garbage (ARG picks which kind); later ones well. */
static int
script_garbage(struct client_fake *f, int conn, const struct brim_req *req,
               struct brim_buf *out)
{
    struct brim_req wrong;
    char            hdr[BRIM_FRAME_HDR];
    const char     *kind = f->arg;

    if (conn > 0) {
        return req->op == BRIM_OP_GET ? reply_value(req, out)
                                      : client_fake_ok(req, out);
    }
    if (strcmp(kind, "msgpack") == 0) {
        raw_frame(out, "\x93\xc1\x01", 3); /* 0xc1 is reserved */
    } else if (strcmp(kind, "shape") == 0) {
        raw_frame(out, "\x92\x00\x01", 3); /* [0, 1]: no value */
    } else if (strcmp(kind, "id") == 0) {
        wrong = *req;
        wrong.request_id++;
        reply_value(&wrong, out);
    } else if (strcmp(kind, "huge") == 0) {
        brim_frame_put_hdr(hdr, 0x7fffffff); /* 2 GiB announced */
        ck_assert_int_eq(brim_buf_append(out, hdr, sizeof(hdr)), 0);
        return CLIENT_FAKE_SILENT;
    } else { /* "extra" */
        reply_value(req, out);
        client_fake_ok(req, out); /* nobody asked */
    }
    return CLIENT_FAKE_REPLY;
}

static void
garbage_case(const char *kind)
{
    struct brim_client *c;
    struct client_fake  f;
    void               *val;
    size_t              len;
    uint32_t            flags;
    uint64_t            cas;
    int64_t             t0;

    client_fake_start(&f, script_garbage, (void *) kind);
    c = connect_to(f.addr, 2000);
    t0 = client_now_ms();
    if (strcmp(kind, "extra") == 0) {
        /* The reply itself was whole and had the right id: the call
         * succeeds, and the frame after it closes the connection. */
        ck_rc(brim_get(c, "k", 1, &val, &len), 0);
        brim_free(val);
    } else {
        ck_rc(brim_get(c, "k", 1, &val, &len), BRIM_EBADREPLY);
        ck_assert_msg(strstr(brim_errmsg(c), f.addr) != NULL, "errmsg: %s",
                      brim_errmsg(c));
    }
    ck_assert_int_lt(client_now_ms() - t0, 1000); /* no waiting */
    /* A new connection serves the next call. */
    ck_rc(brim_get_ex(c, "k", 1, &val, &len, &flags, &cas), 0);
    ck_assert_uint_eq(len, 1);
    ck_assert_mem_eq(val, "v", 1);
    ck_assert_uint_eq(flags, 3);
    ck_assert_uint_eq(cas, 99);
    brim_free(val);
    ck_assert_int_eq(f.conns, 2);
    brim_close(c);
    client_fake_stop(&f);
}

START_TEST(client_bad_msgpack)
{
    garbage_case("msgpack");
}
END_TEST

START_TEST(client_bad_shape)
{
    garbage_case("shape");
}
END_TEST

START_TEST(client_wrong_id)
{
    garbage_case("id");
}
END_TEST

START_TEST(client_huge_frame)
{
    garbage_case("huge");
}
END_TEST

START_TEST(client_unsolicited)
{
    garbage_case("extra");
}
END_TEST

/* Per-op behaviour for the lost-connection case. */
struct lost_state {
    int sets; /* SETs seen */
    int adds; /* ADDs seen */
};

/* The first SET and every ADD and INCR: close without a reply. */
static int
script_lost(struct client_fake *f, int conn, const struct brim_req *req,
            struct brim_buf *out)
{
    struct lost_state *st = f->arg;

    (void) conn;
    switch (req->op) {
    case BRIM_OP_SET:
        if (st->sets++ == 0) {
            return CLIENT_FAKE_CLOSE;
        }
        return client_fake_ok(req, out);
    case BRIM_OP_ADD:
        st->adds++;
        return CLIENT_FAKE_CLOSE;
    case BRIM_OP_INCR:
        return CLIENT_FAKE_CLOSE;
    default:
        return client_fake_ok(req, out);
    }
}

START_TEST(client_lost_connection)
{
    struct brim_client *c;
    struct client_fake  f;
    struct lost_state   st;
    uint64_t            n;

    memset(&st, 0, sizeof(st));
    client_fake_start(&f, script_lost, &st);
    c = connect_to(f.addr, 2000);
    /* SET is idempotent: sent again on a new connection, and succeeds. */
    ck_rc(brim_set(c, "k", 1, "v", 1, 0, 0, NULL), 0);
    ck_assert_int_eq(st.sets, 2);
    /* ADD is not: its outcome is unknown, and it is sent once only. */
    ck_rc(brim_add(c, "k", 1, "v", 1, 0, 0, NULL), BRIM_EUNKNOWN);
    ck_assert_int_eq(st.adds, 1);
    ck_rc(brim_incr(c, "k", 1, 1, &n), BRIM_EUNKNOWN);
    ck_rc(brim_ping(c), 0);
    brim_close(c);
    client_fake_stop(&f);
}
END_TEST

/* RETRY for the first *ARG requests, then the value. */
static int
script_retry(struct client_fake *f, int conn, const struct brim_req *req,
             struct brim_buf *out)
{
    int *left = f->arg;

    (void) conn;
    if (*left < 0 || (*left)-- > 0) {
        return client_fake_err(req, BRIM_ERETRY, out);
    }
    return reply_value(req, out);
}

START_TEST(client_retry)
{
    struct brim_client *c;
    struct client_fake  f;
    void               *val;
    size_t              len;
    int64_t             t0, dt;
    int                 left;

    left = 3;
    client_fake_start(&f, script_retry, &left);
    c = connect_to(f.addr, 500);
    ck_rc(brim_get(c, "k", 1, &val, &len), 0); /* RETRY is hidden */
    brim_free(val);
    ck_assert_int_eq(f.requests, 4);
    ck_assert_int_eq(f.conns, 1); /* same connection */
    /* A node that says RETRY forever: the call ends at its timeout. */
    left = -1;
    t0 = client_now_ms();
    ck_rc(brim_get(c, "k", 1, &val, &len), BRIM_ETIMEDOUT);
    dt = client_now_ms() - t0;
    ck_assert_msg(dt >= 450 && dt < 1500, "took %" PRId64 " ms", dt);
    brim_close(c);
    client_fake_stop(&f);
}
END_TEST

/* MOVED to the address in ARG (epoch 5), or the value when ARG is NULL. */
static int
script_moved(struct client_fake *f, int conn, const struct brim_req *req,
             struct brim_buf *out)
{
    struct brim_rep rep;
    const char     *owner = f->arg;

    (void) conn;
    if (owner == NULL) {
        return reply_value(req, out);
    }
    memset(&rep, 0, sizeof(rep));
    rep.request_id = req->request_id;
    rep.status = BRIM_EMOVED;
    rep.message = "moved";
    rep.message_len = 5;
    rep.epoch = 5;
    rep.owner = owner;
    rep.owner_len = strlen(owner);
    ck_assert_int_eq(brim_wire_encode_rep(out, req->op, &rep), 0);
    return CLIENT_FAKE_REPLY;
}

START_TEST(client_moved)
{
    struct brim_client *c;
    struct client_fake  a, b;
    void               *val;
    size_t              len;

    client_fake_start(&b, script_moved, NULL);
    client_fake_start(&a, script_moved, b.addr);
    c = connect_to(a.addr, 1000);
    ck_rc(brim_get(c, "k", 1, &val, &len), 0); /* followed to B */
    ck_assert_mem_eq(val, "v", 1);
    brim_free(val);
    ck_assert_int_eq(b.requests, 1);
    /* B now points back to A at the same epoch: one redirect per epoch,
     * so the call ends with MOVED instead of bouncing. */
    b.arg = a.addr;
    ck_rc(brim_get(c, "k2", 2, &val, &len), BRIM_EMOVED);
    brim_close(c);
    client_fake_stop(&a);
    client_fake_stop(&b);
}
END_TEST

/* Never answer a data op. */
static int
script_silent(struct client_fake *f, int conn, const struct brim_req *req,
              struct brim_buf *out)
{
    (void) f;
    (void) conn;
    if (req->op == BRIM_OP_PING) {
        return client_fake_ok(req, out);
    }
    return CLIENT_FAKE_SILENT;
}

START_TEST(client_silent_node)
{
    struct brim_client *c;
    struct client_fake  f;
    int64_t             t0, dt;

    client_fake_start(&f, script_silent, NULL);
    c = connect_to(f.addr, 300);
    t0 = client_now_ms();
    ck_rc(brim_set(c, "k", 1, "v", 1, 0, 0, NULL), BRIM_ETIMEDOUT);
    dt = client_now_ms() - t0;
    ck_assert_msg(dt >= 250 && dt < 1500, "took %" PRId64 " ms", dt);
    ck_rc(brim_ping(c), 0); /* on a new connection */
    ck_assert_int_eq(f.conns, 2);
    brim_close(c);
    client_fake_stop(&f);
}
END_TEST

/* Connection 0 answers HELLO, then closes on the first data op; from
 * then on HELLO gets no answer (a node stopped with SIGSTOP: the kernel
 * still accepts connections). Runs on the fake's thread, which alone
 * reads ANSWER_HELLO. */
static int
script_hello_off(struct client_fake *f, int conn, const struct brim_req *req,
                 struct brim_buf *out)
{
    (void) conn;
    (void) req;
    (void) out;
    f->answer_hello = 0;
    return CLIENT_FAKE_CLOSE;
}

/*
 * A reconnect whose HELLO gets no reply gives up at the sooner of the
 * connect timeout and the call's deadline, and the message names the
 * timeout that ran out, with its value.
 */
START_TEST(client_hello_timeout)
{
    struct brim_client *c;
    struct client_fake  f;
    struct brim_opts    opts;
    char                err[BRIM_ERRBUF_LEN];
    int64_t             t0, dt;

    /* request_timeout_ms 700 < connect_timeout_ms 1000 (the default). */
    client_fake_start(&f, script_hello_off, NULL);
    c = connect_to(f.addr, 700);
    t0 = client_now_ms();
    ck_rc(brim_ping(c), BRIM_ETIMEDOUT);
    dt = client_now_ms() - t0;
    ck_assert_msg(dt >= 600 && dt < 1000, "took %" PRId64 " ms", dt);
    ck_assert_int_eq(f.conns, 2);
    ck_assert_msg(strstr(brim_errmsg(c), "no HELLO reply") != NULL
                      && strstr(brim_errmsg(c), "(request timeout 700 ms)")
                          != NULL,
                  "errmsg: %s", brim_errmsg(c));
    brim_close(c);
    client_fake_stop(&f);

    /* connect_timeout_ms 300 < request_timeout_ms 5000. */
    client_fake_start(&f, script_hello_off, NULL);
    memset(&opts, 0, sizeof(opts));
    opts.server_addr = f.addr;
    opts.connect_timeout_ms = 300;
    ck_assert_int_eq(brim_connect(&opts, &c, err), 0);
    t0 = client_now_ms();
    ck_rc(brim_ping(c), BRIM_ETIMEDOUT);
    dt = client_now_ms() - t0;
    ck_assert_msg(dt >= 250 && dt < 2000, "took %" PRId64 " ms", dt);
    ck_assert_msg(strstr(brim_errmsg(c), "(connect timeout 300 ms)") != NULL,
                  "errmsg: %s", brim_errmsg(c));
    brim_close(c);
    client_fake_stop(&f);
}
END_TEST

/* On connection 0, an error with request id 0 for the whole connection
 * (status *ARG), then a close; later connections answer OK. */
static int
script_conn_error(struct client_fake *f, int conn, const struct brim_req *req,
                  struct brim_buf *out)
{
    int *status = f->arg;

    if (conn > 0) {
        return client_fake_ok(req, out);
    }
    ck_assert_int_eq(brim_wire_encode_status(out, 0, *status, "full", 4), 0);
    return CLIENT_FAKE_CLOSE;
}

START_TEST(client_connection_error)
{
    struct brim_client *c;
    struct client_fake  f;
    int                 status;

    /* BUSY proves the op did not run: resent on a new connection. */
    status = BRIM_EBUSY;
    client_fake_start(&f, script_conn_error, &status);
    c = connect_to(f.addr, 1000);
    ck_rc(brim_ping(c), 0);
    ck_assert_int_eq(f.conns, 2);
    brim_close(c);
    client_fake_stop(&f);

    /* BADREQ is final, and its message reaches brim_errmsg(). */
    status = BRIM_EBADREQ;
    client_fake_start(&f, script_conn_error, &status);
    c = connect_to(f.addr, 1000);
    ck_rc(brim_ping(c), BRIM_EBADREQ);
    ck_assert_msg(strstr(brim_errmsg(c), "full") != NULL, "errmsg: %s",
                  brim_errmsg(c));
    ck_rc(brim_ping(c), 0);
    brim_close(c);
    client_fake_stop(&f);
}
END_TEST

/* BUSY for the first *ARG requests, then OK. */
static int
script_busy(struct client_fake *f, int conn, const struct brim_req *req,
            struct brim_buf *out)
{
    int *left = f->arg;

    (void) conn;
    if ((*left)-- > 0) {
        return client_fake_err(req, BRIM_EBUSY, out);
    }
    return client_fake_ok(req, out);
}

START_TEST(client_busy)
{
    struct brim_client *c;
    struct client_fake  f;
    int                 left;

    left = 2;
    client_fake_start(&f, script_busy, &left);
    c = connect_to(f.addr, 1000);
    ck_rc(brim_incr(c, "n", 1, 1, NULL), 0); /* even non-idempotent */
    ck_assert_int_eq(f.requests, 3);
    brim_close(c);
    client_fake_stop(&f);
}
END_TEST

/* MGET: entry 0 "did not fit" (TOOBIG), entry 1 a hit; GET: the value. */
static int
script_mget(struct client_fake *f, int conn, const struct brim_req *req,
            struct brim_buf *out)
{
    size_t mark;
    int   *short_reply = f->arg;

    (void) conn;
    if (req->op != BRIM_OP_MGET) {
        return reply_value(req, out);
    }
    ck_assert_int_eq(req->nkeys, 2);
    ck_assert_int_eq(
        brim_wire_mget_begin(out, req->request_id, *short_reply ? 1 : 2, &mark),
        0);
    ck_assert_int_eq(brim_wire_mget_miss(out, BRIM_ETOOBIG), 0);
    if (!*short_reply) {
        ck_assert_int_eq(brim_wire_mget_hit(out, "w", 1, 1, 2), 0);
    }
    ck_assert_int_eq(brim_frame_end(out, mark), 0);
    return CLIENT_FAKE_REPLY;
}

START_TEST(client_mget_again)
{
    struct brim_client     *c;
    struct client_fake      f;
    struct brim_key         keys[2] = {{"a", 1}, {"b", 1}};
    struct brim_mget_result res[2];
    int                     short_reply;

    short_reply = 0;
    client_fake_start(&f, script_mget, &short_reply);
    c = connect_to(f.addr, 1000);
    ck_rc(brim_mget(c, keys, 2, res), 0);
    ck_assert_int_eq(res[0].status, 0); /* fetched by GET */
    ck_assert_mem_eq(res[0].val, "v", 1);
    ck_assert_int_eq(res[1].status, 0);
    ck_assert_mem_eq(res[1].val, "w", 1);
    ck_assert_int_eq(f.requests, 2);
    brim_mget_free(res, 2);
    /* One entry for two keys does not fit the request. */
    short_reply = 1;
    ck_rc(brim_mget(c, keys, 2, res), BRIM_EBADREPLY);
    ck_assert_int_eq(res[0].status, BRIM_EBADREPLY);
    ck_assert_int_eq(res[1].status, BRIM_EBADREPLY);
    brim_mget_free(res, 2);
    brim_close(c);
    client_fake_stop(&f);
}
END_TEST

Suite *
brim_test_suite(void)
{
    Suite *s;
    TCase *tc;

    s = suite_create("client_faults");

#define FAULT_CASE(tcase, fn)                                                  \
    tc = (tcase);                                                              \
    tcase_set_timeout(tc, 30);                                                 \
    tcase_add_test(tc, fn);                                                    \
    suite_add_tcase(s, tc)

    FAULT_CASE(tcase_create("bad_msgpack"), client_bad_msgpack);
    FAULT_CASE(tcase_create("bad_shape"), client_bad_shape);
    FAULT_CASE(tcase_create("wrong_id"), client_wrong_id);
    FAULT_CASE(tcase_create("huge_frame"), client_huge_frame);
    FAULT_CASE(tcase_create("unsolicited"), client_unsolicited);
    FAULT_CASE(tcase_create("lost_connection"), client_lost_connection);
    FAULT_CASE(tcase_create("retry"), client_retry);
    FAULT_CASE(tcase_create("moved"), client_moved);
    FAULT_CASE(tcase_create("silent_node"), client_silent_node);
    FAULT_CASE(tcase_create("hello_timeout"), client_hello_timeout);
    FAULT_CASE(tcase_create("connection_error"), client_connection_error);
    FAULT_CASE(tcase_create("busy"), client_busy);
    FAULT_CASE(tcase_create("mget_again"), client_mget_again);
#undef FAULT_CASE
    return s;
}
