/*
 * server/random.h - random 64-bit ids for the daemons: incarnations,
 * cluster ids and seeds. From the kernel's getrandom(2); if that fails,
 * a mix of time and pid (weak, logged by nobody: ids only need to differ).
 */
#ifndef BRIM_SERVER_RANDOM_H
#define BRIM_SERVER_RANDOM_H

#include <stdint.h>

/* A random 64-bit value. Never fails. */
uint64_t brim_random_u64(void);

#endif /* BRIM_SERVER_RANDOM_H */
