/*
 * proto/auth_file.c - the secret file (proto/auth_file.h). The checks run
 * on the opened descriptor (fstat), so the file checked is the file read;
 * O_NONBLOCK keeps a FIFO from blocking the open, and it is then refused
 * as not regular. The rules are ssh's for private keys.
 */
#include "proto/auth_file.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "common/defs.h"

/* Check the open file FD (PATH, for messages) against the rules. */
static int
auth_file_check(int fd, const char *path, char *errbuf)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        brim_errfmt(errbuf, "secret file %s: %s", path, strerror(errno));
        return BRIM_ESYS;
    }
    if (!S_ISREG(st.st_mode)) {
        brim_errfmt(errbuf, "secret file %s: not a regular file", path);
        return BRIM_EINVAL;
    }
    if (st.st_uid != geteuid()) {
        brim_errfmt(errbuf,
                    "secret file %s: owned by uid %u, not by this "
                    "user (uid %u)",
                    path, (unsigned) st.st_uid, (unsigned) geteuid());
        return BRIM_EINVAL;
    }
    if ((st.st_mode & 077) != 0) {
        brim_errfmt(errbuf,
                    "secret file %s: mode %04o lets group or others "
                    "in; chmod 600 %s",
                    path, (unsigned) (st.st_mode & 07777), path);
        return BRIM_EINVAL;
    }
    if (st.st_size < BRIM_AUTH_SECRET_MIN || st.st_size > BRIM_AUTH_SECRET_MAX)
    {
        brim_errfmt(errbuf,
                    "secret file %s: %lld bytes, want %d to %d "
                    "(e.g. head -c 32 /dev/urandom)",
                    path, (long long) st.st_size, BRIM_AUTH_SECRET_MIN,
                    BRIM_AUTH_SECRET_MAX);
        return BRIM_EINVAL;
    }
    return 0;
}

int
brim_auth_file_read(const char *path, struct brim_auth_secret *s,
                    char errbuf[BRIM_ERRBUF_LEN])
{
    uint8_t buf[BRIM_AUTH_SECRET_MAX + 1];
    size_t  len = 0;
    ssize_t n;
    int     fd, rc;

    brim_auth_secret_wipe(s);
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        brim_errfmt(errbuf, "secret file %s: %s", path, strerror(errno));
        return BRIM_ESYS;
    }
    rc = auth_file_check(fd, path, errbuf);
    /* Read up to one byte past the limit: a file that grew since fstat is
     * refused by the length check below rather than cut short. */
    while (rc == 0 && len < sizeof(buf)) {
        n = read(fd, buf + len, sizeof(buf) - len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            brim_errfmt(errbuf, "secret file %s: %s", path, strerror(errno));
            rc = BRIM_ESYS;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t) n;
    }
    close(fd);
    if (rc == 0 && brim_auth_secret_set(s, buf, len, NULL) != 0) {
        brim_errfmt(errbuf, "secret file %s: %zu bytes, want %d to %d", path,
                    len, BRIM_AUTH_SECRET_MIN, BRIM_AUTH_SECRET_MAX);
        rc = BRIM_EINVAL;
    }
    OPENSSL_cleanse(buf, sizeof(buf));
    return rc;
}
