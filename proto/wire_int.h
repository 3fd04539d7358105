/*
 * proto/wire_int.h - helpers shared by proto/wire_*.c and proto/topo.c
 * only: typed reads of unpacked msgpack objects and a msgpack packer that
 * writes into a struct brim_buf. Not installed and not for other modules.
 */
#ifndef BRIM_PROTO_WIRE_INT_H
#define BRIM_PROTO_WIRE_INT_H

#include <stdint.h>

#include <msgpack.h>

#include "proto/buf.h"

/* msgpack_packer write callback: append to the struct brim_buf DATA. */
static inline int
wire_pack_write(void *data, const char *p, size_t n)
{
    return brim_buf_append(data, p, n) == 0 ? 0 : -1;
}

/* Point PK's output at the end of OUT. */
static inline void
wire_packer_init(msgpack_packer *pk, struct brim_buf *out)
{
    msgpack_packer_init(pk, out, wire_pack_write);
}

/* Pack the byte string P[0 .. N) as msgpack bin; 0 or -1. */
static inline int
wire_pack_bytes(msgpack_packer *pk, const void *p, size_t n)
{
    if (msgpack_pack_bin(pk, n) != 0) {
        return -1;
    }
    return n == 0 ? 0 : msgpack_pack_bin_body(pk, p, n);
}

/* Pack the text P[0 .. N) as msgpack str; 0 or -1. */
static inline int
wire_pack_text(msgpack_packer *pk, const void *p, size_t n)
{
    if (msgpack_pack_str(pk, n) != 0) {
        return -1;
    }
    return n == 0 ? 0 : msgpack_pack_str_body(pk, p, n);
}

/* True when O is a non-negative integer; its value in *V. */
static inline int
wire_get_u64(const msgpack_object *o, uint64_t *v)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        return 0;
    }
    *v = o->via.u64;
    return 1;
}

/* True when O is an integer in 0 .. 2^32 - 1; its value in *V. */
static inline int
wire_get_u32(const msgpack_object *o, uint32_t *v)
{
    if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > UINT32_MAX) {
        return 0;
    }
    *v = (uint32_t) o->via.u64;
    return 1;
}

/* True when O is a str or a bin (both are bytes to brim); *P and *N. */
static inline int
wire_get_bytes(const msgpack_object *o, const char **p, size_t *n)
{
    if (o->type == MSGPACK_OBJECT_BIN) {
        *p = o->via.bin.ptr;
        *n = o->via.bin.size;
        return 1;
    }
    if (o->type == MSGPACK_OBJECT_STR) {
        *p = o->via.str.ptr;
        *n = o->via.str.size;
        return 1;
    }
    return 0;
}

#endif /* BRIM_PROTO_WIRE_INT_H */
