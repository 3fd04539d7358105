/*
 * proto/frame.h - brim's framing (proto/PROTOCOL.md, "Frames"): a 4-byte
 * big-endian body length, then a body of exactly that many bytes holding one
 * msgpack array. The length is judged before anything is allocated for the
 * body. This file knows nothing of msgpack; proto/wire.h reads the body.
 */
#ifndef BRIM_PROTO_FRAME_H
#define BRIM_PROTO_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "proto/buf.h"

/* Bytes of the length header in front of every body. */
#define BRIM_FRAME_HDR 4

/*
 * Look at the bytes BUF[0 .. LEN) (borrowed) that start at a frame boundary.
 * Returns:
 *   0             a whole frame is buffered; *BODY_LEN is its body's length
 *                 in bytes, which starts at BUF + BRIM_FRAME_HDR (it may be
 *                 0: an empty body, which brim_wire_check() refuses)
 *   BRIM_EAGAIN   fewer than BRIM_FRAME_HDR + body bytes so far: read more
 *   BRIM_ETOOBIG  the header announces a body above MAX_FRAME_BYTES; decided
 *                 from the header alone, so the body is never waited for.
 *                 The connection sends a TOOBIG error frame, then closes.
 * *BODY_LEN is written only on success. BUF may be NULL when LEN is 0.
 */
int brim_frame_peek(const void *buf, size_t len, size_t max_frame_bytes,
                    uint32_t *body_len);

/* Write BODY_LEN big-endian into the BRIM_FRAME_HDR bytes at HDR. */
void brim_frame_put_hdr(void *hdr, uint32_t body_len);

/* Read the big-endian length at HDR (BRIM_FRAME_HDR bytes). */
uint32_t brim_frame_get_hdr(const void *hdr);

/*
 * Start a frame at the end of OUT: append a placeholder header and store in
 * *MARK the offset where the frame starts. Write the body after it, then
 * call brim_frame_end() or brim_frame_abort() with the same MARK. Returns 0
 * or BRIM_ENOMEM (OUT unchanged, *MARK unwritten).
 */
int brim_frame_begin(struct brim_buf *out, size_t *mark);

/*
 * Finish the frame that starts at MARK in OUT: patch its header with the
 * body's length. Returns 0, or BRIM_ETOOBIG when the body exceeds 2^32 - 1
 * bytes, in which case the frame is removed again.
 */
int brim_frame_end(struct brim_buf *out, size_t mark);

/* Remove the unfinished frame that starts at MARK: OUT->len = MARK. */
void brim_frame_abort(struct brim_buf *out, size_t mark);

#endif /* BRIM_PROTO_FRAME_H */
