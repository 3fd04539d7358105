/*
 * common/parse.c - numbers and addresses from text (common/parse.h).
 * Whole numbers are read digit by digit with an explicit overflow check
 * rather than strtoull, which takes a sign, spaces and "0x" and would
 * need errno handled around it at every caller.
 */
#include "common/parse.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/defs.h"

int
brim_parse_u64(const char *text, uint64_t min, uint64_t max, uint64_t *out)
{
    uint64_t    v = 0;
    const char *p;

    if (text == NULL || text[0] == '\0') {
        return BRIM_EINVAL;
    }
    for (p = text; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return BRIM_EINVAL;
        }
        if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10) {
            return BRIM_EINVAL; /* above 2^64 - 1 */
        }
        v = v * 10 + (uint64_t) (*p - '0');
    }
    if (v < min || v > max) {
        return BRIM_EINVAL;
    }
    *out = v;
    return 0;
}

int
brim_parse_u32(const char *text, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v;

    if (brim_parse_u64(text, min, max, &v) != 0) {
        return BRIM_EINVAL;
    }
    *out = (uint32_t) v;
    return 0;
}

int
brim_parse_double(const char *text, double min, double max, double *out)
{
    char  *end;
    double v;

    if (text == NULL || text[0] == '\0' || text[0] == ' ' || text[0] == '\t') {
        return BRIM_EINVAL;
    }
    errno = 0;
    v = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !isfinite(v) || !(v >= min)
        || !(v <= max))
    {
        return BRIM_EINVAL;
    }
    *out = v;
    return 0;
}

int
brim_parse_u64_range(const char *text, uint64_t lo, uint64_t hi,
                     uint64_t *out_min, uint64_t *out_max)
{
    const char *dash;
    char        first[24];
    uint64_t    a, b;
    size_t      n;

    if (text == NULL) {
        return BRIM_EINVAL;
    }
    dash = strchr(text, '-');
    if (dash == NULL) {
        if (brim_parse_u64(text, lo, hi, &a) != 0) {
            return BRIM_EINVAL;
        }
        *out_min = *out_max = a;
        return 0;
    }
    n = (size_t) (dash - text);
    if (n == 0 || n >= sizeof(first)) {
        return BRIM_EINVAL;
    }
    memcpy(first, text, n);
    first[n] = '\0';
    if (brim_parse_u64(first, lo, hi, &a) != 0
        || brim_parse_u64(dash + 1, lo, hi, &b) != 0 || a > b)
    {
        return BRIM_EINVAL;
    }
    *out_min = a;
    *out_max = b;
    return 0;
}

int
brim_addr_split(const char *addr, char *host, size_t host_size,
                uint32_t port_min, uint16_t *port, char errbuf[BRIM_ERRBUF_LEN])
{
    const char *colon, *h, *p;
    size_t      hlen;
    uint32_t    v;

    if (addr == NULL || addr[0] == '\0') {
        brim_errfmt(errbuf, "addr: no address given (want host:port)");
        return BRIM_EINVAL;
    }
    if (addr[0] == '[') {
        /* "[v6addr]:port": the brackets keep the address's own colons. */
        h = addr + 1;
        colon = strchr(h, ']');
        if (colon == NULL || colon[1] != ':') {
            brim_errfmt(errbuf,
                        "addr: bad address \"%.64s\": want "
                        "[v6addr]:port",
                        addr);
            return BRIM_EINVAL;
        }
        hlen = (size_t) (colon - h);
        p = colon + 2;
    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL || memchr(addr, ':', (size_t) (colon - addr))) {
            brim_errfmt(errbuf,
                        "addr: bad address \"%.64s\": want "
                        "host:port (IPv6 as [addr]:port)",
                        addr);
            return BRIM_EINVAL;
        }
        h = addr;
        hlen = (size_t) (colon - addr);
        p = colon + 1;
    }
    if (hlen == 0 || hlen >= host_size || hlen > BRIM_HOST_MAX) {
        brim_errfmt(errbuf,
                    "addr: bad address \"%.64s\": host is %zu bytes, "
                    "allowed 1 .. %zu",
                    addr, hlen,
                    BRIM_MIN(host_size - 1, (size_t) BRIM_HOST_MAX));
        return BRIM_EINVAL;
    }
    if (brim_parse_u32(p, port_min, 65535, &v) != 0) {
        brim_errfmt(errbuf,
                    "addr: bad address \"%.64s\": port \"%.16s\" is "
                    "not %u .. 65535",
                    addr, p, port_min);
        return BRIM_EINVAL;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    *port = (uint16_t) v;
    return 0;
}
