/*
 * tests/unit/test_client_link.c - the client transport of client/net/
 * (link.h): the reply matcher on whole, split and out-of-step frames, the
 * FIFO of requests in flight (replies taken in order, with their tags),
 * the HELLO and AUTH handshake driven by fed replies (the server's side
 * computed here with proto/auth.h), stream offsets, and the blocking
 * helpers over a socketpair. No server: every byte a peer would send is
 * built with proto/wire.h.
 */
#include "tests/support/check_main.h"

#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>

#include <msgpack.h>

#include "client/net/link.h"
#include "client/net/sock.h"
#include "proto/auth.h"
#include "proto/buf.h"
#include "proto/frame.h"
#include "proto/ops.h"
#include "proto/wire.h"

/* What the peer sends (encoded replies) and what it decodes. */
static struct brim_buf  peer;
static msgpack_zone     zone;
static struct brim_link lk;
static int              sv[2] = {-1, -1}; /* link end, peer end */

static void
setup(void)
{
    brim_buf_init(&peer);
    ck_assert(msgpack_zone_init(&zone, 4096));
    memset(&lk, 0, sizeof(lk));
    lk.fd = -1;
}

static void
teardown(void)
{
    brim_link_destroy(&lk);
    if (sv[1] >= 0) {
        close(sv[1]);
    }
    sv[0] = sv[1] = -1;
    msgpack_zone_destroy(&zone);
    brim_buf_destroy(&peer);
}

/* Init LINK with HELLO (when HELLO) and SECRET, attached to a fresh
 * socketpair whose other end is sv[1]. */
static void
link_up(int hello, const struct brim_auth_secret *secret)
{
    struct brim_link_conf conf;

    memset(&conf, 0, sizeof(conf));
    conf.hello = hello;
    conf.role = BRIM_ROLE_CLIENT;
    conf.name = "tester";
    conf.secret = secret;
    ck_assert_int_eq(brim_link_init(&lk, "127.0.0.1:9", &conf), 0);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
                     0);
    ck_assert_int_eq(brim_link_attach(&lk, sv[0]), 0);
}

/* Attach LINK (made by link_up()) to a fresh socketpair instead. */
static void
link_reattach(void)
{
    close(sv[1]);
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv),
                     0);
    ck_assert_int_eq(brim_link_attach(&lk, sv[0]), 0);
}

/* The I-th request frame in LINK's send queue, decoded into *REQ. */
static void
queued_req(size_t i, struct brim_req *req)
{
    struct brim_wire_limits lim;
    struct brim_buf        *q = brim_link_outbuf(&lk);
    size_t                  off = 0;
    uint32_t                len;

    brim_wire_limits_default(&lim);
    for (;;) {
        ck_assert_int_eq(brim_frame_peek(q->data + off, q->len - off,
                                         lim.max_frame_bytes, &len),
                         0);
        if (i-- == 0) {
            break;
        }
        off += BRIM_FRAME_HDR + len;
    }
    ck_assert_int_eq(brim_wire_parse_req(q->data + off + BRIM_FRAME_HDR, len,
                                         &lim, &zone, req, NULL),
                     0);
}

/* A GET reply [0, ID, VALUE] appended to the peer's bytes. */
static void
peer_value(uint64_t id, const char *value)
{
    struct brim_rep r;

    memset(&r, 0, sizeof(r));
    r.request_id = id;
    r.value = value;
    r.value_len = strlen(value);
    ck_assert_int_eq(brim_wire_encode_rep(&peer, BRIM_OP_GET, &r), 0);
}

/* HELLO's OK reply to ID, with a value limit of 4096 bytes. */
static void
peer_hello(uint64_t id)
{
    struct brim_rep r;

    memset(&r, 0, sizeof(r));
    r.request_id = id;
    r.epoch = 7;
    r.hello.version = BRIM_WIRE_VERSION;
    r.hello.role = BRIM_ROLE_NODE;
    r.hello.cluster_id = 42;
    r.hello.incarnation = 99;
    r.hello.name = "n1";
    r.hello.name_len = 2;
    brim_wire_limits_default(&r.limits);
    r.limits.max_value_bytes = 4096;
    r.limits.max_key_bytes = 16;
    r.limits.max_frame_bytes = 4096 + 16 + 1024;
    ck_assert_int_eq(brim_wire_encode_rep(&peer, BRIM_OP_HELLO, &r), 0);
}

/* Feed the peer's bytes to LINK and forget them. */
static void
feed_peer(void)
{
    ck_assert_int_eq(brim_link_feed(&lk, peer.data, peer.len), 0);
    brim_buf_truncate(&peer, 0);
}

/* A request of OP queued on LINK with TAG; its id. */
static uint64_t
queue_op(uint32_t op, void *tag)
{
    struct brim_req req;

    memset(&req, 0, sizeof(req));
    req.op = op;
    req.key = "k";
    req.key_len = 1;
    ck_assert_int_eq(brim_link_queue(&lk, &req, NULL, 0, tag), 0);
    return req.request_id;
}

/* ---- the matcher ---- */

/* A reply cut anywhere is not taken; whole, it is taken exactly. */
START_TEST(link_parse_split)
{
    struct brim_wire_limits lim;
    struct brim_rep         rep;
    size_t                  i;

    brim_wire_limits_default(&lim);
    peer_value(3, "hello");
    for (i = 0; i < peer.len; i++) {
        ck_assert_int_eq(brim_link_parse(&lim, &zone, BRIM_OP_GET, 3, peer.data,
                                         i, &rep, NULL),
                         0);
    }
    ck_assert_int_eq(brim_link_parse(&lim, &zone, BRIM_OP_GET, 3, peer.data,
                                     peer.len, &rep, NULL),
                     (long) peer.len);
    ck_assert_uint_eq(rep.value_len, 5);
    ck_assert_mem_eq(rep.value, "hello", 5);
}
END_TEST

/* Another id is out of step; id 0 answers only as an error reply. */
START_TEST(link_parse_ids)
{
    struct brim_wire_limits lim;
    struct brim_rep         rep;
    char                    err[BRIM_ERRBUF_LEN];

    brim_wire_limits_default(&lim);
    peer_value(5, "x");
    ck_assert_int_eq(brim_link_parse(&lim, &zone, BRIM_OP_GET, 2, peer.data,
                                     peer.len, &rep, err),
                     BRIM_EBADREPLY);
    ck_assert_str_eq(err, "reply id 5 to GET, expected 2");
    brim_buf_truncate(&peer, 0);
    peer_value(0, "x");
    ck_assert_int_eq(brim_link_parse(&lim, &zone, BRIM_OP_GET, 2, peer.data,
                                     peer.len, &rep, err),
                     BRIM_EBADREPLY);
    brim_buf_truncate(&peer, 0);
    ck_assert_int_eq(brim_wire_encode_status(&peer, 0, BRIM_ETOOBIG, "big", 3),
                     0);
    ck_assert_int_eq(brim_link_parse(&lim, &zone, BRIM_OP_GET, 2, peer.data,
                                     peer.len, &rep, err),
                     (long) peer.len);
    ck_assert_int_eq(rep.status, BRIM_ETOOBIG);
    ck_assert_uint_eq(rep.request_id, 0);
}
END_TEST

/* A frame above max_frame_bytes is refused from its header alone. */
START_TEST(link_parse_toobig)
{
    struct brim_wire_limits lim;
    struct brim_rep         rep;
    char                    hdr[BRIM_FRAME_HDR], err[BRIM_ERRBUF_LEN];

    brim_wire_limits_default(&lim);
    lim.max_frame_bytes = 1000;
    hdr[0] = 0;
    hdr[1] = 0;
    hdr[2] = 0x03;
    hdr[3] = (char) 0xe9; /* 1001 bytes */
    ck_assert_int_eq(brim_link_parse(&lim, &zone, BRIM_OP_GET, 1, hdr,
                                     sizeof(hdr), &rep, err),
                     BRIM_EBADREPLY);
    ck_assert_str_eq(err, "reply frame above 1000 bytes");
}
END_TEST

/* ---- requests in flight ---- */

/* Pipelined requests: replies fed in one piece come out in order, each
 * with its request's tag and op; then nothing. */
START_TEST(link_take_in_order)
{
    struct brim_link_reply r;
    struct brim_req        req;
    int                    tags[3];
    uint64_t               ids[3];
    int                    i;

    link_up(0, NULL);
    for (i = 0; i < 3; i++) {
        ids[i] = queue_op(BRIM_OP_GET, &tags[i]);
    }
    ck_assert_uint_eq(ids[0], 1);
    ck_assert_uint_eq(ids[2], 3);
    ck_assert_uint_eq(brim_link_inflight(&lk), 3);
    queued_req(2, &req);
    ck_assert_uint_eq(req.request_id, 3);
    ck_assert_uint_eq(req.op, BRIM_OP_GET);
    peer_value(1, "a");
    peer_value(2, "bb");
    peer_value(3, "ccc");
    feed_peer();
    for (i = 0; i < 3; i++) {
        ck_assert_int_eq(brim_link_take(&lk, &r), 1);
        ck_assert_ptr_eq(r.tag, &tags[i]);
        ck_assert_uint_eq(r.id, ids[i]);
        ck_assert_uint_eq(r.op, BRIM_OP_GET);
        ck_assert_uint_eq(r.rep.value_len, (size_t) i + 1);
    }
    ck_assert_int_eq(brim_link_take(&lk, &r), 0);
    ck_assert_uint_eq(brim_link_inflight(&lk), 0);
}
END_TEST

/* A frame with nothing in flight, or answering the wrong request, puts
 * the stream out of step. */
START_TEST(link_take_out_of_step)
{
    struct brim_link_reply r;

    link_up(0, NULL);
    peer_value(1, "a");
    feed_peer();
    ck_assert_int_eq(brim_link_take(&lk, &r), BRIM_EBADREPLY);
    ck_assert_str_eq(lk.err,
                     "127.0.0.1:9: unsolicited frame from the "
                     "node");
    link_reattach();
    (void) queue_op(BRIM_OP_GET, NULL);
    (void) queue_op(BRIM_OP_GET, NULL);
    peer_value(2, "b");
    feed_peer();
    ck_assert_int_eq(brim_link_take(&lk, &r), BRIM_EBADREPLY);
    ck_assert_msg(strstr(lk.err, "reply id 2 to GET, expected 1") != NULL,
                  "err: %s", lk.err);
}
END_TEST

/* Bytes queued take their places in the send stream; a flush moves the
 * sent mark past them, and the queue starts over. */
START_TEST(link_stream_offsets)
{
    uint64_t start1, start2;

    link_up(0, NULL);
    start1 = brim_link_queued(&lk);
    (void) queue_op(BRIM_OP_GET, NULL);
    start2 = brim_link_queued(&lk);
    (void) queue_op(BRIM_OP_DEL, NULL);
    ck_assert_uint_gt(start2, start1);
    ck_assert_uint_eq(brim_link_sent(&lk), 0);
    ck_assert_uint_eq(brim_link_unsent(&lk), brim_link_queued(&lk));
    ck_assert_int_eq(brim_link_flush(&lk), 0);
    ck_assert_uint_eq(brim_link_unsent(&lk), 0);
    ck_assert_uint_gt(brim_link_sent(&lk), start2);
    ck_assert_uint_eq(brim_link_outbuf(&lk)->len, 0);
    ck_assert_uint_eq(brim_link_queued(&lk), brim_link_sent(&lk));
}
END_TEST

/* ---- the handshake ---- */

/* HELLO is queued at attach; its reply gives the limits and the peer, and
 * the link is READY with nothing handed out. */
START_TEST(link_hello)
{
    struct brim_link_reply r;
    struct brim_req        req;

    link_up(1, NULL);
    ck_assert_int_eq(lk.state, BRIM_LINK_HELLO);
    queued_req(0, &req);
    ck_assert_uint_eq(req.op, BRIM_OP_HELLO);
    ck_assert_uint_eq(req.hello.role, BRIM_ROLE_CLIENT);
    ck_assert_uint_eq(req.hello.name_len, 6);
    ck_assert_mem_eq(req.hello.name, "tester", 6);
    peer_hello(req.request_id);
    feed_peer();
    ck_assert_int_eq(brim_link_take(&lk, &r), 0);
    ck_assert_int_eq(lk.state, BRIM_LINK_READY);
    ck_assert_uint_eq(lk.limits.max_value_bytes, 4096);
    ck_assert_uint_eq(lk.peer.cluster_id, 42);
    ck_assert_uint_eq(lk.peer.incarnation, 99);
    ck_assert_uint_eq(lk.peer.epoch, 7);
    ck_assert_uint_eq(lk.peer.role, BRIM_ROLE_NODE);
    ck_assert_uint_eq(brim_link_inflight(&lk), 0);
}
END_TEST

/* A refused HELLO is its status, and ERR quotes the peer; with request
 * id 0 it refused the connection, which closes. */
START_TEST(link_hello_refused)
{
    struct brim_link_reply r;
    struct brim_req        req;

    link_up(1, NULL);
    queued_req(0, &req);
    ck_assert_int_eq(brim_wire_encode_status(&peer, req.request_id,
                                             BRIM_EDENIED, "another cluster",
                                             15),
                     0);
    feed_peer();
    ck_assert_int_eq(brim_link_take(&lk, &r), BRIM_EDENIED);
    ck_assert_str_eq(lk.err, "127.0.0.1:9: HELLO: another cluster");
    link_reattach();
    ck_assert_int_eq(brim_wire_encode_status(&peer, 0, BRIM_ETOOBIG, "no", 2),
                     0);
    feed_peer();
    ck_assert_int_eq(brim_link_take(&lk, &r), BRIM_ECLOSED);
}
END_TEST

/* The server's side of AUTH for the challenge the link queued (request
 * I of its queue): its answer [nonce_s, mac_s] under SECRET (a wrong
 * mac_s when BAD), fed to the lk. NONCE_S gets the server's nonce. */
static void
peer_auth_answer(size_t i, const struct brim_auth_secret *secret, int bad,
                 uint8_t nonce_s[BRIM_AUTH_NONCE_BYTES])
{
    struct brim_req req;
    struct brim_rep r;
    uint8_t         mac_s[BRIM_AUTH_MAC_BYTES];

    queued_req(i, &req);
    ck_assert_uint_eq(req.op, BRIM_OP_AUTH);
    ck_assert_uint_eq(req.arg_u32, BRIM_AUTH_CHALLENGE);
    ck_assert_int_eq(brim_auth_nonce(nonce_s), 0);
    ck_assert_int_eq(brim_auth_mac(secret, BRIM_AUTH_SERVER,
                                   (const uint8_t *) req.auth, nonce_s,
                                   BRIM_ROLE_CLIENT, BRIM_ROLE_NODE, mac_s),
                     0);
    mac_s[0] ^= (uint8_t) (bad ? 1 : 0);
    memset(&r, 0, sizeof(r));
    r.request_id = req.request_id;
    r.auth_nonce = (const char *) nonce_s;
    r.auth_mac = (const char *) mac_s;
    ck_assert_int_eq(brim_wire_encode_rep(&peer, BRIM_OP_AUTH, &r), 0);
    feed_peer();
}

/* A link with SECRET (set here) past its HELLO: its challenge queued. */
static void
link_up_auth(struct brim_auth_secret *secret)
{
    struct brim_link_reply r;
    struct brim_req        req;

    ck_assert_int_eq(brim_auth_secret_set(secret,
                                          "0123456789abcdef0123456"
                                          "789abcdef",
                                          32, NULL),
                     0);
    link_up(1, secret);
    queued_req(0, &req);
    peer_hello(req.request_id);
    feed_peer();
    ck_assert_int_eq(brim_link_take(&lk, &r), 0);
    ck_assert_int_eq(lk.state, BRIM_LINK_AUTH);
}

/* With a secret: HELLO, the challenge, the server's proof checked, ours
 * queued and right (checked here as the server would), then READY. */
START_TEST(link_auth)
{
    struct brim_auth_secret secret;
    struct brim_link_reply  r;
    struct brim_req         req;
    struct brim_rep         ok;
    uint8_t                 nonce_s[BRIM_AUTH_NONCE_BYTES];
    uint8_t                 nonce_c[BRIM_AUTH_NONCE_BYTES];

    link_up_auth(&secret);
    peer_auth_answer(1, &secret, 0, nonce_s);
    memcpy(nonce_c, lk.nonce_c, sizeof(nonce_c));
    ck_assert_int_eq(brim_link_take(&lk, &r), 0);
    ck_assert_int_eq(lk.state, BRIM_LINK_AUTH);
    queued_req(2, &req);
    ck_assert_uint_eq(req.op, BRIM_OP_AUTH);
    ck_assert_uint_eq(req.arg_u32, BRIM_AUTH_PROOF);
    ck_assert_int_eq(brim_auth_verify(&secret, BRIM_AUTH_CLIENT, nonce_c,
                                      nonce_s, BRIM_ROLE_CLIENT, BRIM_ROLE_NODE,
                                      (const uint8_t *) req.auth,
                                      BRIM_AUTH_MAC_BYTES),
                     0);
    memset(&ok, 0, sizeof(ok));
    ok.request_id = req.request_id;
    ck_assert_int_eq(brim_wire_encode_rep(&peer, BRIM_OP_AUTH, &ok), 0);
    feed_peer();
    ck_assert_int_eq(brim_link_take(&lk, &r), 0);
    ck_assert_int_eq(lk.state, BRIM_LINK_READY);
    brim_auth_secret_wipe(&secret);
}
END_TEST

/* A server whose proof is wrong is refused before anything else goes. */
START_TEST(link_auth_bad_proof)
{
    struct brim_auth_secret secret;
    struct brim_link_reply  r;
    uint8_t                 nonce_s[BRIM_AUTH_NONCE_BYTES];
    size_t                  before;

    link_up_auth(&secret);
    peer_auth_answer(1, &secret, 1, nonce_s);
    before = brim_link_unsent(&lk);
    ck_assert_int_eq(brim_link_take(&lk, &r), BRIM_EDENIED);
    ck_assert_msg(strstr(lk.err,
                         "AUTH: the server's proof of the secret "
                         "is wrong")
                      != NULL,
                  "err: %s", lk.err);
    ck_assert_uint_eq(brim_link_unsent(&lk), before); /* no proof */
    brim_auth_secret_wipe(&secret);
}
END_TEST

/* ---- blocking helpers ---- */

/* brim_link_call(): the request goes out, the reply written by the peer
 * comes back; with none, the deadline ends it and ERR says so. */
START_TEST(link_call)
{
    struct brim_link_reply r;
    struct brim_req        req;
    char                   buf[256];

    link_up(0, NULL);
    peer_value(1, "pong");
    ck_assert_int_eq(write(sv[1], peer.data, peer.len), (ssize_t) peer.len);
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_GET;
    req.key = "k";
    req.key_len = 1;
    ck_assert_int_eq(brim_link_call(&lk, &req, brim_sock_now_ms() + 2000, &r),
                     0);
    ck_assert_uint_eq(r.rep.value_len, 4);
    ck_assert_mem_eq(r.rep.value, "pong", 4);
    ck_assert_int_gt(read(sv[1], buf, sizeof(buf)), 0); /* the GET */
    memset(&req, 0, sizeof(req));
    req.op = BRIM_OP_PING;
    ck_assert_int_eq(brim_link_call(&lk, &req, brim_sock_now_ms() + 50, &r),
                     BRIM_ETIMEDOUT);
    ck_assert_str_eq(lk.err,
                     "127.0.0.1:9: no reply to PING within the "
                     "timeout");
}
END_TEST

/* An idle link is usable until the peer sends or closes; then a read
 * reports the end of the stream, not an error. */
START_TEST(link_idle_and_eof)
{
    link_up(0, NULL);
    ck_assert_int_eq(brim_link_idle_ok(&lk), 1);
    ck_assert_int_eq(write(sv[1], "x", 1), 1);
    ck_assert_int_eq(brim_link_idle_ok(&lk), 0);
    ck_assert_int_eq(brim_link_read(&lk), 1);
    close(sv[1]);
    sv[1] = -1;
    ck_assert_int_eq(brim_link_idle_ok(&lk), 0);
    ck_assert_int_eq(brim_link_read(&lk), BRIM_ECLOSED);
    ck_assert_int_eq(lk.sys_errno, 0);
}
END_TEST

/* brim_link_handshake() over the socket: HELLO answered by the peer. */
START_TEST(link_handshake_blocking)
{
    struct brim_req req;

    link_up(1, NULL);
    queued_req(0, &req);
    peer_hello(req.request_id);
    ck_assert_int_eq(write(sv[1], peer.data, peer.len), (ssize_t) peer.len);
    ck_assert_int_eq(brim_link_handshake(&lk, brim_sock_now_ms() + 2000), 0);
    ck_assert_int_eq(lk.state, BRIM_LINK_READY);
    ck_assert_uint_eq(lk.limits.max_value_bytes, 4096);
}
END_TEST

/* Add TC, running FN between setup and teardown, to S. */
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

    s = suite_create("client_link");
    add_case(s, tcase_create("parse_split"), link_parse_split);
    add_case(s, tcase_create("parse_ids"), link_parse_ids);
    add_case(s, tcase_create("parse_toobig"), link_parse_toobig);
    add_case(s, tcase_create("take_in_order"), link_take_in_order);
    add_case(s, tcase_create("take_out_of_step"), link_take_out_of_step);
    add_case(s, tcase_create("stream_offsets"), link_stream_offsets);
    add_case(s, tcase_create("hello"), link_hello);
    add_case(s, tcase_create("hello_refused"), link_hello_refused);
    add_case(s, tcase_create("auth"), link_auth);
    add_case(s, tcase_create("auth_bad_proof"), link_auth_bad_proof);
    add_case(s, tcase_create("call"), link_call);
    add_case(s, tcase_create("idle_and_eof"), link_idle_and_eof);
    add_case(s, tcase_create("handshake_blocking"), link_handshake_blocking);
    return s;
}
