/*
 * server/prefault.c - fault a daemon's heap in before it serves (see
 * prefault.h for why).
 */
#include "server/prefault.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Below glibc's smallest mmap threshold (128 KiB), so every chunk comes
 * from the heap (brk), where freed memory stays. */
#define PREFAULT_CHUNK (64u << 10)

/* The chunks kept, one per call: each is the highest chunk that call
 * took, so it sits between the freed ones and the heap's top. Each
 * holds a pointer to the one kept before it; the list stays reachable
 * for the process's life (not a leak to LeakSanitizer). */
static void *prefault_kept;

int
brim_prefault_heap(size_t bytes, size_t *done_bytes)
{
    size_t nchunks = (bytes + PREFAULT_CHUNK - 1) / PREFAULT_CHUNK;
    size_t page = (size_t) sysconf(_SC_PAGESIZE);
    size_t got = 0, top = 0;
    char **chunk;

    if (done_bytes != NULL) {
        *done_bytes = 0;
    }
    if (bytes == 0) {
        return 0;
    }
    if (page == 0 || page == (size_t) -1) {
        page = 4096;
    }
    chunk = malloc(nchunks * sizeof(*chunk));
    if (chunk == NULL) {
        return -1;
    }
    for (got = 0; got < nchunks; got++) {
        chunk[got] = malloc(PREFAULT_CHUNK);
        if (chunk[got] == NULL) {
            break;
        }
        for (size_t off = 0; off < PREFAULT_CHUNK; off += page) {
            ((volatile char *) chunk[got])[off] = 0;
        }
        if ((uintptr_t) chunk[got] > (uintptr_t) chunk[top]) {
            top = got;
        }
    }
    /* The highest chunk stays allocated: freed, the others merge into
     * one free block below it that glibc keeps and later allocations
     * split, instead of into the heap's top, which free() gives back to
     * the kernel past M_TRIM_THRESHOLD. A small block kept instead would
     * not do: malloc may serve it from a free block lower in the heap. */
    for (size_t i = 0; i < got; i++) {
        if (i == top) {
            *(void **) chunk[i] = prefault_kept;
            prefault_kept = chunk[i];
            continue;
        }
        free(chunk[i]);
    }
    free(chunk);
    if (done_bytes != NULL) {
        *done_bytes = got * (size_t) PREFAULT_CHUNK;
    }
    return got == nchunks ? 0 : -1;
}

/* The first unsigned number in file PATH after PREFIX on a line of its own
 * (PREFIX "" reads the file's first number) into *V. 0, or -1 when the
 * file or the number is absent ("max" in memory.max is absent). */
static int
read_number(const char *path, const char *prefix, uint64_t *v)
{
    FILE  *f = fopen(path, "r");
    char   line[256];
    size_t n = strlen(prefix);
    int    rc = -1;

    if (f == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, prefix, n) == 0
            && sscanf(line + n, "%" SCNu64, v) == 1) {
            rc = 0;
            break;
        }
    }
    fclose(f);
    return rc;
}

int
brim_prefault_room(size_t *room)
{
    uint64_t avail_kb, limit, used;
    uint64_t best;

    if (read_number("/proc/meminfo", "MemAvailable:", &avail_kb) != 0) {
        return -1;
    }
    best = avail_kb * 1024;
    if ((read_number("/sys/fs/cgroup/memory.max", "", &limit) == 0
         && read_number("/sys/fs/cgroup/memory.current", "", &used) == 0)
        || (read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes", "",
                        &limit)
                == 0
            && read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes", "",
                           &used)
                == 0))
    {
        uint64_t left = limit > used ? limit - used : 0;

        if (left < best) {
            best = left;
        }
    }
    *room = best > SIZE_MAX ? SIZE_MAX : (size_t) best;
    return 0;
}
