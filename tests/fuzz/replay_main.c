/*
 * tests/fuzz/replay_main.c - a stand-in for libFuzzer's main(): feeds every
 * file named on the command line, or found in a directory named there, to
 * LLVMFuzzerTestOneInput() once. It lets the seed corpus run as the CTest
 * test fuzz.wire_corpus under gcc and ASan, where libFuzzer is absent.
 * Exits 1 when no input was found or a file cannot be read; --help prints
 * the usage, and any other argument starting with - exits 2.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Run the file at PATH; 0, or -1 when it cannot be read. */
static int
replay_file(const char *path)
{
    unsigned char *buf;
    struct stat    st;
    FILE          *fp;
    size_t         n;

    fp = fopen(path, "rb");
    if (fp == NULL || fstat(fileno(fp), &st) != 0) {
        fprintf(stderr, "replay: %s: cannot open\n", path);
        if (fp != NULL) {
            fclose(fp);
        }
        return -1;
    }
    /* One spare byte, so that an empty file still has a real pointer. */
    buf = malloc((size_t) st.st_size + 1);
    if (buf == NULL) {
        fclose(fp);
        return -1;
    }
    n = fread(buf, 1, (size_t) st.st_size, fp);
    fclose(fp);
    if (n != (size_t) st.st_size) {
        fprintf(stderr, "replay: %s: short read\n", path);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    return 0;
}

/* Run every regular file in directory DIR; adds to *COUNT. */
static int
replay_dir(const char *dir, int *count)
{
    struct dirent *de;
    struct stat    st;
    DIR           *d;
    char           path[4096];
    int            rc;

    d = opendir(dir);
    if (d == NULL) {
        fprintf(stderr, "replay: %s: cannot open directory\n", dir);
        return -1;
    }
    rc = 0;
    for (de = readdir(d); de != NULL; de = readdir(d)) {
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
            continue;
        }
        if (replay_file(path) != 0) {
            rc = -1;
            break;
        }
        (*count)++;
    }
    closedir(d);
    return rc;
}

static void
replay_usage(const char *prog)
{
    printf("usage: %s [FILE | DIR]...\n"
           "Feeds each FILE, and every regular file in each DIR, once to "
           "this fuzz target\n(a stand-in for libFuzzer's main(), for gcc "
           "and ASan builds). Exits 0 when\nevery input ran, 1 when none "
           "was found or one cannot be read; a crash is a\nfailure. CTest "
           "runs it on the seed corpus of tests/fuzz/corpus/ (label fuzz).\n"
           "It reads no environment variable and takes no option but --help "
           "(-h);\nname a file that starts with - as ./NAME.\n",
           prog);
}

int
main(int argc, char **argv)
{
    struct stat st;
    const char *prog;
    int         i, count;

    prog = strrchr(argv[0], '/') != NULL ? strrchr(argv[0], '/') + 1 : argv[0];
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            replay_usage(prog);
            return 0;
        }
        if (argv[i][0] == '-') {
            fprintf(stderr, "%s: unknown option \"%s\"; see %s --help\n", prog,
                    argv[i], prog);
            return 2;
        }
    }
    count = 0;
    for (i = 1; i < argc; i++) {
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: not found\n", argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) != 0
                                : replay_file(argv[i]) != 0)
        {
            return 1;
        }
        count += S_ISDIR(st.st_mode) ? 0 : 1;
    }
    if (count == 0) {
        fprintf(stderr, "replay: no input files\n");
        return 1;
    }
    printf("replay: %d inputs, no failure\n", count);
    return 0;
}
