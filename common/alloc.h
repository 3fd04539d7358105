/*
 * common/alloc.h - every heap allocation in brim goes through these wrappers.
 * They count live bytes at their real allocated size (malloc_usable_size),
 * which is what a node's memory limit is held to, and let tests inject
 * allocation failures (as SQLite's OOM tests do). Counters are per thread,
 * so a loop thread reads its own figure without locks.
 */
#ifndef BRIM_COMMON_ALLOC_H
#define BRIM_COMMON_ALLOC_H

#include <stddef.h>
#include <stdint.h>

/*
 * Allocate SIZE bytes (malloc semantics). Returns NULL on failure, or when
 * an injected failure fires. The caller owns the block: free it with
 * brim_free(). SIZE 0 returns a unique pointer or NULL, as malloc does.
 */
void *brim_malloc(size_t size);

/* As calloc(N, SIZE): zeroed, NULL on overflow of N * SIZE or failure. */
void *brim_calloc(size_t n, size_t size);

/*
 * As realloc(P, SIZE). On failure returns NULL and P is unchanged and still
 * owned by the caller.
 */
void *brim_realloc(void *p, size_t size);

/* Free P (NULL is allowed); P must come from a brim_* allocator. */
void brim_free(void *p);

/* A copy of the first N bytes of S plus a NUL; free with brim_free(). */
char *brim_strndup(const char *s, size_t n);

/* Bytes this thread holds through brim_* right now (usable sizes). */
size_t brim_alloc_bytes(void);

/*
 * Test hook: make the allocation that comes N calls from now fail, and every
 * one after it while STICKY is non-zero. N = 0 turns injection off.
 */
void brim_alloc_fail_after(uint64_t n, int sticky);

#endif /* BRIM_COMMON_ALLOC_H */
