/*
 * proto/auth_file.h - reading a secret file (--secret-file,
 * --client-secret-file, BRIM_SECRET_FILE) into a struct brim_auth_secret,
 * with the checks every brim program applies to it. The one place in
 * proto/ that touches a file; shared by both daemons and libbrim, so the
 * rules cannot drift apart. Never logs and never prints the secret.
 */
#ifndef BRIM_PROTO_AUTH_FILE_H
#define BRIM_PROTO_AUTH_FILE_H

#include <brim/status.h>

#include "proto/auth.h"

/*
 * Read the secret file PATH into *S, once. The file must be a regular
 * file (after symbolic links) owned by the effective user, with no
 * permission for group or others (mode 0600 or stricter), and hold
 * BRIM_AUTH_SECRET_MIN .. BRIM_AUTH_SECRET_MAX bytes; its bytes are the
 * secret as they are (a trailing newline included). Returns 0, or
 * BRIM_EINVAL (the file breaks a rule) or BRIM_ESYS (it cannot be opened
 * or read), with ERRBUF naming PATH and the rule; *S is then wiped.
 */
int brim_auth_file_read(const char *path, struct brim_auth_secret *s,
                        char errbuf[BRIM_ERRBUF_LEN]);

#endif /* BRIM_PROTO_AUTH_FILE_H */
