# Lint checks (label lint): the rules STYLE.md and DESIGN.md write down,
# each with a self-test that plants a violation in a temporary tree and
# shows the check failing on it (docs/testing.md, "Lint checks").
#   lint.format               every tracked .c/.h is clang-format 14's output
#                             (BRIM_LINT_FORMAT=off skips it: exit 77)
#   lint.layering             the include rules between and inside folders
#   lint.calls.<folder>       no call cycle between the files of a folder
#   lint.unit_registration    every TCase is a CTest test and back
#   lint.py_support           the Python tests' op table is the compiled
#                             one; no test script keeps its own copy
#   lint.docs_stats           every statistic sent is in docs/operations.md
#   lint.docs_help            the docs' quoted --help texts are the output
#   lint.help_bin             every program of bin/ answers --help (exit 0)
#   lint.help_scripts         deploy/*.sh and deploy/bench/*.sh answer
#                             --help and start nothing (stub PATH)
# Each one also runs by hand: see the usage line of tests/lint/<check>.py.
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "python3 not found: the lint.* tests are not registered")
  return()
endif()
set(LINT ${CMAKE_CURRENT_SOURCE_DIR}/lint)

# brim_lint_test(NAME SCRIPT ARGS...): lint.NAME runs tests/lint/SCRIPT.
function(brim_lint_test name script)
  add_test(NAME lint.${name}
    COMMAND ${Python3_EXECUTABLE} ${LINT}/${script} ${ARGN})
  set_tests_properties(lint.${name} PROPERTIES LABELS lint TIMEOUT 120)
endfunction()

brim_lint_test(format format.py ${PROJECT_SOURCE_DIR})
set_tests_properties(lint.format PROPERTIES SKIP_RETURN_CODE 77)
brim_lint_test(format_selftest format_selftest.py ${LINT}/format.py
  ${PROJECT_SOURCE_DIR}/.clang-format)

brim_lint_test(layering layering.py ${PROJECT_SOURCE_DIR})
brim_lint_test(layering_selftest layering_selftest.py ${LINT}/layering.py)

# One test per folder, so that a cycle is named by its folder.
foreach(folder server/node server/coord server client/lib client/bench
               client/brimctl common proto sim)
  string(REPLACE "/" "_" tname "${folder}")
  brim_lint_test(calls.${tname} calls.py --root ${PROJECT_SOURCE_DIR}
    ${folder})
endforeach()
brim_lint_test(calls_selftest calls_selftest.py ${LINT}/calls.py)

brim_lint_test(unit_registration registration.py
  --src ${CMAKE_CURRENT_SOURCE_DIR} --build ${CMAKE_BINARY_DIR}
  --ctest ${CMAKE_CTEST_COMMAND})
brim_lint_test(unit_registration_selftest registration_selftest.py
  ${LINT}/registration.py)

# The Python tests' op table (tests/support/brimtest.py reads it from the
# headers) against the one compiled into proto/ops.c, and no copy of it
# or of the partition hash in a test script.
add_executable(op_table_dump lint/op_table_dump.c)
target_link_libraries(op_table_dump PRIVATE brim_proto)
brim_lint_test(py_support py_support.py --dump $<TARGET_FILE:op_table_dump>
  --support ${CMAKE_CURRENT_SOURCE_DIR}/support
  --scan ${CMAKE_CURRENT_SOURCE_DIR} --scan ${PROJECT_SOURCE_DIR}/deploy
  --scan ${PROJECT_SOURCE_DIR}/sim)
brim_lint_test(py_support_selftest py_support_selftest.py
  ${LINT}/py_support.py $<TARGET_FILE:op_table_dump>
  ${CMAKE_CURRENT_SOURCE_DIR}/support ${PROJECT_SOURCE_DIR}/proto/ops.h
  ${PROJECT_SOURCE_DIR}/include/brim/status.h)

# docs/design.md's "Architecture" graphs are the ones calls.py computes.
brim_lint_test(design_graph design_graph.py --calls ${LINT}/calls.py
  --root ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/docs/design.md)
brim_lint_test(design_graph_selftest design_graph_selftest.py
  ${LINT}/design_graph.py ${LINT}/calls.py)

# Every statistic the daemons send is explained in docs/operations.md.
brim_lint_test(docs_stats docs_stats.py ${PROJECT_SOURCE_DIR})
brim_lint_test(docs_stats_selftest docs_stats.py --selftest)

# The --help texts quoted in the docs (```help CMD blocks) are the
# binaries' own output.
if(TARGET brimctl)
  brim_lint_test(docs_help docs_help.py --bin $<TARGET_FILE_DIR:brimctl>
    ${PROJECT_SOURCE_DIR})
  brim_lint_test(docs_help_selftest docs_help.py
    --bin $<TARGET_FILE_DIR:brimctl> --selftest)
endif()

# Every program of bin/ answers --help with exit 0 and a usage; every
# deploy script answers --help, and a bench script refuses a bad argument
# with exit 2, without running any command (help_all.py's stub PATH).
if(TARGET brim-node)
  brim_lint_test(help_bin help_all.py --bin $<TARGET_FILE_DIR:brim-node>)
  brim_lint_test(help_selftest help_all.py
    --selftest $<TARGET_FILE_DIR:brim-node> ${PROJECT_SOURCE_DIR})
endif()
brim_lint_test(help_scripts help_all.py --scripts ${PROJECT_SOURCE_DIR})
