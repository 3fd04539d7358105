/*
 * common/alloc.c - counting allocator wrappers over libc malloc.
 * Sizes come from malloc_usable_size(), so the count is what the allocator
 * really handed out, not what was asked for.
 */
#include "common/alloc.h"

#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local size_t   alloc_live_bytes;     /* usable bytes held */
static _Thread_local uint64_t alloc_fail_countdown; /* 0: injection off */
static _Thread_local int      alloc_fail_sticky;    /* keep failing once hit */

/* True when the injected failure fires for this call. */
static int
alloc_should_fail(void)
{
    if (alloc_fail_countdown == 0) {
        return 0;
    }
    if (alloc_fail_countdown == 1) {
        if (alloc_fail_sticky == 0) {
            alloc_fail_countdown = 0;
        }
        return 1;
    }
    alloc_fail_countdown--;
    return 0;
}

void *
brim_malloc(size_t size)
{
    void *p;

    if (alloc_should_fail()) {
        return NULL;
    }
    p = malloc(size);
    if (p != NULL) {
        alloc_live_bytes += malloc_usable_size(p);
    }
    return p;
}

void *
brim_calloc(size_t n, size_t size)
{
    void *p;

    if (alloc_should_fail()) {
        return NULL;
    }
    /* Check N * SIZE here: sanitizer allocators abort on it by default. */
    if (size != 0 && n > SIZE_MAX / size) {
        return NULL;
    }
    p = calloc(n, size);
    if (p != NULL) {
        alloc_live_bytes += malloc_usable_size(p);
    }
    return p;
}

void *
brim_realloc(void *p, size_t size)
{
    void  *q;
    size_t old;

    if (alloc_should_fail()) {
        return NULL;
    }
    if (size == 0) {
        size = 1; /* realloc(p, 0) may free P: keep one contract */
    }
    old = p != NULL ? malloc_usable_size(p) : 0;
    q = realloc(p, size);
    if (q == NULL) {
        return NULL; /* P is untouched and still the caller's */
    }
    alloc_live_bytes -= old;
    alloc_live_bytes += malloc_usable_size(q);
    return q;
}

void
brim_free(void *p)
{
    if (p == NULL) {
        return;
    }
    alloc_live_bytes -= malloc_usable_size(p);
    free(p);
}

char *
brim_strndup(const char *s, size_t n)
{
    char *copy;

    copy = brim_malloc(n + 1);
    if (copy == NULL) {
        return NULL;
    }
    memcpy(copy, s, n);
    copy[n] = '\0';
    return copy;
}

size_t
brim_alloc_bytes(void)
{
    return alloc_live_bytes;
}

void
brim_alloc_fail_after(uint64_t n, int sticky)
{
    alloc_fail_countdown = n;
    alloc_fail_sticky = sticky;
}
