/*
 * proto/buf.h - a growable byte buffer over brim_malloc: the output of every
 * encoder in proto/ and, in the daemons, a connection's input and output
 * queue. Bytes are appended at the tail and consumed from the head. Not
 * thread-safe; one owner at a time.
 */
#ifndef BRIM_PROTO_BUF_H
#define BRIM_PROTO_BUF_H

#include <stddef.h>

/*
 * A buffer: DATA[0 .. LEN) holds the bytes, DATA[LEN .. CAP) is room. Read
 * the members directly; change them only through the functions below. A
 * zeroed struct is an empty buffer.
 */
struct brim_buf {
    char  *data; /* CAP bytes from brim_malloc, or NULL */
    size_t len;  /* bytes in use */
    size_t cap;  /* bytes allocated */
};

/* Make B an empty buffer that holds no memory. */
void brim_buf_init(struct brim_buf *b);

/* Free B's memory and make it empty; a zeroed buffer is fine. */
void brim_buf_destroy(struct brim_buf *b);

/*
 * Make room for at least N more bytes after B->len, growing by doubling.
 * DATA may move: pointers into it are invalid afterwards. Returns 0, or
 * BRIM_ENOMEM (B is unchanged).
 */
int brim_buf_reserve(struct brim_buf *b, size_t n);

/* The first free byte, B->data + B->len (room as reserved). */
char *brim_buf_tail(struct brim_buf *b);

/* Count N bytes written at the tail as used; N must fit the room. */
void brim_buf_commit(struct brim_buf *b, size_t n);

/*
 * Append N bytes from P (borrowed; may be NULL when N is 0). Returns 0, or
 * BRIM_ENOMEM (B is unchanged).
 */
int brim_buf_append(struct brim_buf *b, const void *p, size_t n);

/*
 * Drop the first N bytes (N <= B->len) and move the rest to the front. The
 * memory is kept for reuse.
 */
void brim_buf_consume(struct brim_buf *b, size_t n);

/* Cut B back to its first LEN bytes (LEN <= B->len); memory is kept. */
void brim_buf_truncate(struct brim_buf *b, size_t len);

#endif /* BRIM_PROTO_BUF_H */
