/*
 * server/random.c - random ids for the daemons (see random.h).
 */
#include "server/random.h"

#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

uint64_t
brim_random_u64(void)
{
    uint64_t v = 0;

    if (getrandom(&v, sizeof(v), 0) != (ssize_t) sizeof(v)) {
        v = (uint64_t) time(NULL) ^ ((uint64_t) getpid() << 32);
    }
    return v;
}
