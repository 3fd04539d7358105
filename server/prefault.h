/*
 * server/prefault.h - fault a daemon's heap in before it serves.
 *
 * The first write to a page of anonymous memory costs a page fault and
 * the kernel's zeroing of the page; on a virtual machine whose host backs
 * guest memory lazily (or takes back pages the guest freed) it costs a
 * host fault too. Measured on the 2-core VM of docs/performance.md: a
 * joining node that received 1.1 GB spent 66% of its loop in
 * clear_page_erms (perf), and the clients' requests queued behind it.
 * brim_prefault_heap() pays that cost once, before the node joins: it
 * takes the bytes from malloc in chunks served from the heap, writes one
 * byte of every page, and frees all but the highest one, which it keeps,
 * so that they stay in the process (glibc trims only the top of its
 * heap) and later allocations reuse pages already backed. The same idea as
 * memcached's -L (preallocate the whole -m at start).
 */
#ifndef BRIM_SERVER_PREFAULT_H
#define BRIM_SERVER_PREFAULT_H

#include <stddef.h>

/*
 * Fault in BYTES of heap (rounded up to 64 KiB chunks). Blocks the
 * calling thread: at about 0.5 to 2.5 GB/s on the VM measured, seconds
 * for gigabytes; call it before the event loop runs. *DONE_BYTES (may be
 * NULL) receives how many bytes were faulted in; fewer than BYTES when
 * malloc refused (then the chunks taken are freed the same way and the
 * call returns -1, not fatal: the heap just starts colder). Returns 0
 * when all of BYTES was faulted in. Keeps one 64 KiB chunk of it
 * allocated for the process's life (the guard that keeps the freed
 * chunks off the heap's top). A call with BYTES 0 does nothing and
 * returns 0.
 */
int brim_prefault_heap(size_t bytes, size_t *done_bytes);

/*
 * The memory this process may still fault in, in bytes: the least of
 * /proc/meminfo's MemAvailable and, when a memory cgroup limit is
 * readable at /sys/fs/cgroup (v2 memory.max less memory.current, or v1
 * memory.limit_in_bytes less memory.usage_in_bytes), that limit's room.
 * A best effort, to refuse a --prefault that would wake the OOM killer.
 * Returns 0 and sets *ROOM, or -1 when MemAvailable cannot be read
 * (*ROOM untouched).
 */
int brim_prefault_room(size_t *room);

#endif
