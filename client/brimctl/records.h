/*
 * client/brimctl/records.h - the input of brimctl import and verify: a
 * stream of records, each a key field and the bytes to store, read from a
 * file or stdin in one of two formats (records.c):
 *
 *   deb822  Debian control records ("apt-cache dumpavail"), separated by
 *           blank lines (empty, or only spaces, tabs and CRs). The value is
 *           the record's lines exactly as in the input, each with its
 *           newline (the last line of an input that ends without one has
 *           none), without the blank lines around it. The key field is
 *           the first line "NAME: text" whose NAME matches (ignoring case,
 *           as Debian does) and that is not a continuation line; its text
 *           with the blanks around it removed is the key.
 *   jsonl   one JSON object a line with string fields "key" and "value"
 *           (UTF-8; "\u0000" allowed); the value is the decoded string.
 *           Lines of only blanks are passed over.
 */
#ifndef BRIM_CLIENT_BRIMCTL_RECORDS_H
#define BRIM_CLIENT_BRIMCTL_RECORDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include <brim/status.h>

/* A record larger than this many bytes stops the reading (an input with
 * no record separators would otherwise be buffered whole). */
#define BRIM_CTL_RECORD_MAX (64u << 20)

/* brim_ctl_reader_next(): a record without a usable key, WHY says why. */
#define BRIM_CTL_READ_SKIP 2

/* One record; every pointer is borrowed until the next read. */
struct brim_ctl_rec {
    const char *key;     /* the key field's text, no prefix */
    size_t      key_len; /* bytes, > 0 */
    const char *val;     /* the value to store */
    size_t      val_len; /* bytes */
    uint64_t    line;    /* the record's first line, from 1 */
};

/* A reader over one input; fields are read-only outside records.c. */
struct brim_ctl_reader {
    FILE       *f;          /* the input */
    int         owned;      /* F was opened here: fclose it */
    const char *name;       /* for messages: the path or "stdin" */
    int         format;     /* enum brim_ctl_format */
    const char *field;      /* deb822: the key field's name */
    size_t      field_len;  /* its bytes */
    char       *buf;        /* input read, [off, len) unused */
    size_t      off;        /* first unused byte of BUF */
    size_t      len;        /* bytes in BUF */
    size_t      cap;        /* BUF's size */
    int         eof;        /* F has nothing more */
    uint64_t    line;       /* lines before BUF + OFF */
    uint64_t    bytes_read; /* from F so far */
    uint64_t    size;       /* F's size if a regular file, else 0 */
    json_t     *json;       /* jsonl: the current record's object */
};

/*
 * Open PATH ("-": stdin, borrowed until close) for records of FORMAT
 * (enum brim_ctl_format); FIELD (borrowed until close) names deb822's key
 * field. Returns 0, or BRIM_ESYS / BRIM_ENOMEM with the reason in ERRBUF
 * ("cannot open PATH: why").
 */
int brim_ctl_reader_open(struct brim_ctl_reader *r, const char *path,
                         int format, const char *field,
                         char errbuf[BRIM_ERRBUF_LEN]);

/*
 * Read the next record into *REC. Returns 1 (a record, valid until the next
 * call), 0 (end of input), BRIM_CTL_READ_SKIP (REC->line is the record's
 * first line and WHY says what is wrong: no key field, bad JSON), or
 * BRIM_ESYS / BRIM_ENOMEM / BRIM_ETOOBIG (a record over
 * BRIM_CTL_RECORD_MAX), with the reason in WHY; reading cannot go on.
 */
int brim_ctl_reader_next(struct brim_ctl_reader *r, struct brim_ctl_rec *rec,
                         char why[BRIM_ERRBUF_LEN]);

/* Close R's input (not stdin) and free its memory. A zeroed R is fine. */
void brim_ctl_reader_close(struct brim_ctl_reader *r);

#endif /* BRIM_CLIENT_BRIMCTL_RECORDS_H */
