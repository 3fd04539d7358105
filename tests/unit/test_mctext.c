/*
 * tests/unit/test_mctext.c - proto/mctext.[ch], memcached's text and meta
 * protocols: every command and its noreply form, pipelining, every split
 * point, the limits (key, value, line), bad numbers, meta flags and
 * base64 keys; the replies and the expiry rule are in test_mctext_rep.c.
 * "checked" in a comment means the answer was taken from memcached 1.6.18
 * (Debian 12) by sending it the same bytes; tests/cluster/
 * mctext_vs_memcached.py repeats those checks against a live memcached.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <string.h>

#include "common/defs.h"
#include "proto/mctext.h"

/* memcached's defaults: key 250, value 1 MiB, line 2048. */
static struct brim_mctext_limits lim;

static void
setup(void)
{
    brim_mctext_limits_default(&lim);
}

/* Parse the NUL-terminated S (its strlen bytes) into *CMD. */
static int
parse_s(const char *s, struct brim_mctext_cmd *cmd)
{
    return brim_mctext_parse(s, strlen(s), &lim, cmd);
}

/* Parse S, which must give one good command of KIND covering all of it. */
static void
parse_ok(const char *s, enum brim_mctext_kind kind, struct brim_mctext_cmd *cmd)
{
    int rc;

    rc = parse_s(s, cmd);
    ck_assert_msg(rc == 0, "\"%s\": rc=%s", s, brim_err_name(rc));
    ck_assert_msg(cmd->err == BRIM_MCTEXT_ERR_NONE, "\"%s\": err %s", s,
                  brim_mctext_err_name(cmd->err));
    ck_assert_msg(cmd->kind == kind, "\"%s\": kind %s", s,
                  brim_mctext_kind_name(cmd->kind));
    ck_assert_uint_eq(cmd->consumed, strlen(s));
    ck_assert_uint_eq(cmd->swallow, 0);
    ck_assert_int_eq(cmd->close, 0);
}

/* Parse S (N bytes), which must fail with ERR and reply REPLY (NULL: no
 * reply), covering CONSUMED bytes. */
static void
parse_err_n(const char *s, size_t n, enum brim_mctext_err err,
            const char *reply, size_t consumed)
{
    struct brim_mctext_cmd cmd;
    int                    rc;

    rc = brim_mctext_parse(s, n, &lim, &cmd);
    ck_assert_msg(rc == 0, "\"%.60s\": rc=%s", s, brim_err_name(rc));
    ck_assert_msg(cmd.err == err, "\"%.60s\": err %s, want %s", s,
                  brim_mctext_err_name(cmd.err), brim_mctext_err_name(err));
    if (reply == NULL) {
        ck_assert_ptr_null(cmd.reply);
    } else {
        ck_assert_ptr_nonnull(cmd.reply);
        ck_assert_uint_eq(cmd.reply_len, strlen(reply));
        ck_assert_mem_eq(cmd.reply, reply, strlen(reply));
    }
    ck_assert_uint_eq(cmd.consumed, consumed);
}

/* As parse_err_n() for a NUL-terminated S covering all of it. */
static void
parse_err(const char *s, enum brim_mctext_err err, const char *reply)
{
    parse_err_n(s, strlen(s), err, reply, strlen(s));
}

static const char *const FORMAT = "CLIENT_ERROR bad command line format\r\n";

/* The key of CMD as a NUL-terminated string in BUF (N bytes). */
static const char *
key_of(const struct brim_mctext_cmd *cmd, char *buf, size_t n)
{
    const char *k;
    size_t      len;

    brim_mctext_cmd_key(cmd, &k, &len);
    ck_assert_uint_lt(len, n);
    memcpy(buf, k, len);
    buf[len] = '\0';
    return buf;
}

START_TEST(mctext_limits)
{
    struct brim_mctext_limits l;
    char                      err[BRIM_ERRBUF_LEN];

    brim_mctext_limits_default(&l);
    ck_assert_uint_eq(l.max_key_bytes, 250);
    ck_assert_uint_eq(l.max_value_bytes, 1u << 20);
    ck_assert_uint_eq(l.max_line_bytes, 2048);
    ck_assert_int_eq(brim_mctext_limits_check(&l, err), 0);
    ck_assert_uint_eq(brim_mctext_buffer_max(&l),
                      BRIM_MAX((size_t) 2049 + (1u << 20) + 2,
                               (size_t) l.max_get_line_bytes + 1));

    l.max_key_bytes = 251;
    ck_assert_int_eq(brim_mctext_limits_check(&l, err), BRIM_EINVAL);
    ck_assert_ptr_nonnull(strstr(err, "251"));
    l.max_key_bytes = 0;
    ck_assert_int_eq(brim_mctext_limits_check(&l, NULL), BRIM_EINVAL);
    brim_mctext_limits_default(&l);
    l.max_value_bytes = BRIM_MCTEXT_VALUE_LIMIT + 1;
    ck_assert_int_eq(brim_mctext_limits_check(&l, err), BRIM_EINVAL);
    brim_mctext_limits_default(&l);
    l.max_line_bytes = 100; /* the get prefix needs 106 */
    ck_assert_int_eq(brim_mctext_limits_check(&l, err), BRIM_EINVAL);
    brim_mctext_limits_default(&l);
    l.max_get_line_bytes = 1000; /* below the line limit */
    ck_assert_int_eq(brim_mctext_limits_check(&l, err), BRIM_EINVAL);
    l.max_get_line_bytes = BRIM_MCTEXT_LINE_LIMIT + 1;
    ck_assert_int_eq(brim_mctext_limits_check(&l, err), BRIM_EINVAL);
}
END_TEST

/* Collect CMD's keys, space-separated, into BUF. */
static const char *
keys_of(const struct brim_mctext_cmd *cmd, char *buf, size_t n)
{
    const char *k;
    size_t      pos, klen, used;

    pos = 0;
    used = 0;
    buf[0] = '\0';
    while (brim_mctext_next_key(cmd, &pos, &k, &klen)) {
        ck_assert_uint_lt(used + klen + 1, n);
        if (used > 0) {
            buf[used++] = ' ';
        }
        memcpy(buf + used, k, klen);
        used += klen;
        buf[used] = '\0';
    }
    return buf;
}

START_TEST(mctext_get_family)
{
    struct brim_mctext_cmd cmd;
    char                   line[1024], keys[1024];
    size_t                 i, n;

    parse_ok("get foo\r\n", BRIM_MCTEXT_GET, &cmd);
    ck_assert_uint_eq(cmd.nkeys, 1);
    ck_assert_str_eq(keys_of(&cmd, keys, sizeof(keys)), "foo");
    parse_ok("gets a b c\r\n", BRIM_MCTEXT_GETS, &cmd);
    ck_assert_uint_eq(cmd.nkeys, 3);
    ck_assert_str_eq(keys_of(&cmd, keys, sizeof(keys)), "a b c");
    /* Spaces anywhere, and just "\n" (checked: "  get  f   k  " works). */
    parse_ok("  get  f   k  \n", BRIM_MCTEXT_GET, &cmd);
    ck_assert_uint_eq(cmd.nkeys, 2);
    ck_assert_str_eq(keys_of(&cmd, keys, sizeof(keys)), "f k");
    parse_ok("gat 100 a b\r\n", BRIM_MCTEXT_GAT, &cmd);
    ck_assert_int_eq(cmd.exptime, 100);
    ck_assert_str_eq(keys_of(&cmd, keys, sizeof(keys)), "a b");
    parse_ok("gats -1 a\r\n", BRIM_MCTEXT_GATS, &cmd);
    ck_assert_int_eq(cmd.exptime, -1);
    ck_assert_uint_eq(cmd.nkeys, 1);
    /* gat with no key answers END (checked). */
    parse_ok("gat 10\r\n", BRIM_MCTEXT_GAT, &cmd);
    ck_assert_uint_eq(cmd.nkeys, 0);
    ck_assert_str_eq(keys_of(&cmd, keys, sizeof(keys)), "");
    /* memcached still serves the ancient bget (checked: END). */
    parse_ok("bget a\r\n", BRIM_MCTEXT_GET, &cmd);
    /* "noreply" is just a key for get. */
    parse_ok("get a noreply\r\n", BRIM_MCTEXT_GET, &cmd);
    ck_assert_uint_eq(cmd.nkeys, 2);
    ck_assert_int_eq(cmd.noreply, 0);
    /* More keys than the 23 tokens memcached's tokenizer keeps. */
    n = (size_t) snprintf(line, sizeof(line), "get");
    for (i = 0; i < 40; i++) {
        n += (size_t) snprintf(line + n, sizeof(line) - n, " k%zu", i);
    }
    snprintf(line + n, sizeof(line) - n, "\r\n");
    parse_ok(line, BRIM_MCTEXT_GET, &cmd);
    ck_assert_uint_eq(cmd.nkeys, 40);
    keys_of(&cmd, keys, sizeof(keys));
    ck_assert_str_eq(keys + strlen(keys) - 3, "k39");
    /* No key, a bad gat exptime (checked). */
    parse_err("get\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("get \r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("gat\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("gat x k\r\n", BRIM_MCTEXT_ERR_EXPTIME,
              "CLIENT_ERROR invalid exptime argument\r\n");
    parse_err("getx f\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    /* Tokens split on ' ' only: "get\tf" is one unknown word (checked). */
    parse_err("get\tf\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
}
END_TEST

START_TEST(mctext_storage)
{
    static const struct {
        const char           *line;
        enum brim_mctext_kind kind;
    } cmds[] = {
        {"set", BRIM_MCTEXT_SET},         {"add", BRIM_MCTEXT_ADD},
        {"replace", BRIM_MCTEXT_REPLACE}, {"append", BRIM_MCTEXT_APPEND},
        {"prepend", BRIM_MCTEXT_PREPEND},
    };
    struct brim_mctext_cmd cmd;
    char                   s[256], k[256];
    size_t                 i;

    for (i = 0; i < BRIM_ARRAY_LEN(cmds); i++) {
        snprintf(s, sizeof(s), "%s key 7 300 5\r\nhello\r\n", cmds[i].line);
        parse_ok(s, cmds[i].kind, &cmd);
        ck_assert_str_eq(key_of(&cmd, k, sizeof(k)), "key");
        ck_assert_uint_eq(cmd.flags, 7);
        ck_assert_int_eq(cmd.exptime, 300);
        ck_assert_uint_eq(cmd.data_len, 5);
        ck_assert_mem_eq(cmd.data, "hello", 5);
        ck_assert_int_eq(cmd.noreply, 0);
        snprintf(s, sizeof(s), "%s key 0 0 2 noreply\r\nhi\r\n", cmds[i].line);
        parse_ok(s, cmds[i].kind, &cmd);
        ck_assert_int_eq(cmd.noreply, 1);
    }
    parse_ok("cas k 1 2 3 99\r\nabc\r\n", BRIM_MCTEXT_CAS, &cmd);
    ck_assert_uint_eq(cmd.cas, 99);
    ck_assert_uint_eq(cmd.flags, 1);
    parse_ok("cas k 0 0 1 18446744073709551615 noreply\r\nx\r\n",
             BRIM_MCTEXT_CAS, &cmd);
    ck_assert_uint_eq(cmd.cas, UINT64_MAX);
    ck_assert_int_eq(cmd.noreply, 1);
    /* The data block is binary: "\r\n" inside it is data. */
    parse_ok("set k 0 0 6\r\na\r\nb\r\n\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_mem_eq(cmd.data, "a\r\nb\r\n", 6);
    parse_ok("set k 0 0 0\r\n\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.data_len, 0);
    /* A token in the noreply place that is not noreply is ignored
     * (checked: "set f 0 0 1 garbage" is STORED). */
    parse_ok("set k 0 0 1 garbage\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_int_eq(cmd.noreply, 0);
    parse_ok("cas k 0 0 1 5 x\r\nx\r\n", BRIM_MCTEXT_CAS, &cmd);
    /* Wrong argument counts are ERROR, and the data line is then a
     * command of its own (checked: "ERROR\r\nERROR\r\n"). */
    parse_err_n("set f 0 0\r\n", 11, BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n", 11);
    parse_err_n("set f 0 0 1 2 3\r\nx\r\n", 20, BRIM_MCTEXT_ERR_UNKNOWN,
                "ERROR\r\n", 17);
    parse_err_n("cas k 0 0 1\r\nx\r\n", 16, BRIM_MCTEXT_ERR_UNKNOWN,
                "ERROR\r\n", 13);
    parse_err_n("set\r\n", 5, BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n", 5);
    /* A bad cas unique (checked). */
    parse_err_n("cas k 0 0 1 abc\r\nx\r\n", 20, BRIM_MCTEXT_ERR_FORMAT, FORMAT,
                17);
    parse_err_n("cas k 0 0 1 -1\r\nx\r\n", 19, BRIM_MCTEXT_ERR_FORMAT, FORMAT,
                16);
    /* Keys may hold any byte but space, '\n' and NUL (checked: tabs,
     * \x01, \xff and a lone '\r' are stored and found). */
    parse_ok("set a\tb\x01\xff\rc 0 0 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.key_len, 7);
}
END_TEST

START_TEST(mctext_delete)
{
    struct brim_mctext_cmd cmd;
    static const char      usage[] =
        "CLIENT_ERROR bad command line format.  Usage: delete <key> "
        "[noreply]\r\n";

    parse_ok("delete k\r\n", BRIM_MCTEXT_DELETE, &cmd);
    ck_assert_uint_eq(cmd.key_len, 1);
    ck_assert_int_eq(cmd.noreply, 0);
    /* The legacy time argument, only as "0" (checked). */
    parse_ok("delete k 0\r\n", BRIM_MCTEXT_DELETE, &cmd);
    parse_ok("delete k noreply\r\n", BRIM_MCTEXT_DELETE, &cmd);
    ck_assert_int_eq(cmd.noreply, 1);
    parse_ok("delete k 0 noreply\r\n", BRIM_MCTEXT_DELETE, &cmd);
    ck_assert_int_eq(cmd.noreply, 1);
    parse_err("delete k 1\r\n", BRIM_MCTEXT_ERR_DELETE_USAGE, usage);
    parse_err("delete k noreply 0\r\n", BRIM_MCTEXT_ERR_DELETE_USAGE, usage);
    parse_err("delete k 0 0\r\n", BRIM_MCTEXT_ERR_DELETE_USAGE, usage);
    /* noreply silences the usage error (checked: no reply at all). */
    parse_err("delete k x noreply\r\n", BRIM_MCTEXT_ERR_DELETE_USAGE, NULL);
    parse_err("delete\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("delete k 0 noreply x\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
}
END_TEST

START_TEST(mctext_incr_decr)
{
    static const char bad[] = "CLIENT_ERROR invalid numeric delta argument\r\n";
    struct brim_mctext_cmd cmd;

    parse_ok("incr n 5\r\n", BRIM_MCTEXT_INCR, &cmd);
    ck_assert_uint_eq(cmd.delta, 5);
    parse_ok("decr n 7 noreply\r\n", BRIM_MCTEXT_DECR, &cmd);
    ck_assert_uint_eq(cmd.delta, 7);
    ck_assert_int_eq(cmd.noreply, 1);
    /* The delta's range is all of 64 bits (checked: 15 + 2^64 - 1 is 14,
     * wrapping). */
    parse_ok("incr n 18446744073709551615\r\n", BRIM_MCTEXT_INCR, &cmd);
    ck_assert_uint_eq(cmd.delta, UINT64_MAX);
    parse_ok("incr n 0\r\n", BRIM_MCTEXT_INCR, &cmd);
    ck_assert_uint_eq(cmd.delta, 0);
    parse_ok("incr n +3\r\n", BRIM_MCTEXT_INCR, &cmd);
    ck_assert_uint_eq(cmd.delta, 3);
    parse_ok("incr n 00007\r\n", BRIM_MCTEXT_INCR, &cmd);
    ck_assert_uint_eq(cmd.delta, 7);
    parse_ok("incr n 1 x\r\n", BRIM_MCTEXT_INCR, &cmd);
    ck_assert_int_eq(cmd.noreply, 0);
    /* strtoull() negates modulo 2^64, and memcached only refuses a '-'
     * whose result is above 2^63 - 1. */
    parse_ok("incr n -18446744073709551615\r\n", BRIM_MCTEXT_INCR, &cmd);
    ck_assert_uint_eq(cmd.delta, 1);
    parse_ok("incr n -0\r\n", BRIM_MCTEXT_INCR, &cmd);
    ck_assert_uint_eq(cmd.delta, 0);
    /* Refused (checked). */
    parse_err("incr n -1\r\n", BRIM_MCTEXT_ERR_DELTA, bad);
    parse_err("incr n 18446744073709551616\r\n", BRIM_MCTEXT_ERR_DELTA, bad);
    parse_err("incr n abc\r\n", BRIM_MCTEXT_ERR_DELTA, bad);
    parse_err("decr n 1x\r\n", BRIM_MCTEXT_ERR_DELTA, bad);
    parse_err("incr n 0x10\r\n", BRIM_MCTEXT_ERR_DELTA, bad);
    parse_err("incr n 1x noreply\r\n", BRIM_MCTEXT_ERR_DELTA, NULL);
    parse_err("incr n\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("incr n 1 2 3\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
}
END_TEST

START_TEST(mctext_touch)
{
    struct brim_mctext_cmd cmd;

    parse_ok("touch k 10\r\n", BRIM_MCTEXT_TOUCH, &cmd);
    ck_assert_int_eq(cmd.exptime, 10);
    parse_ok("touch k -5 noreply\r\n", BRIM_MCTEXT_TOUCH, &cmd);
    ck_assert_int_eq(cmd.exptime, -5);
    ck_assert_int_eq(cmd.noreply, 1);
    parse_ok("touch k 10 x\r\n", BRIM_MCTEXT_TOUCH, &cmd);
    parse_err("touch k x\r\n", BRIM_MCTEXT_ERR_EXPTIME,
              "CLIENT_ERROR invalid exptime argument\r\n");
    parse_err("touch k x noreply\r\n", BRIM_MCTEXT_ERR_EXPTIME, NULL);
    parse_err("touch k\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
}
END_TEST

START_TEST(mctext_other_commands)
{
    struct brim_mctext_cmd cmd;

    parse_ok("flush_all\r\n", BRIM_MCTEXT_FLUSH_ALL, &cmd);
    ck_assert_int_eq(cmd.has_exptime, 0);
    parse_ok("flush_all 10\r\n", BRIM_MCTEXT_FLUSH_ALL, &cmd);
    ck_assert_int_eq(cmd.has_exptime, 1);
    ck_assert_int_eq(cmd.exptime, 10);
    parse_ok("flush_all -1\r\n", BRIM_MCTEXT_FLUSH_ALL, &cmd);
    ck_assert_int_eq(cmd.exptime, -1);
    parse_ok("flush_all noreply\r\n", BRIM_MCTEXT_FLUSH_ALL, &cmd);
    ck_assert_int_eq(cmd.noreply, 1);
    ck_assert_int_eq(cmd.has_exptime, 0);
    parse_ok("flush_all 0 noreply\r\n", BRIM_MCTEXT_FLUSH_ALL, &cmd);
    ck_assert_int_eq(cmd.noreply, 1);
    ck_assert_int_eq(cmd.has_exptime, 1);
    /* The third token is ignored (checked: OK), and the delay keeps its
     * low 32 bits (checked: 4294967296 is OK, a flush now). */
    parse_ok("flush_all 0 x\r\n", BRIM_MCTEXT_FLUSH_ALL, &cmd);
    parse_ok("flush_all 4294967296\r\n", BRIM_MCTEXT_FLUSH_ALL, &cmd);
    ck_assert_int_eq(cmd.exptime, 0);
    parse_err("flush_all x\r\n", BRIM_MCTEXT_ERR_EXPTIME,
              "CLIENT_ERROR invalid exptime argument\r\n");
    parse_err("flush_all x noreply\r\n", BRIM_MCTEXT_ERR_EXPTIME, NULL);
    parse_err("flush_all noreply x\r\n", BRIM_MCTEXT_ERR_EXPTIME,
              "CLIENT_ERROR invalid exptime argument\r\n");
    parse_err("flush_all 1 2 3\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");

    parse_ok("version\r\n", BRIM_MCTEXT_VERSION, &cmd);
    parse_ok("version x y\r\n", BRIM_MCTEXT_VERSION, &cmd);
    parse_ok("verbosity 1\r\n", BRIM_MCTEXT_VERBOSITY, &cmd);
    ck_assert_uint_eq(cmd.level, 1);
    parse_ok("verbosity 2 noreply\r\n", BRIM_MCTEXT_VERBOSITY, &cmd);
    ck_assert_int_eq(cmd.noreply, 1);
    parse_ok("verbosity 1 2\r\n", BRIM_MCTEXT_VERBOSITY, &cmd);
    parse_err("verbosity\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("verbosity x\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("verbosity -1\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    /* "noreply" is both the level and the flag: silent (checked). */
    parse_err("verbosity noreply\r\n", BRIM_MCTEXT_ERR_FORMAT, NULL);
    parse_err("verbosity 1 2 3\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");

    parse_ok("stats\r\n", BRIM_MCTEXT_STATS, &cmd);
    ck_assert_uint_eq(cmd.args_len, 0);
    parse_ok("stats  items  \r\n", BRIM_MCTEXT_STATS, &cmd);
    ck_assert_uint_eq(cmd.args_len, 5);
    ck_assert_mem_eq(cmd.args, "items", 5);
    parse_ok("stats detail on\r\n", BRIM_MCTEXT_STATS, &cmd);
    ck_assert_uint_eq(cmd.args_len, 9);
    parse_ok("quit\r\n", BRIM_MCTEXT_QUIT, &cmd);
    parse_ok("quit x\r\n", BRIM_MCTEXT_QUIT, &cmd);
    parse_ok("mn\r\n", BRIM_MCTEXT_MN, &cmd);
    parse_ok("mn x y\r\n", BRIM_MCTEXT_MN, &cmd);
    /* Without -A memcached refuses shutdown with its own line (checked). */
    parse_err("shutdown\r\n", BRIM_MCTEXT_ERR_SHUTDOWN,
              "ERROR: shutdown not enabled\r\n");
    parse_err("shutdown graceful\r\n", BRIM_MCTEXT_ERR_SHUTDOWN,
              "ERROR: shutdown not enabled\r\n");
}
END_TEST

START_TEST(mctext_noreply)
{
    static const struct {
        const char           *s;
        enum brim_mctext_kind kind;
    } ok[] = {
        {"set k 0 0 1 noreply\r\nx\r\n", BRIM_MCTEXT_SET},
        {"add k 0 0 1 noreply\r\nx\r\n", BRIM_MCTEXT_ADD},
        {"replace k 0 0 1 noreply\r\nx\r\n", BRIM_MCTEXT_REPLACE},
        {"append k 0 0 1 noreply\r\nx\r\n", BRIM_MCTEXT_APPEND},
        {"prepend k 0 0 1 noreply\r\nx\r\n", BRIM_MCTEXT_PREPEND},
        {"cas k 0 0 1 1 noreply\r\nx\r\n", BRIM_MCTEXT_CAS},
        {"delete k noreply\r\n", BRIM_MCTEXT_DELETE},
        {"incr k 1 noreply\r\n", BRIM_MCTEXT_INCR},
        {"decr k 1 noreply\r\n", BRIM_MCTEXT_DECR},
        {"touch k 1 noreply\r\n", BRIM_MCTEXT_TOUCH},
        {"flush_all noreply\r\n", BRIM_MCTEXT_FLUSH_ALL},
        {"verbosity 1 noreply\r\n", BRIM_MCTEXT_VERBOSITY},
        {"mg k q\r\n", BRIM_MCTEXT_MG},
        {"ms k 1 q\r\nx\r\n", BRIM_MCTEXT_MS},
        {"md k q\r\n", BRIM_MCTEXT_MD},
        {"ma k q\r\n", BRIM_MCTEXT_MA},
    };
    struct brim_mctext_cmd cmd;
    size_t                 i;

    for (i = 0; i < BRIM_ARRAY_LEN(ok); i++) {
        parse_ok(ok[i].s, ok[i].kind, &cmd);
        ck_assert_msg(cmd.noreply == 1, "%s", ok[i].s);
    }
    /* A text command's noreply silences its errors, the data line then
     * being read as a command (checked: "set f 0 0 abc noreply\r\nx\r\n"
     * answers only ERROR, for "x"). */
    parse_err_n("set f 0 0 abc noreply\r\nx\r\n", 26, BRIM_MCTEXT_ERR_FORMAT,
                NULL, 23);
    /* "set k 0 0 noreply": the length itself is "noreply". */
    parse_err("set k 0 0 noreply\r\n", BRIM_MCTEXT_ERR_FORMAT, NULL);
    /* A wrong count is ERROR before noreply is seen (checked). */
    parse_err("set k 0 0 1 2 noreply\r\n", BRIM_MCTEXT_ERR_UNKNOWN,
              "ERROR\r\n");
    /* Meta commands answer errors whatever q says (checked). */
    parse_err("mg k q zz\r\n", BRIM_MCTEXT_ERR_META_FLAG,
              "CLIENT_ERROR invalid flag\r\n");
    parse_err_n("ms k 2 q\r\nhiX\r\n", 15, BRIM_MCTEXT_ERR_CHUNK,
                "CLIENT_ERROR bad data chunk\r\n", 14);
}
END_TEST

START_TEST(mctext_pipelined)
{
    static const char in[] =
        "get a b\r\nset k 1 2 3\r\nabc\r\nmg k v\r\ndelete k noreply\r\n"
        "bogus\r\nms k 2 T5\r\nhi\r\nincr n 1\r\nmn\r\nget";
    static const enum brim_mctext_kind want[] = {
        BRIM_MCTEXT_GET,  BRIM_MCTEXT_SET, BRIM_MCTEXT_MG,   BRIM_MCTEXT_DELETE,
        BRIM_MCTEXT_NONE, BRIM_MCTEXT_MS,  BRIM_MCTEXT_INCR, BRIM_MCTEXT_MN,
    };
    struct brim_mctext_cmd cmd;
    size_t                 off, i, len;

    len = sizeof(in) - 1;
    off = 0;
    for (i = 0; i < BRIM_ARRAY_LEN(want); i++) {
        ck_assert_int_eq(brim_mctext_parse(in + off, len - off, &lim, &cmd), 0);
        ck_assert_msg(cmd.kind == want[i], "command %zu: %s", i,
                      brim_mctext_kind_name(cmd.kind));
        ck_assert_int_eq(cmd.err == BRIM_MCTEXT_ERR_UNKNOWN,
                         want[i] == BRIM_MCTEXT_NONE);
        if (cmd.kind == BRIM_MCTEXT_SET) {
            ck_assert_mem_eq(cmd.data, "abc", 3);
        }
        if (cmd.kind == BRIM_MCTEXT_MS) {
            ck_assert_mem_eq(cmd.data, "hi", 2);
            ck_assert_int_eq(cmd.exptime, 5);
        }
        /* Pointers lie inside what this answer consumed. */
        if (cmd.key != NULL) {
            ck_assert(cmd.key >= in + off
                      && cmd.key + cmd.key_len <= in + off + cmd.consumed);
        }
        off += cmd.consumed;
    }
    /* Nothing, even no buffer, waits. */
    ck_assert_int_eq(brim_mctext_parse(NULL, 0, &lim, &cmd), BRIM_EAGAIN);
    /* The unfinished "get" at the end waits. */
    ck_assert_int_eq(brim_mctext_parse(in + off, len - off, &lim, &cmd),
                     BRIM_EAGAIN);
    ck_assert_uint_eq(len - off, 3);
}
END_TEST

/* Check that every strict prefix of S waits and the whole gives the same
 * answer as ever, CONSUMED covering all of S. */
static void
split_all(const char *s)
{
    struct brim_mctext_cmd cmd, again;
    size_t                 n, i;
    int                    rc;

    n = strlen(s);
    ck_assert_int_eq(brim_mctext_parse(s, n, &lim, &cmd), 0);
    ck_assert_uint_eq(cmd.consumed, n);
    for (i = 0; i < n; i++) {
        memset(&again, 0x5a, sizeof(again));
        rc = brim_mctext_parse(s, i, &lim, &again);
        ck_assert_msg(rc == BRIM_EAGAIN, "\"%s\" cut at %zu: rc=%s", s, i,
                      brim_err_name(rc));
        /* CMD is written only on success. */
        ck_assert_int_eq(((unsigned char *) &again)[0], 0x5a);
    }
    ck_assert_int_eq(brim_mctext_parse(s, n, &lim, &again), 0);
    ck_assert_int_eq(again.kind, cmd.kind);
    ck_assert_int_eq(again.err, cmd.err);
    ck_assert_uint_eq(again.consumed, n);
}

START_TEST(mctext_split_points)
{
    static const char *const in[] = {
        "get a b c\r\n",
        "gets k\n",
        "gat 10 a b\r\n",
        "gats 0 k\r\n",
        "set key 1 2 5\r\nhello\r\n",
        "add k 0 0 0\r\n\r\n",
        "replace k 0 0 3 noreply\r\nx\ry\r\n",
        "append k 0 0 1\r\nx\r\n",
        "prepend k 0 0 1\r\nx\r\n",
        "cas k 0 0 2 77\r\nab\r\n",
        "delete k 0 noreply\r\n",
        "incr k 18446744073709551615\r\n",
        "decr k 1\r\n",
        "touch k 100\r\n",
        "flush_all 10\r\n",
        "version\r\n",
        "verbosity 1\r\n",
        "stats items\r\n",
        "quit\r\n",
        "mn\r\n",
        "mg k v t c f s k Oabc q\r\n",
        "ms k 5 T10 F3 MA C7 I k c\r\nhello\r\n",
        "md k q C5 I T30\r\n",
        "ma k D5 N30 J9 MD v\r\n",
        "me Zm9v b\r\n",
        "mg Zm9v b k\r\n",
        /* errors, answered once the line is whole */
        "bogus\r\n",
        "set k 0 0 3\r\nabcd\r",
        "set k x 0 1\r\n",
        "mg k zz\r\n",
        "ms k 2 zz\r\n",
    };
    size_t i;

    for (i = 0; i < BRIM_ARRAY_LEN(in); i++) {
        split_all(in[i]);
    }
}
END_TEST

START_TEST(mctext_data_chunk)
{
    static const char bad[] = "CLIENT_ERROR bad data chunk\r\n";

    /* The two bytes after <bytes> of data must be "\r\n"; the whole block
     * is consumed either way (checked: "set f 0 0 3\r\nabcd\r\n" answers
     * the bad chunk, then ERROR for the "\n" left over). */
    parse_err_n("set f 0 0 3\r\nabcd\r\n", 19, BRIM_MCTEXT_ERR_CHUNK, bad, 18);
    parse_err_n("\n", 1, BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n", 1);
    parse_err_n("set f 0 0 3\r\nab\r\n\r\n", 19, BRIM_MCTEXT_ERR_CHUNK, bad,
                18);
    /* A bare '\n' after the data does not end it (checked). */
    parse_err_n("set f 0 0 3\r\nabc\n\r\n", 19, BRIM_MCTEXT_ERR_CHUNK, bad, 18);
    parse_err_n("set f 0 0 1 noreply\r\nxy\r\n", 25, BRIM_MCTEXT_ERR_CHUNK,
                NULL, 24);
    parse_err_n("ms k 2\r\nhiX\r\n", 13, BRIM_MCTEXT_ERR_CHUNK, bad, 12);
    parse_err_n("cas k 0 0 1 1\r\nxxx", 18, BRIM_MCTEXT_ERR_CHUNK, bad, 18);
}
END_TEST

START_TEST(mctext_key_too_long)
{
    struct brim_mctext_cmd cmd;
    char                   k250[251], k251[252], s[700];

    memset(k250, 'a', 250);
    k250[250] = '\0';
    memset(k251, 'a', 251);
    k251[251] = '\0';
    snprintf(s, sizeof(s), "set %s 0 0 1\r\nx\r\n", k250);
    parse_ok(s, BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.key_len, 250);
    /* Text commands: FORMAT, and the data left to be read as a command
     * (checked). */
    snprintf(s, sizeof(s), "set %s 0 0 1\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    snprintf(s, sizeof(s), "set %s 0 0 1 noreply\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, NULL);
    snprintf(s, sizeof(s), "get a %s b\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    snprintf(s, sizeof(s), "delete %s\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    snprintf(s, sizeof(s), "incr %s x\r\n", k251); /* the key is first */
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    snprintf(s, sizeof(s), "touch %s x\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    /* Meta commands answer the same (checked for mg ms md ma me). */
    snprintf(s, sizeof(s), "mg %s v\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    snprintf(s, sizeof(s), "ms %s 1\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    snprintf(s, sizeof(s), "md %s\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    snprintf(s, sizeof(s), "ma %s\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    snprintf(s, sizeof(s), "me %s\r\n", k251);
    parse_err(s, BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    snprintf(s, sizeof(s), "mg %s v\r\n", k250);
    parse_ok(s, BRIM_MCTEXT_MG, &cmd);
    /* A lower configured limit. */
    lim.max_key_bytes = 4;
    parse_ok("get abcd\r\n", BRIM_MCTEXT_GET, &cmd);
    parse_err("get abcde\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    /* A b key is judged as sent, before decoding, as memcached does. */
    parse_err("mg Zm9vYg== b\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
}
END_TEST

START_TEST(mctext_line_too_long)
{
    struct brim_mctext_cmd cmd;
    static char            s[8192];
    size_t                 n;

    /* 2048 bytes without '\n' wait; the 2049th closes (checked: no reply,
     * connection closed). */
    memset(s, 'x', sizeof(s));
    ck_assert_int_eq(brim_mctext_parse(s, 2048, &lim, &cmd), BRIM_EAGAIN);
    ck_assert_int_eq(brim_mctext_parse(s, 2049, &lim, &cmd), 0);
    ck_assert_int_eq(cmd.close, 1);
    ck_assert_int_eq(cmd.err, BRIM_MCTEXT_ERR_LINE_TOO_LONG);
    ck_assert_ptr_null(cmd.reply);
    ck_assert_uint_eq(cmd.consumed, 2049);
    /* 2048 bytes then the '\n' are a line (here an unknown one). */
    s[2048] = '\n';
    parse_err_n(s, 2049, BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n", 2049);
    /* Its '\r' counts: memcached may have 2049 bytes without a '\n'. */
    s[2047] = '\r';
    s[2048] = 'x';
    s[2049] = '\n';
    ck_assert_int_eq(brim_mctext_parse(s, 2050, &lim, &cmd), 0);
    ck_assert_int_eq(cmd.close, 1);
    /* A get or gets line may grow past it (checked), after at most 100
     * spaces (checked: 101 closes); gat may not (checked). */
    n = (size_t) snprintf(s, sizeof(s), "get");
    while (n < 5000) {
        n += (size_t) snprintf(s + n, sizeof(s) - n, " k");
    }
    ck_assert_int_eq(brim_mctext_parse(s, n, &lim, &cmd), BRIM_EAGAIN);
    memcpy(s + n, "\r\n", 2);
    ck_assert_int_eq(brim_mctext_parse(s, n + 2, &lim, &cmd), 0);
    ck_assert_int_eq(cmd.kind, BRIM_MCTEXT_GET);
    ck_assert_uint_eq(cmd.nkeys, (n - 3) / 2);
    memcpy(s, "gat", 3);
    ck_assert_int_eq(brim_mctext_parse(s, 4000, &lim, &cmd), 0);
    ck_assert_int_eq(cmd.close, 1);
    memset(s, ' ', 100);
    memcpy(s + 100, "gets ", 5);
    memset(s + 105, 'k', 3000);
    ck_assert_int_eq(brim_mctext_parse(s, 3105, &lim, &cmd), BRIM_EAGAIN);
    memset(s, ' ', 101);
    memcpy(s + 101, "gets ", 5);
    ck_assert_int_eq(brim_mctext_parse(s, 3105, &lim, &cmd), 0);
    ck_assert_int_eq(cmd.close, 1);
    /* The get line has its own limit, which closes likewise. */
    lim.max_get_line_bytes = 4096;
    memcpy(s, "get ", 4);
    memset(s + 4, 'k', 5000);
    ck_assert_int_eq(brim_mctext_parse(s, 4096, &lim, &cmd), BRIM_EAGAIN);
    ck_assert_int_eq(brim_mctext_parse(s, 4097, &lim, &cmd), 0);
    ck_assert_int_eq(cmd.close, 1);
    /* A configured line limit. */
    lim.max_line_bytes = 128;
    memset(s, 'x', 200);
    ck_assert_int_eq(brim_mctext_parse(s, 128, &lim, &cmd), BRIM_EAGAIN);
    ck_assert_int_eq(brim_mctext_parse(s, 129, &lim, &cmd), 0);
    ck_assert_int_eq(cmd.close, 1);
}
END_TEST

START_TEST(mctext_unknown)
{
    struct brim_mctext_cmd cmd;

    /* All checked: ERROR. */
    parse_err("bogus\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("GET f\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("x\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("m\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("mx\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("\r\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err(" \r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    /* memcached's admin commands are not the port's: like unknown ones
     * (memcached itself would run this one). */
    parse_err("lru_crawler metadump all\r\n", BRIM_MCTEXT_ERR_UNKNOWN,
              "ERROR\r\n");
    /* A NUL ends the line's text (checked: "get k\0junk" is "get k", and
     * "\0version" is an empty line). */
    parse_err_n("\0version\r\n", 10, BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n", 10);
    ck_assert_int_eq(brim_mctext_parse("get k\0junk\r\n", 12, &lim, &cmd), 0);
    ck_assert_int_eq(cmd.kind, BRIM_MCTEXT_GET);
    ck_assert_uint_eq(cmd.nkeys, 1);
    ck_assert_uint_eq(cmd.keys_len, 1);
    ck_assert_uint_eq(cmd.consumed, 12);
    ck_assert_int_eq(
        brim_mctext_parse("set k 0 0 1\0 zz\r\nx\r\n", 20, &lim, &cmd), 0);
    ck_assert_int_eq(cmd.kind, BRIM_MCTEXT_SET);
    ck_assert_uint_eq(cmd.consumed, 20);
    /* A web browser is shut out silently (checked), unless the word
     * starts with a letter of a command ("gxx" answers ERROR). */
    ck_assert_int_eq(parse_s("GET / HTTP/1.1\r\nHost: x\r\n", &cmd), 0);
    ck_assert_int_eq(cmd.close, 1);
    ck_assert_int_eq(cmd.err, BRIM_MCTEXT_ERR_HTTP);
    ck_assert_ptr_null(cmd.reply);
    ck_assert_int_eq(parse_s("POST /x HTTP/1.0\r\n", &cmd), 0);
    ck_assert_int_eq(cmd.close, 1);
    parse_err("gxx HTTP/1.0\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    /* An actual get of two keys is not a browser. */
    parse_ok("get / HTTP/1.1\r\n", BRIM_MCTEXT_GET, &cmd);
}
END_TEST

START_TEST(mctext_bad_numbers)
{
    struct brim_mctext_cmd cmd;

    /* flags: strtoul-like, the low 32 bits kept (checked: flags
     * 4294967296 reads back 0, 4294967295 reads back as is, +5 is 5). */
    parse_ok("set k 4294967295 0 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.flags, 4294967295u);
    parse_ok("set k 4294967296 0 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.flags, 0);
    parse_ok("set k +5 0 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.flags, 5);
    parse_ok("set k -18446744073709551615 0 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.flags, 1);
    /* A white-space byte ends a number, before or after (checked). */
    parse_ok("set k 0 0 1\t\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    parse_ok("set k \t7 0 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.flags, 7);
    parse_ok("set k 3\x0cz 0 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.flags, 3);
    /* exptime and bytes: strtol, the low 32 bits kept (checked:
     * "set k 0 0 4294967297" takes a 1-byte value; exptime 4294967295 is
     * -1, expired). */
    parse_ok("set k 0 0 4294967297\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_uint_eq(cmd.data_len, 1);
    parse_ok("set k 0 4294967295 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_int_eq(cmd.exptime, -1);
    parse_ok("set k 0 2147483648 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_int_eq(cmd.exptime, INT32_MIN);
    /* Refused (checked): FORMAT, no swallow. */
    parse_err("set k -1 0 1\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("set k 18446744073709551616 0 1\r\n", BRIM_MCTEXT_ERR_FORMAT,
              FORMAT);
    parse_err("set k 5x 0 1\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("set k 0x10 0 1\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("set k + 0 1\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("set k 0 abc 1\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("set k 0 9223372036854775808 1\r\n", BRIM_MCTEXT_ERR_FORMAT,
              FORMAT);
    parse_err("set k 0 0 -1\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("set k 0 0 x\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    /* <bytes> above INT_MAX - 2 is FORMAT, not TOO_LARGE (checked). */
    parse_err("set k 0 0 2147483646\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("set k 0 0 2147483647\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    /* ... and 9223372036854775807 keeps its low 32 bits, -1. */
    parse_err("set k 0 0 9223372036854775807\r\n", BRIM_MCTEXT_ERR_FORMAT,
              FORMAT);
}
END_TEST

START_TEST(mctext_value_limit)
{
    static const char big[] = "SERVER_ERROR object too large for cache\r\n";
    struct brim_mctext_cmd cmd;
    char                   k[16];

    /* Refused from the line alone, the block swallowed as it comes
     * (checked: "set big 0 0 2000000" then the data answers only the
     * SERVER_ERROR). */
    parse_err("set big 0 0 2000000\r\n", BRIM_MCTEXT_ERR_TOO_LARGE, big);
    ck_assert_int_eq(parse_s("set big 0 0 2000000\r\n", &cmd), 0);
    ck_assert_uint_eq(cmd.swallow, 2000002);
    ck_assert_int_eq(cmd.kind, BRIM_MCTEXT_SET);
    ck_assert_str_eq(key_of(&cmd, k, sizeof(k)), "big");
    /* With noreply: silent, still swallowed (checked). */
    ck_assert_int_eq(parse_s("set big 0 0 2000000 noreply\r\n", &cmd), 0);
    ck_assert_int_eq(cmd.err, BRIM_MCTEXT_ERR_TOO_LARGE);
    ck_assert_ptr_null(cmd.reply);
    ck_assert_uint_eq(cmd.swallow, 2000002);
    /* The largest length memcached reads as a number. */
    ck_assert_int_eq(parse_s("set k 0 0 2147483645\r\n", &cmd), 0);
    ck_assert_int_eq(cmd.err, BRIM_MCTEXT_ERR_TOO_LARGE);
    ck_assert_uint_eq(cmd.swallow, 2147483647u);
    /* ms too, even with q (checked). */
    ck_assert_int_eq(parse_s("ms big 2000000 q T0\r\n", &cmd), 0);
    ck_assert_int_eq(cmd.err, BRIM_MCTEXT_ERR_TOO_LARGE);
    ck_assert_ptr_nonnull(cmd.reply);
    ck_assert_uint_eq(cmd.swallow, 2000002);
    /* The limit itself is allowed. */
    lim.max_value_bytes = 4;
    parse_ok("set k 0 0 4\r\nabcd\r\n", BRIM_MCTEXT_SET, &cmd);
    parse_err("set k 0 0 5\r\n", BRIM_MCTEXT_ERR_TOO_LARGE, big);
    lim.max_value_bytes = 0;
    parse_ok("set k 0 0 0\r\n\r\n", BRIM_MCTEXT_SET, &cmd);
    parse_err("ms k 1\r\n", BRIM_MCTEXT_ERR_TOO_LARGE, big);
}
END_TEST

START_TEST(mctext_negative_exptime)
{
    struct brim_mctext_cmd cmd;

    /* Allowed everywhere, meaning expired at once (checked: "set f 0 -1 1"
     * is STORED, then "get f" misses). */
    parse_ok("set k 0 -1 1\r\nx\r\n", BRIM_MCTEXT_SET, &cmd);
    ck_assert_int_eq(cmd.exptime, -1);
    parse_ok("touch k -100\r\n", BRIM_MCTEXT_TOUCH, &cmd);
    ck_assert_int_eq(cmd.exptime, -100);
    parse_ok("gat -2147483648 k\r\n", BRIM_MCTEXT_GAT, &cmd);
    ck_assert_int_eq(cmd.exptime, INT32_MIN);
    parse_ok("mg k T-1\r\n", BRIM_MCTEXT_MG, &cmd);
    ck_assert_int_eq(cmd.meta.ttl, -1);
    parse_ok("ms k 1 T-5\r\nx\r\n", BRIM_MCTEXT_MS, &cmd);
    ck_assert_int_eq(cmd.exptime, -5);
}
END_TEST

START_TEST(mctext_meta_get_flags)
{
    struct brim_mctext_cmd cmd;
    char                   many[128];

    parse_ok("mg k c f h k l O123 P L q s t u v N30 R5 T-1 I\r\n",
             BRIM_MCTEXT_MG, &cmd);
    ck_assert_uint_eq(cmd.meta.norder, 17);
    ck_assert_mem_eq(cmd.meta.order, "cfhklOPLqstuvNRTI", 17);
    ck_assert(cmd.meta.flags & BRIM_MCTEXT_MF('v'));
    ck_assert(cmd.meta.flags & BRIM_MCTEXT_MF('N'));
    ck_assert(!(cmd.meta.flags & BRIM_MCTEXT_MF('E')));
    ck_assert_int_eq(cmd.noreply, 1);
    ck_assert_int_eq(cmd.meta.vivify_ttl, 30);
    ck_assert_int_eq(cmd.meta.recache_ttl, 5);
    ck_assert_int_eq(cmd.meta.ttl, -1);
    ck_assert_uint_eq(cmd.meta.opaque_len, 3);
    ck_assert_mem_eq(cmd.meta.opaque, "123", 3);
    ck_assert_int_eq(cmd.key_b64, 0);
    /* "k" is one letter of base64: it does not decode. */
    parse_err("mg k b\r\n", BRIM_MCTEXT_ERR_META_B64,
              "CLIENT_ERROR error decoding key\r\n");
    /* A flag's letter is all that counts ("vfoo" is v, checked). */
    parse_ok("mg k vfoo kk\r\n", BRIM_MCTEXT_MG, &cmd);
    ck_assert(cmd.meta.flags & BRIM_MCTEXT_MF('v'));
    /* Flags of other commands are accepted and unused (checked: HD). */
    parse_ok("mg k F5 D9 J1 MZ I C5\r\n", BRIM_MCTEXT_MG, &cmd);
    ck_assert_uint_eq(cmd.meta.client_flags, 5);
    ck_assert_uint_eq(cmd.meta.delta, 9);
    ck_assert_uint_eq(cmd.meta.initial, 1);
    ck_assert_uint_eq(cmd.meta.cas, 5);
    ck_assert_int_eq(cmd.meta.mode, 'Z');
    parse_ok("mg k\r\n", BRIM_MCTEXT_MG, &cmd);
    ck_assert_uint_eq(cmd.meta.norder, 0);
    ck_assert_uint_eq(cmd.meta.delta, 1);
    /* Errors, as 1.6.18 words them (all checked). */
    parse_err("mg\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("mg k zz\r\n", BRIM_MCTEXT_ERR_META_FLAG,
              "CLIENT_ERROR invalid flag\r\n");
    parse_err("mg k E5\r\n", BRIM_MCTEXT_ERR_META_FLAG,
              "CLIENT_ERROR invalid flag\r\n"); /* newer than 1.6.18 */
    parse_err("mg k x\r\n", BRIM_MCTEXT_ERR_META_FLAG,
              "CLIENT_ERROR invalid flag\r\n");
    parse_err("mg k v v\r\n", BRIM_MCTEXT_ERR_META_DUP,
              "CLIENT_ERROR duplicate flag\r\n");
    parse_err("mg k P L Pfoo\r\n", BRIM_MCTEXT_ERR_META_DUP,
              "CLIENT_ERROR duplicate flag\r\n");
    parse_err("mg k \x80\r\n", BRIM_MCTEXT_ERR_META_DUP,
              "CLIENT_ERROR duplicate flag\r\n");
    parse_err("mg k Tx\r\n", BRIM_MCTEXT_ERR_META_TOKEN,
              "CLIENT_ERROR bad token in command line format\r\n");
    parse_err("mg k T\r\n", BRIM_MCTEXT_ERR_META_TOKEN,
              "CLIENT_ERROR bad token in command line format\r\n");
    /* The last bad token names the error; F leaves it as it was. */
    parse_err("mg k Tx Dx\r\n", BRIM_MCTEXT_ERR_META_DELTA,
              "CLIENT_ERROR invalid numeric delta value\r\n");
    parse_err("mg k Dx Tx\r\n", BRIM_MCTEXT_ERR_META_TOKEN,
              "CLIENT_ERROR bad token in command line format\r\n");
    parse_err("mg k Jx\r\n", BRIM_MCTEXT_ERR_META_INITIAL,
              "CLIENT_ERROR invalid numeric initial value\r\n");
    parse_err("mg k Fx\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("mg k Tx Fx\r\n", BRIM_MCTEXT_ERR_META_TOKEN,
              "CLIENT_ERROR bad token in command line format\r\n");
    /* An unknown or repeated flag stops at once. */
    parse_err("mg k Tx zz\r\n", BRIM_MCTEXT_ERR_META_FLAG,
              "CLIENT_ERROR invalid flag\r\n");
    parse_err("mg k MEE\r\n", BRIM_MCTEXT_ERR_META_MLEN,
              "CLIENT_ERROR incorrect length for M token\r\n");
    /* 17 flags at most (20 tokens in all). */
    snprintf(many, sizeof(many),
             "mg k a b c d e f g h i j k l m n o p q "
             "r\r\n");
    parse_err(many, BRIM_MCTEXT_ERR_META_MANY_MG,
              "CLIENT_ERROR options flags are too long\r\n");
}
END_TEST

START_TEST(mctext_meta_set)
{
    static const struct {
        const char           *flags;
        enum brim_mctext_kind store;
    } modes[] = {
        {"", BRIM_MCTEXT_SET},       {"MS", BRIM_MCTEXT_SET},
        {"ME", BRIM_MCTEXT_ADD},     {"MA", BRIM_MCTEXT_APPEND},
        {"MP", BRIM_MCTEXT_PREPEND}, {"MR", BRIM_MCTEXT_REPLACE},
        {"C5", BRIM_MCTEXT_CAS},     {"MR C5", BRIM_MCTEXT_CAS},
        {"ME C5", BRIM_MCTEXT_ADD},  {"MA C5", BRIM_MCTEXT_APPEND},
    };
    struct brim_mctext_cmd cmd;
    char                   s[128];
    size_t                 i;

    for (i = 0; i < BRIM_ARRAY_LEN(modes); i++) {
        snprintf(s, sizeof(s), "ms k 2 %s\r\nhi\r\n", modes[i].flags);
        parse_ok(s, BRIM_MCTEXT_MS, &cmd);
        ck_assert_msg(cmd.meta.store == modes[i].store, "%s", s);
        ck_assert_mem_eq(cmd.data, "hi", 2);
    }
    parse_ok("ms k 3 F4294967296 T60 I k c Oab q\r\nabc\r\n", BRIM_MCTEXT_MS,
             &cmd);
    ck_assert_uint_eq(cmd.flags, 0); /* low 32 bits (checked) */
    ck_assert_int_eq(cmd.exptime, 60);
    ck_assert(cmd.meta.flags & BRIM_MCTEXT_MF('I'));
    ck_assert_int_eq(cmd.noreply, 1);
    /* The length keeps its low 32 bits too (checked: HD). */
    parse_ok("ms k 4294967298\r\nhi\r\n", BRIM_MCTEXT_MS, &cmd);
    ck_assert_uint_eq(cmd.data_len, 2);
    /* Before <datalen> is read, errors leave the data to be read as a
     * command (checked: the next line answers ERROR). */
    parse_err("ms\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("ms k\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("ms k x\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("ms k -1\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("ms k 2147483646\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    /* 16 flags at most: 20 tokens in all (checked with 18). */
    parse_err("ms k 2 a b c d e f g h i j k l m n o p\r\n",
              BRIM_MCTEXT_ERR_META_FLAG, "CLIENT_ERROR invalid flag\r\n");
    parse_err("ms k 2 a b c d e f g h i j k l m n o p q\r\n",
              BRIM_MCTEXT_ERR_META_MANY,
              "CLIENT_ERROR options flags too long\r\n");
    /* After it, they swallow the data (checked: "ms k 2 zz\r\nhi\r\nmn"
     * answers the error, then MN). */
    ck_assert_int_eq(parse_s("ms k 2 zz\r\n", &cmd), 0);
    ck_assert_int_eq(cmd.err, BRIM_MCTEXT_ERR_META_FLAG);
    ck_assert_uint_eq(cmd.consumed, 11);
    ck_assert_uint_eq(cmd.swallow, 4);
    parse_err("ms k 2 v v\r\n", BRIM_MCTEXT_ERR_META_DUP,
              "CLIENT_ERROR duplicate flag\r\n");
    parse_err("ms k 2 MZ\r\n", BRIM_MCTEXT_ERR_META_MS_MODE,
              "CLIENT_ERROR invalid mode for ms M token\r\n");
    parse_err("ms k 2 Ms\r\n", BRIM_MCTEXT_ERR_META_MS_MODE,
              "CLIENT_ERROR invalid mode for ms M token\r\n");
    parse_err("ms k 2 MEE\r\n", BRIM_MCTEXT_ERR_META_MLEN,
              "CLIENT_ERROR incorrect length for M token\r\n");
    parse_err("ms k 2 Cx\r\n", BRIM_MCTEXT_ERR_META_TOKEN,
              "CLIENT_ERROR bad token in command line format\r\n");
    parse_err("ms k 2 Fx\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("ms k 2 S5\r\n", BRIM_MCTEXT_ERR_META_FLAG,
              "CLIENT_ERROR invalid flag\r\n");
    parse_err("ms Zm9 2 b\r\n", BRIM_MCTEXT_ERR_META_B64,
              "CLIENT_ERROR error decoding key\r\n");
    /* A bad mode is reported before a too-long opaque. */
    parse_err("ms k 2 O123456789012345678901234567890123 MZ\r\n",
              BRIM_MCTEXT_ERR_META_MS_MODE,
              "CLIENT_ERROR invalid mode for ms M token\r\n");
    /* The data is still needed for a good line. */
    ck_assert_int_eq(parse_s("ms k 3\r\nhi\r\n", &cmd), BRIM_EAGAIN);
}
END_TEST

START_TEST(mctext_meta_delete_arith)
{
    static const char      bad[] = "CLIENT_ERROR invalid or duplicate flag\r\n";
    struct brim_mctext_cmd cmd;

    parse_ok("md k\r\n", BRIM_MCTEXT_MD, &cmd);
    parse_ok("md k q C5 I T30 k Oz\r\n", BRIM_MCTEXT_MD, &cmd);
    ck_assert_int_eq(cmd.noreply, 1);
    ck_assert_uint_eq(cmd.meta.cas, 5);
    ck_assert_int_eq(cmd.meta.ttl, 30);
    ck_assert(cmd.meta.flags & BRIM_MCTEXT_MF('I'));
    /* md and ma do not say which flag is wrong (checked). */
    parse_err("md\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("md k zz\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
    parse_err("md k q q\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
    parse_err("md k Tx\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
    parse_err("md k x\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
    parse_err("md Zm9 b\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
    parse_err("md k a b c d e f g h i j k l m n o p q r\r\n",
              BRIM_MCTEXT_ERR_META_MANY,
              "CLIENT_ERROR options flags too long\r\n");

    parse_ok("ma k\r\n", BRIM_MCTEXT_MA, &cmd);
    ck_assert_uint_eq(cmd.meta.delta, 1); /* the default */
    ck_assert_int_eq(cmd.meta.incr, 1);
    parse_ok("ma k D18446744073709551615 MD N0 J5 v t c k O1 q\r\n",
             BRIM_MCTEXT_MA, &cmd);
    ck_assert_uint_eq(cmd.meta.delta, UINT64_MAX);
    ck_assert_int_eq(cmd.meta.incr, 0);
    ck_assert_uint_eq(cmd.meta.initial, 5);
    ck_assert_int_eq(cmd.meta.vivify_ttl, 0);
    ck_assert_int_eq(cmd.noreply, 1);
    parse_ok("ma k M-\r\n", BRIM_MCTEXT_MA, &cmd);
    ck_assert_int_eq(cmd.meta.incr, 0);
    parse_ok("ma k M+\r\n", BRIM_MCTEXT_MA, &cmd);
    ck_assert_int_eq(cmd.meta.incr, 1);
    parse_ok("ma k MI\r\n", BRIM_MCTEXT_MA, &cmd);
    ck_assert_int_eq(cmd.meta.incr, 1);
    parse_err("ma\r\n", BRIM_MCTEXT_ERR_UNKNOWN, "ERROR\r\n");
    parse_err("ma k Mx\r\n", BRIM_MCTEXT_ERR_META_MA_MODE,
              "CLIENT_ERROR invalid mode for ma M token\r\n");
    parse_err("ma k MII\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
    parse_err("ma k Dx\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
    parse_err("ma k D-1\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
    parse_err("ma k D18446744073709551616\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
    parse_err("ma k Jx\r\n", BRIM_MCTEXT_ERR_META_BAD, bad);
}
END_TEST

START_TEST(mctext_meta_debug_noop)
{
    struct brim_mctext_cmd cmd;
    char                   k[16];

    parse_ok("me k\r\n", BRIM_MCTEXT_ME, &cmd);
    ck_assert_str_eq(key_of(&cmd, k, sizeof(k)), "k");
    /* Other tokens are ignored; only a "b" right after the key counts
     * (checked: "me Yw== x b" looks up "Yw==" as text). */
    parse_ok("me k x y z\r\n", BRIM_MCTEXT_ME, &cmd);
    parse_ok("me Yw== b\r\n", BRIM_MCTEXT_ME, &cmd);
    ck_assert_str_eq(key_of(&cmd, k, sizeof(k)), "c");
    parse_ok("me Yw== x b\r\n", BRIM_MCTEXT_ME, &cmd);
    ck_assert_str_eq(key_of(&cmd, k, sizeof(k)), "Yw==");
    /* Without a key, or one that does not decode: FORMAT (checked). */
    parse_err("me\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_err("me c b\r\n", BRIM_MCTEXT_ERR_FORMAT, FORMAT);
    parse_ok("mn\r\n", BRIM_MCTEXT_MN, &cmd);
}
END_TEST

START_TEST(mctext_base64_keys)
{
    static const struct {
        const char *in;
        const char *out; /* NULL: does not decode */
    } v[] = {
        {"Zm9v", "foo"},
        {"Zg==", "f"},
        {"Zm8=", "fo"},
        {"Zm9vYmFy", "foobar"},
        /* memcached 1.6.18 skips bytes outside the alphabet (checked) */
        {"Zm9v!", "foo"},
        {"Z!m9v", "foo"},
        /* the first padded group ends it (checked: "Zg==Zm9v" is "f") */
        {"Zg==Zm9v", "f"},
        {"Zg=x", "f\0"},
        {"Zm9", NULL},
        {"Z===", NULL},
        {"====", NULL},
        {"Zm9vYg", NULL},
        {"!!!!", NULL},
        {"", NULL},
    };
    struct brim_mctext_cmd cmd;
    char                   out[64], enc[64], s[96];
    size_t                 i, n, want;

    for (i = 0; i < BRIM_ARRAY_LEN(v); i++) {
        n = brim_mctext_b64_decode(v[i].in, strlen(v[i].in), out);
        if (v[i].out == NULL) {
            ck_assert_msg(n == 0, "%s decoded", v[i].in);
            continue;
        }
        want = strcmp(v[i].in, "Zg=x") == 0 ? 2 : strlen(v[i].out);
        ck_assert_msg(n == want, "%s: %zu bytes", v[i].in, n);
        ck_assert_mem_eq(out, v[i].out, want);
    }
    /* Encoding: padded, RFC 4648 test vectors. */
    ck_assert_uint_eq(brim_mctext_b64_encode("", 0, enc), 0);
    n = brim_mctext_b64_encode("f", 1, enc);
    ck_assert_mem_eq(enc, "Zg==", n);
    n = brim_mctext_b64_encode("fo", 2, enc);
    ck_assert_mem_eq(enc, "Zm8=", n);
    n = brim_mctext_b64_encode("foobar", 6, enc);
    ck_assert_uint_eq(n, 8);
    ck_assert_mem_eq(enc, "Zm9vYmFy", 8);
    n = brim_mctext_b64_encode("\x00\x01\x02\xff", 4, enc);
    ck_assert_mem_eq(enc, "AAEC/w==", n);
    /* In commands: the key as bytes, through brim_mctext_cmd_key(). */
    parse_ok("mg AAEC/w== b v k\r\n", BRIM_MCTEXT_MG, &cmd);
    ck_assert_int_eq(cmd.key_b64, 1);
    ck_assert_uint_eq(cmd.key_bin_len, 4);
    ck_assert_mem_eq(cmd.key_bin, "\x00\x01\x02\xff", 4);
    ck_assert_uint_eq(cmd.key_len, 8); /* the text as sent */
    parse_ok("ms Zm9v 2 b\r\nhi\r\n", BRIM_MCTEXT_MS, &cmd);
    ck_assert_str_eq(key_of(&cmd, s, sizeof(s)), "foo");
    parse_ok("md Zm9v b\r\n", BRIM_MCTEXT_MD, &cmd);
    ck_assert_str_eq(key_of(&cmd, s, sizeof(s)), "foo");
    parse_ok("ma Zm9v b\r\n", BRIM_MCTEXT_MA, &cmd);
    ck_assert_str_eq(key_of(&cmd, s, sizeof(s)), "foo");
    /* Without b the same text is the key. */
    parse_ok("mg Zm9v v\r\n", BRIM_MCTEXT_MG, &cmd);
    ck_assert_str_eq(key_of(&cmd, s, sizeof(s)), "Zm9v");
    /* A b key as long as the limit decodes into key_bin. */
    lim.max_key_bytes = 60;
    snprintf(s, sizeof(s), "mg %.60s b\r\n",
             "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA");
    parse_ok(s, BRIM_MCTEXT_MG, &cmd);
    ck_assert_uint_eq(cmd.key_bin_len, 45);
}
END_TEST

START_TEST(mctext_opaque)
{
    struct brim_mctext_cmd cmd;
    char                   s[128];
    size_t                 n;

    /* Up to 32 bytes, the 'O' included (checked: 31 characters after the
     * O pass, 32 fail, hit or miss). */
    for (n = 0; n <= 32; n++) {
        snprintf(s, sizeof(s), "mg k O%.*s\r\n", (int) n,
                 "0123456789012345678901234567890123456789");
        if (n <= 31) {
            parse_ok(s, BRIM_MCTEXT_MG, &cmd);
            ck_assert_uint_eq(cmd.meta.opaque_len, n);
        } else {
            parse_err(s, BRIM_MCTEXT_ERR_META_OPAQUE,
                      "CLIENT_ERROR opaque token too long\r\n");
        }
    }
    parse_err("md k O0123456789012345678901234567890123\r\n",
              BRIM_MCTEXT_ERR_META_OPAQUE,
              "CLIENT_ERROR opaque token too long\r\n");
    parse_err("ma k O0123456789012345678901234567890123\r\n",
              BRIM_MCTEXT_ERR_META_OPAQUE,
              "CLIENT_ERROR opaque token too long\r\n");
    ck_assert_int_eq(
        parse_s("ms k 2 O0123456789012345678901234567890123\r\n", &cmd), 0);
    ck_assert_int_eq(cmd.err, BRIM_MCTEXT_ERR_META_OPAQUE);
    ck_assert_uint_eq(cmd.swallow, 4);
    /* An opaque is any bytes but space. */
    parse_ok("mg k O\x01\xff=\r\n", BRIM_MCTEXT_MG, &cmd);
    ck_assert_uint_eq(cmd.meta.opaque_len, 3);
}
END_TEST

START_TEST(mctext_names)
{
    size_t      n;
    const char *r;

    ck_assert_str_eq(brim_mctext_kind_name(BRIM_MCTEXT_GET), "get");
    ck_assert_str_eq(brim_mctext_kind_name(BRIM_MCTEXT_FLUSH_ALL), "flush_all");
    ck_assert_str_eq(brim_mctext_kind_name(BRIM_MCTEXT_ME), "me");
    ck_assert_str_eq(brim_mctext_kind_name(BRIM_MCTEXT_NONE), "");
    ck_assert_str_eq(brim_mctext_kind_name(BRIM_MCTEXT_KIND_COUNT), "");
    ck_assert_str_eq(brim_mctext_err_name(BRIM_MCTEXT_ERR_NONE), "NONE");
    ck_assert_str_eq(brim_mctext_err_name(BRIM_MCTEXT_ERR_CHUNK), "CHUNK");
    ck_assert_str_eq(brim_mctext_err_name(BRIM_MCTEXT_ERR_COUNT), "?");
    r = brim_mctext_err_reply(BRIM_MCTEXT_ERR_TOO_LARGE, &n);
    ck_assert_uint_eq(n, strlen(r));
    ck_assert_str_eq(r, "SERVER_ERROR object too large for cache\r\n");
    ck_assert_ptr_null(brim_mctext_err_reply(BRIM_MCTEXT_ERR_NONE, &n));
    ck_assert_uint_eq(n, 0);
    ck_assert_ptr_null(brim_mctext_err_reply(BRIM_MCTEXT_ERR_HTTP, &n));
    ck_assert_ptr_null(
        brim_mctext_err_reply(BRIM_MCTEXT_ERR_LINE_TOO_LONG, &n));
    ck_assert_ptr_null(brim_mctext_err_reply(BRIM_MCTEXT_ERR_COUNT, &n));
}
END_TEST

/* Add TC, holding the one test FN, with the fixture, to S. The names are
 * read from the tcase_create("...") calls by tests/CMakeLists.txt. */
static void
add_case(Suite *s, TCase *tc, const TTest *fn)
{
    tcase_add_checked_fixture(tc, setup, NULL);
    tcase_add_test(tc, fn);
    suite_add_tcase(s, tc);
}

Suite *
brim_test_suite(void)
{
    Suite *s;

    s = suite_create("mctext");
    add_case(s, tcase_create("limits"), mctext_limits);
    add_case(s, tcase_create("get_family"), mctext_get_family);
    add_case(s, tcase_create("storage"), mctext_storage);
    add_case(s, tcase_create("delete"), mctext_delete);
    add_case(s, tcase_create("incr_decr"), mctext_incr_decr);
    add_case(s, tcase_create("touch"), mctext_touch);
    add_case(s, tcase_create("other_commands"), mctext_other_commands);
    add_case(s, tcase_create("noreply"), mctext_noreply);
    add_case(s, tcase_create("pipelined"), mctext_pipelined);
    add_case(s, tcase_create("split_points"), mctext_split_points);
    add_case(s, tcase_create("data_chunk"), mctext_data_chunk);
    add_case(s, tcase_create("key_too_long"), mctext_key_too_long);
    add_case(s, tcase_create("line_too_long"), mctext_line_too_long);
    add_case(s, tcase_create("unknown"), mctext_unknown);
    add_case(s, tcase_create("bad_numbers"), mctext_bad_numbers);
    add_case(s, tcase_create("value_limit"), mctext_value_limit);
    add_case(s, tcase_create("negative_exptime"), mctext_negative_exptime);
    add_case(s, tcase_create("meta_get_flags"), mctext_meta_get_flags);
    add_case(s, tcase_create("meta_set"), mctext_meta_set);
    add_case(s, tcase_create("meta_delete_arith"), mctext_meta_delete_arith);
    add_case(s, tcase_create("meta_debug_noop"), mctext_meta_debug_noop);
    add_case(s, tcase_create("base64_keys"), mctext_base64_keys);
    add_case(s, tcase_create("opaque"), mctext_opaque);
    add_case(s, tcase_create("names"), mctext_names);
    return s;
}
