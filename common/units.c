/*
 * common/units.c - decimals without exponents, and byte counts in binary
 * units (units.h).
 */
#include "common/units.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

char *
brim_format_decimal(double v, char *buf, size_t size)
{
    char   text[BRIM_UNITS_TEXT_MAX + 320];
    size_t len;
    int    decimals;

    if (isnan(v)) {
        snprintf(buf, size, "-");
        return buf;
    }
    if (isinf(v)) {
        snprintf(buf, size, "%s", v < 0 ? "-inf" : "inf");
        return buf;
    }
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(buf, size, "%.0f", v);
        return buf;
    }
    /* From 1 up 3 decimals; below 1 four significant digits, at most 6
     * decimals: a ratio reads 0.9316, a rate 0.0004. */
    decimals = 3;
    if (fabs(v) < 1.0) {
        decimals = 3 - (int) floor(log10(fabs(v)));
        decimals = decimals > 6 ? 6 : decimals;
    }
    snprintf(text, sizeof(text), "%.*f", decimals, v);
    len = strlen(text);
    while (len > 0 && text[len - 1] == '0') {
        text[--len] = '\0';
    }
    if (len > 0 && text[len - 1] == '.') {
        text[--len] = '\0';
    }
    if (strcmp(text, "-0") == 0) {
        snprintf(text, sizeof(text), "0");
    }
    snprintf(buf, size, "%s", text);
    return buf;
}

char *
brim_format_bytes(uint64_t bytes, char *buf, size_t size)
{
    static const char *const units[] = {"KiB", "MiB", "GiB",
                                        "TiB", "PiB", "EiB"};
    double                   v = (double) bytes;
    int                      u = -1;

    if (bytes < 1024) {
        snprintf(buf, size, "%u B", (unsigned) bytes);
        return buf;
    }
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        u++;
    }
    /* 1023.96 KiB would print as "1024.0 KiB": say 1.0 MiB instead. */
    if (v >= 1023.95 && u < 5) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, size, "%.1f %s", v, units[u]);
    return buf;
}

/* Append N bytes of S to OUT[*LEN] (SIZE bytes), cut to fit. */
static void
wrap_put(char *out, size_t size, size_t *len, const char *s, size_t n)
{
    if (*len + 1 >= size) {
        return;
    }
    if (n > size - 1 - *len) {
        n = size - 1 - *len;
    }
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = '\0';
}

/* Append a newline and COL spaces. */
static void
wrap_newline(char *out, size_t size, size_t *len, int col)
{
    wrap_put(out, size, len, "\n", 1);
    while (col-- > 0) {
        wrap_put(out, size, len, " ", 1);
    }
}

char *
brim_wrap_text(const char *text, int at, int col, int width, char *out,
               size_t size)
{
    const char *p = text;
    size_t      n, len = 0;
    int         start = at;

    out[0] = '\0';
    while (*p != '\0') {
        if (*p == '\n') {
            wrap_newline(out, size, &len, col);
            at = start = col;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        n = strcspn(p, " \n");
        if (at > start && at + 1 + (int) n > width) {
            wrap_newline(out, size, &len, col);
            at = start = col;
        }
        if (at > start) {
            wrap_put(out, size, &len, " ", 1);
            at++;
        }
        wrap_put(out, size, &len, p, n);
        at += (int) n;
        p += n;
    }
    return out;
}
