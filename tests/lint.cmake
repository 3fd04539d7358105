# Lint checks (label lint): the include layering of STYLE.md section 1,
# and a self-test that proves the layering lint fails on each violation.
find_program(BRIM_SH sh REQUIRED)

add_test(NAME lint.layering
  COMMAND ${BRIM_SH} ${CMAKE_CURRENT_SOURCE_DIR}/lint/layering.sh
          ${PROJECT_SOURCE_DIR})
set_tests_properties(lint.layering PROPERTIES LABELS lint TIMEOUT 60)

add_test(NAME lint.layering_selftest
  COMMAND ${BRIM_SH} ${CMAKE_CURRENT_SOURCE_DIR}/lint/layering_selftest.sh
          ${CMAKE_CURRENT_SOURCE_DIR}/lint/layering.sh)
set_tests_properties(lint.layering_selftest PROPERTIES LABELS lint
  TIMEOUT 60)
