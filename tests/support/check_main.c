/*
 * tests/support/check_main.c - main() for every Check unit-test binary.
 * The test file defines brim_test_suite(); CK_RUN_CASE (set per CTest test)
 * picks one TCase. Fails when no test ran, which catches a misspelt case.
 */
#include "tests/support/check_main.h"

#include <stdlib.h>

int
main(void)
{
    SRunner *sr;
    int      failed, ran;

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
