# The randomized fault harness of issue 10 (included by tests/CMakeLists.txt
# when present): tests/nemesis/nemesis.py runs one seeded sequence of joins
# and graceful leaves under brim-bench --verify load, with faults injected
# while partitions stream (brim-coord killed or paused, nodes paused, TCP
# resets of node-to-node links, values at the 1 MiB limit, a slow node,
# changes back to back), and checks that no acknowledged write was lost and
# the cluster settled (docs/reliability.md, "The nemesis").
#
# nemesis.short: two seeds, about two minutes each on 2 cores, labels
# cluster and nemesis (ctest -L nemesis), so .ci/run runs it. The long run
# is by hand, e.g.
#   tests/nemesis/nemesis.py --seeds 1-50 --bin build/bin
if(NOT (TARGET brim-node AND TARGET brim-coord AND TARGET brim-bench
        AND TARGET brimctl))
  return()
endif()
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "python3 not found: nemesis.short is not registered")
  return()
endif()
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_SOURCE_DIR}/nemesis/nemesis.py)
add_test(NAME nemesis.short
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/nemesis/nemesis.py
          --seeds 1-2 --bin $<TARGET_FILE_DIR:brim-node>)
set_tests_properties(nemesis.short PROPERTIES LABELS "cluster;nemesis"
  TIMEOUT 1200)
