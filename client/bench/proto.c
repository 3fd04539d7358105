/*
 * client/bench/proto.c - what the protocol adapters share: the
 * table lookup by name and decimal formatting for the text protocols.
 */
#include "client/bench/proto.h"

#include <string.h>

const struct brim_bench_proto *
brim_bench_proto_find(const char *name)
{
    static const struct brim_bench_proto *const all[] = {
        &brim_bench_proto_brim, &brim_bench_proto_memcached,
        &brim_bench_proto_redis, &brim_bench_proto_redis_cluster};
    size_t i;

    for (i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (strcmp(all[i]->name, name) == 0) {
            return all[i];
        }
    }
    return NULL;
}

size_t
brim_bench_put_u64(char *out, uint64_t v)
{
    char   tmp[20];
    size_t n, i;

    n = 0;
    do {
        tmp[n++] = (char) ('0' + v % 10);
        v /= 10;
    } while (v != 0);
    for (i = 0; i < n; i++) {
        out[i] = tmp[n - 1 - i];
    }
    return n;
}
