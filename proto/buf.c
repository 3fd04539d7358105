/*
 * proto/buf.c - the growable byte buffer of proto/buf.h. Growth doubles the
 * capacity, so appending N bytes one at a time costs O(N) copies in all.
 */
#include "proto/buf.h"

#include <stdint.h>
#include <string.h>

#include "common/alloc.h"
#include "common/defs.h"

/* The smallest allocation: one small frame fits without growing again. */
#define BUF_MIN_CAP 256

void
brim_buf_init(struct brim_buf *b)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void
brim_buf_destroy(struct brim_buf *b)
{
    brim_free(b->data);
    brim_buf_init(b);
}

int
brim_buf_reserve(struct brim_buf *b, size_t n)
{
    char  *p;
    size_t want, cap;

    if (b->cap - b->len >= n) {
        return 0;
    }
    if (n > SIZE_MAX - b->len) {
        return BRIM_ENOMEM;
    }
    want = b->len + n;
    cap = b->cap < BUF_MIN_CAP ? BUF_MIN_CAP : b->cap;
    while (cap < want) {
        cap = cap > SIZE_MAX / 2 ? want : cap * 2;
    }
    p = brim_realloc(b->data, cap);
    if (p == NULL) {
        return BRIM_ENOMEM;
    }
    b->data = p;
    b->cap = cap;
    return 0;
}

char *
brim_buf_tail(struct brim_buf *b)
{
    if (b->data == NULL) {
        return NULL; /* NULL + 0 is undefined behaviour */
    }
    return b->data + b->len;
}

void
brim_buf_commit(struct brim_buf *b, size_t n)
{
    BRIM_ASSERT(n <= b->cap - b->len);
    b->len += n;
}

int
brim_buf_append(struct brim_buf *b, const void *p, size_t n)
{
    if (n == 0) {
        return 0;
    }
    if (brim_buf_reserve(b, n) != 0) {
        return BRIM_ENOMEM;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

void
brim_buf_consume(struct brim_buf *b, size_t n)
{
    BRIM_ASSERT(n <= b->len);
    if (n == 0) {
        return;
    }
    if (n < b->len) {
        memmove(b->data, b->data + n, b->len - n);
    }
    b->len -= n;
}

void
brim_buf_truncate(struct brim_buf *b, size_t len)
{
    BRIM_ASSERT(len <= b->len);
    b->len = len;
}
