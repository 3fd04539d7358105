/*
 * tests/unit/test_frame.c - proto/frame.c and proto/buf.c: the length peek
 * (whole, AGAIN, TOOBIG from the header alone), frames split and joined as
 * a socket delivers them (case I11 of shared/cases/inputs.md, at the frame
 * level), header writing, and the growable buffer.
 */
#include "tests/support/check_main.h"

#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "proto/buf.h"
#include "proto/frame.h"
#include "proto/wire.h"

/* A frame: 4-byte header for a 3-byte body, the body 93 01 02 03. */
static const unsigned char frame_small[] = {
    0x00, 0x00, 0x00, 0x04, 0x93, 0x01, 0x02, 0x03,
};

START_TEST(frame_peek_whole_frame)
{
    unsigned char buf[64];
    uint32_t      len;
    int           rc;

    len = 777;
    rc = brim_frame_peek(frame_small, sizeof(frame_small), 1024, &len);
    ck_assert_msg(rc == 0, "rc=%s", brim_err_name(rc));
    ck_assert_uint_eq(len, 4);

    /* Bytes of a next frame after it change nothing. */
    memcpy(buf, frame_small, sizeof(frame_small));
    memset(buf + sizeof(frame_small), 0xff, 8);
    rc = brim_frame_peek(buf, sizeof(frame_small) + 8, 1024, &len);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(len, 4);
}
END_TEST

START_TEST(frame_peek_again_until_whole)
{
    uint32_t len;
    size_t   have;
    int      rc;

    rc = brim_frame_peek(NULL, 0, 1024, &len);
    ck_assert_int_eq(rc, BRIM_EAGAIN);
    /* One byte at a time, as a client writing byte by byte (I11). */
    for (have = 0; have < sizeof(frame_small); have++) {
        len = 777;
        rc = brim_frame_peek(frame_small, have, 1024, &len);
        ck_assert_msg(rc == BRIM_EAGAIN, "%zu bytes: rc=%s", have,
                      brim_err_name(rc));
        ck_assert_uint_eq(len, 777); /* written only on success */
    }
    rc = brim_frame_peek(frame_small, have, 1024, &len);
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(len, 4);
}
END_TEST

START_TEST(frame_peek_split_after_header)
{
    unsigned char buf[4 + 10];
    uint32_t      len;

    brim_frame_put_hdr(buf, 10);
    memset(buf + 4, 0xc0, 10);
    ck_assert_int_eq(brim_frame_peek(buf, 4, 1024, &len), BRIM_EAGAIN);
    ck_assert_int_eq(brim_frame_peek(buf, 13, 1024, &len), BRIM_EAGAIN);
    ck_assert_int_eq(brim_frame_peek(buf, 14, 1024, &len), 0);
    ck_assert_uint_eq(len, 10);
}
END_TEST

START_TEST(frame_peek_toobig_from_header)
{
    static const unsigned char huge[] = {0xff, 0xff, 0xff, 0xff};
    struct brim_wire_limits    lim;
    unsigned char              hdr[4];
    uint32_t                   len;
    size_t                     before;

    brim_wire_limits_default(&lim);
    before = brim_alloc_bytes();
    /* I10: 0xFFFFFFFF is refused from its 4 bytes; no body is awaited. */
    len = 777;
    ck_assert_int_eq(brim_frame_peek(huge, 4, lim.max_frame_bytes, &len),
                     BRIM_ETOOBIG);
    ck_assert_uint_eq(len, 777);
    ck_assert_uint_eq(brim_alloc_bytes(), before);

    /* The limit itself is allowed; one more byte is not. */
    brim_frame_put_hdr(hdr, lim.max_frame_bytes);
    ck_assert_int_eq(brim_frame_peek(hdr, 4, lim.max_frame_bytes, &len),
                     BRIM_EAGAIN);
    brim_frame_put_hdr(hdr, lim.max_frame_bytes + 1);
    ck_assert_int_eq(brim_frame_peek(hdr, 4, lim.max_frame_bytes, &len),
                     BRIM_ETOOBIG);
    /* A header alone suffices even when fewer bytes are buffered. */
    ck_assert_int_eq(brim_frame_peek(hdr, 3, lim.max_frame_bytes, &len),
                     BRIM_EAGAIN);
}
END_TEST

START_TEST(frame_three_in_one_buffer)
{
    unsigned char buf[3 * 16];
    uint32_t      len;
    size_t        off, n;
    int           i, rc;

    /* Three frames of bodies 1, 2 and 3 bytes, back to back (I11). */
    n = 0;
    for (i = 1; i <= 3; i++) {
        brim_frame_put_hdr(buf + n, (uint32_t) i);
        memset(buf + n + 4, i, (size_t) i);
        n += 4 + (size_t) i;
    }
    off = 0;
    for (i = 1; i <= 3; i++) {
        rc = brim_frame_peek(buf + off, n - off, 1024, &len);
        ck_assert_int_eq(rc, 0);
        ck_assert_uint_eq(len, (uint32_t) i);
        ck_assert_uint_eq(buf[off + 4], (unsigned) i); /* in order */
        off += BRIM_FRAME_HDR + len;
    }
    ck_assert_uint_eq(off, n);
    ck_assert_int_eq(brim_frame_peek(buf + off, n - off, 1024, &len),
                     BRIM_EAGAIN);
}
END_TEST

START_TEST(frame_empty_body)
{
    static const unsigned char zero[] = {0, 0, 0, 0};
    uint32_t                   len;

    /* A zero length is a whole (empty) frame; the checker refuses it. */
    ck_assert_int_eq(brim_frame_peek(zero, 4, 1024, &len), 0);
    ck_assert_uint_eq(len, 0);
    ck_assert_int_eq(brim_wire_check(zero + 4, 0, BRIM_WIRE_MAX_DEPTH),
                     BRIM_EBADREQ);
}
END_TEST

START_TEST(frame_header_round_trip)
{
    static const uint32_t vals[] = {0,     1,           255,       256,
                                    65535, 0x01020304u, UINT32_MAX};
    unsigned char         hdr[4];
    struct brim_buf       out;
    size_t                i, mark;

    for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        brim_frame_put_hdr(hdr, vals[i]);
        ck_assert_uint_eq(brim_frame_get_hdr(hdr), vals[i]);
    }
    brim_frame_put_hdr(hdr, 0x01020304u);
    ck_assert_uint_eq(hdr[0], 1); /* big-endian on the wire */
    ck_assert_uint_eq(hdr[3], 4);

    /* begin/end: the header is patched with the body's length. */
    brim_buf_init(&out);
    ck_assert_int_eq(brim_buf_append(&out, "xy", 2), 0);
    ck_assert_int_eq(brim_frame_begin(&out, &mark), 0);
    ck_assert_uint_eq(mark, 2);
    ck_assert_int_eq(brim_buf_append(&out, "hello", 5), 0);
    ck_assert_int_eq(brim_frame_end(&out, mark), 0);
    ck_assert_uint_eq(out.len, 2 + 4 + 5);
    ck_assert_uint_eq(brim_frame_get_hdr(out.data + 2), 5);
    /* abort removes an unfinished frame. */
    ck_assert_int_eq(brim_frame_begin(&out, &mark), 0);
    ck_assert_int_eq(brim_buf_append(&out, "junk", 4), 0);
    brim_frame_abort(&out, mark);
    ck_assert_uint_eq(out.len, 11);
    brim_buf_destroy(&out);
}
END_TEST

START_TEST(buf_grow_consume)
{
    struct brim_buf b;
    size_t          i, before;
    char            c;

    before = brim_alloc_bytes();
    brim_buf_init(&b);
    ck_assert_ptr_null(brim_buf_tail(&b));
    for (i = 0; i < 10000; i++) {
        c = (char) (i % 251);
        ck_assert_int_eq(brim_buf_append(&b, &c, 1), 0);
    }
    ck_assert_uint_eq(b.len, 10000);
    ck_assert_uint_ge(b.cap, b.len);
    brim_buf_consume(&b, 9000);
    ck_assert_uint_eq(b.len, 1000);
    for (i = 0; i < 1000; i++) {
        ck_assert_int_eq(b.data[i], (char) ((i + 9000) % 251));
    }
    /* reserve, write at the tail, commit: what a read callback does. */
    ck_assert_int_eq(brim_buf_reserve(&b, 65536), 0);
    ck_assert_uint_ge(b.cap - b.len, 65536);
    memset(brim_buf_tail(&b), 'z', 10);
    brim_buf_commit(&b, 10);
    ck_assert_uint_eq(b.len, 1010);
    ck_assert_int_eq(b.data[1009], 'z');
    brim_buf_truncate(&b, 5);
    ck_assert_uint_eq(b.len, 5);
    brim_buf_consume(&b, 5);
    ck_assert_uint_eq(b.len, 0);
    brim_buf_destroy(&b);
    brim_buf_destroy(&b); /* a zeroed buffer is fine */
    ck_assert_uint_eq(brim_alloc_bytes(), before);
}
END_TEST

START_TEST(buf_nomem_unchanged)
{
    struct brim_buf b;

    brim_buf_init(&b);
    ck_assert_int_eq(brim_buf_append(&b, "abc", 3), 0);
    brim_alloc_fail_after(1, 1);
    ck_assert_int_eq(brim_buf_reserve(&b, 1 << 20), BRIM_ENOMEM);
    ck_assert_int_eq(brim_buf_append(&b, NULL, 0), 0);
    brim_alloc_fail_after(0, 0);
    ck_assert_uint_eq(b.len, 3);
    ck_assert_mem_eq(b.data, "abc", 3);
    ck_assert_int_eq(brim_buf_reserve(&b, SIZE_MAX), BRIM_ENOMEM);
    ck_assert_uint_eq(b.len, 3);
    brim_buf_destroy(&b);
}
END_TEST

/* Add the TCase TC holding the one test FN. */
static void
add_case(Suite *s, TCase *tc, const TTest *fn)
{
    tcase_add_test(tc, fn);
    suite_add_tcase(s, tc);
}

Suite *
brim_test_suite(void)
{
    Suite *s;

    s = suite_create("frame");
    add_case(s, tcase_create("peek_whole_frame"), frame_peek_whole_frame);
    add_case(s, tcase_create("peek_again_until_whole"),
             frame_peek_again_until_whole);
    add_case(s, tcase_create("peek_split_after_header"),
             frame_peek_split_after_header);
    add_case(s, tcase_create("peek_toobig_from_header"),
             frame_peek_toobig_from_header);
    add_case(s, tcase_create("three_in_one_buffer"), frame_three_in_one_buffer);
    add_case(s, tcase_create("empty_body"), frame_empty_body);
    add_case(s, tcase_create("header_round_trip"), frame_header_round_trip);
    add_case(s, tcase_create("buf_grow_consume"), buf_grow_consume);
    add_case(s, tcase_create("buf_nomem_unchanged"), buf_nomem_unchanged);
    return s;
}
