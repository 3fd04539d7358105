/*
 * tests/support/check_main.h - what a unit-test file provides to the shared
 * main(): its Suite. Include this first in tests/unit/test_<module>.c.
 */
#ifndef BRIM_TESTS_SUPPORT_CHECK_MAIN_H
#define BRIM_TESTS_SUPPORT_CHECK_MAIN_H

#include <stdio.h>

#include <check.h>

/* The module's Suite: one TCase per behaviour. Called once by main(). */
Suite *brim_test_suite(void);

#endif /* BRIM_TESTS_SUPPORT_CHECK_MAIN_H */
