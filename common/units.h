/*
 * common/units.h - numbers as people read them (issue 12): a decimal as
 * an integer or fixed decimals (never "1.638e+04"), and a byte count in
 * binary units ("11.8 MiB") to print beside the exact figure, and help
 * text wrapped for a terminal. Pure: no I/O, no allocation.
 */
#ifndef BRIM_COMMON_UNITS_H
#define BRIM_COMMON_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Room enough for any text of the two functions below, NUL included. */
#define BRIM_UNITS_TEXT_MAX 48

/*
 * Write V into BUF (SIZE bytes, at least 1; BRIM_UNITS_TEXT_MAX is always
 * enough) as text without an exponent: an integer when V is whole and
 * below 10^15 in magnitude ("16384"); otherwise fixed decimals with
 * trailing zeros dropped: 3 decimals from 1 up ("341.333", "1.576"),
 * four significant digits below 1 with at most 6 decimals ("0.9316",
 * "0.0004"); "-" for NaN, "inf" or "-inf". Text that does not fit
 * is cut at SIZE - 1 bytes. Returns BUF.
 */
char *brim_format_decimal(double v, char *buf, size_t size);

/*
 * Write BYTES into BUF (SIZE bytes, at least 1) in binary units with one
 * decimal: "512 B" below 1 KiB, then "1.0 KiB", "11.8 MiB", "3.2 GiB",
 * "1.5 TiB", "2.0 PiB", "16.0 EiB" (powers of 1024, rounded to nearest).
 * Text that does not fit is cut at SIZE - 1 bytes. Returns BUF.
 */
char *brim_format_bytes(uint64_t bytes, char *buf, size_t size);

/*
 * Lay TEXT (borrowed) out for a terminal into OUT (SIZE bytes, at least
 * 1): the cursor starts at column AT, lines break at spaces so that none
 * passes WIDTH columns (a word longer than that stands alone), and every
 * line after the first starts with COL spaces; a newline in TEXT starts
 * a new line. No newline is added at the end. Text that does not fit is
 * cut at SIZE - 1 bytes. Returns OUT. For --help texts (brim-node's
 * options, brimctl's commands).
 */
char *brim_wrap_text(const char *text, int at, int col, int width, char *out,
                     size_t size);

#endif /* BRIM_COMMON_UNITS_H */
