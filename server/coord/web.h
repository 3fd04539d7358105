/*
 * server/coord/web.h - the files of the coordinator's live web view
 * (issue 16 item 4, DESIGN.md 11), built into brim-coord: the sources are
 * server/coord/web/, turned into C at build time by
 * server/coord/web/embed.cmake. Pure lookups, no I/O.
 */
#ifndef BRIM_SERVER_COORD_WEB_H
#define BRIM_SERVER_COORD_WEB_H

#include <stddef.h>

/* One file of the view. */
struct brim_web_asset {
    const char          *path;         /* the URL path it is served at */
    const char          *content_type; /* its Content-Type header value */
    const unsigned char *data;         /* its bytes (static memory) */
    size_t               len;          /* bytes */
};

/*
 * The file served at PATH (a URL path without the query: "/" and
 * "/index.html" are the page), or NULL when there is none. The result is
 * static memory, never freed.
 */
const struct brim_web_asset *brim_web_asset(const char *path);

#endif
