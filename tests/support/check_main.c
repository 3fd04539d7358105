/*
 * tests/support/check_main.c - main() for every Check test binary. The
 * test file defines brim_test_suite(); CK_RUN_CASE (set per CTest test)
 * picks one TCase. Fails when no test ran, which catches a misspelt case.
 * It is compiled into each binary (brim_testsupport is an INTERFACE
 * library), so that BRIM_TEST_ENV_HELP can name the environment that
 * binary's suite reads.
 */
#include "tests/support/check_main.h"

#include <stdlib.h>
#include <string.h>

/* What else the suite reads: entries "NAME=VALUE what" apart by "|" (a
 * newline does not survive a -D through CMake). */
#ifndef BRIM_TEST_ENV_HELP
#define BRIM_TEST_ENV_HELP "" /* nothing else */
#endif

/* PATH's last component: the name the person typed, without build/bin. */
static const char *
check_prog(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash != NULL ? slash + 1 : path;
}

static void
check_usage(const char *prog)
{
    const char *env;
    size_t      n;

    printf("usage: %s [--help]\n"
           "A brim Check test program: it runs the TCases of its suite, "
           "each in a forked\nchild, and exits 0 when every test passes, 1 "
           "when one fails or none ran.\n"
           "CTest runs it once per TCase, with CK_RUN_CASE set to the case "
           "(ctest\n--test-dir build -N lists them). It takes no option but "
           "--help (-h).\n\n"
           "Environment:\n"
           "  CK_RUN_CASE=CASE       run only this TCase\n"
           "  CK_FORK=no             run in this process (for gdb)\n"
           "  CK_DEFAULT_TIMEOUT=S   each test's timeout, seconds\n"
           "  CK_VERBOSITY=V         silent, minimal, normal or verbose\n",
           prog);
    for (env = BRIM_TEST_ENV_HELP; *env != '\0'; env += n) {
        n = strcspn(env, "|");
        printf("  %.*s\n", (int) n, env);
        n += env[n] == '|';
    }
}

int
main(int argc, char **argv)
{
    SRunner    *sr;
    const char *prog = check_prog(argc > 0 ? argv[0] : "test");
    int         failed, ran;

    if (argc > 1) {
        if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
            check_usage(prog);
            return EXIT_SUCCESS;
        }
        fprintf(stderr, "%s: unexpected argument \"%s\"; see %s --help\n", prog,
                argv[1], prog);
        return 2;
    }
    sr = srunner_create(brim_test_suite());
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    ran = srunner_ntests_run(sr);
    srunner_free(sr);
    if (ran == 0) {
        fprintf(stderr, "no test ran: check CK_RUN_CASE\n");
        return EXIT_FAILURE;
    }
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
