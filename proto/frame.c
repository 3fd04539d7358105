/*
 * proto/frame.c - length-prefixed framing: peek at a buffered header and
 * body, and write headers. The peek decides from the 4 header bytes alone,
 * so a huge announced length costs nothing (cases I10, I11).
 */
#include "proto/frame.h"

#include <brim/status.h>

uint32_t
brim_frame_get_hdr(const void *hdr)
{
    const unsigned char *p = hdr;

    return ((uint32_t) p[0] << 24) | ((uint32_t) p[1] << 16)
        | ((uint32_t) p[2] << 8) | (uint32_t) p[3];
}

void
brim_frame_put_hdr(void *hdr, uint32_t body_len)
{
    unsigned char *p = hdr;

    p[0] = (unsigned char) (body_len >> 24);
    p[1] = (unsigned char) (body_len >> 16);
    p[2] = (unsigned char) (body_len >> 8);
    p[3] = (unsigned char) body_len;
}

int
brim_frame_peek(const void *buf, size_t len, size_t max_frame_bytes,
                uint32_t *body_len)
{
    uint32_t n;

    if (len < BRIM_FRAME_HDR) {
        return BRIM_EAGAIN;
    }
    n = brim_frame_get_hdr(buf);
    /* Judge the announced length before waiting for (or buffering) it. */
    if (n > max_frame_bytes) {
        return BRIM_ETOOBIG;
    }
    if (len - BRIM_FRAME_HDR < n) {
        return BRIM_EAGAIN;
    }
    *body_len = n;
    return 0;
}

int
brim_frame_begin(struct brim_buf *out, size_t *mark)
{
    static const char zero[BRIM_FRAME_HDR];
    size_t            start;

    start = out->len;
    if (brim_buf_append(out, zero, sizeof(zero)) != 0) {
        return BRIM_ENOMEM;
    }
    *mark = start;
    return 0;
}

int
brim_frame_end(struct brim_buf *out, size_t mark)
{
    size_t body;

    body = out->len - mark - BRIM_FRAME_HDR;
    if (body > UINT32_MAX) {
        brim_frame_abort(out, mark);
        return BRIM_ETOOBIG;
    }
    brim_frame_put_hdr(out->data + mark, (uint32_t) body);
    return 0;
}

void
brim_frame_abort(struct brim_buf *out, size_t mark)
{
    brim_buf_truncate(out, mark);
}
