# The soak run of issue 6 (included by tests/CMakeLists.txt when present):
# tests/soak/soak.sh drives brim-bench --verify against a 4-node
# deploy/brim-cluster while node5 joins and leaves every 30 s and node2 is
# SIGKILLed and restarted once, and checks lost/stale/errors per minute
# and every process's resident memory (docs/reliability.md). soak.short is
# its 2-minute version, in the cluster label so CI runs it; the 10-minute
# run is by hand: tests/soak/soak.sh --bin build/bin (--minutes 10 is
# the default).
if(NOT (TARGET brim-node AND TARGET brim-coord AND TARGET brim-bench))
  return()
endif()
add_test(NAME soak.short
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/soak/soak.sh --minutes 2
          --bin $<TARGET_FILE_DIR:brim-node>)
set_tests_properties(soak.short PROPERTIES LABELS "cluster;soak"
  TIMEOUT 400)
