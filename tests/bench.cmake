# brim-bench's tests (included by tests/CMakeLists.txt).
#   unit.bench_<module>.<case>   Check unit tests of client/bench's parts
#                                without I/O: histogram, verifier, workload,
#                                protocol adapters (label unit)
#   cluster.bench.<scenario>.<target>   tests/bench/bench_test.py runs
#                                brim-bench against a real memcached,
#                                redis-server or brim-node on a free
#                                loopback port (label cluster); a missing
#                                server binary skips (exit 77);
#                                "refused" runs against a fake node
#   cluster.bench_cluster.<case>  tests/cluster/bench_cluster.py:
#                                brim-bench --coordinator against a local
#                                cluster (deploy/brim-cluster), one test
#                                per case (label cluster)
#   cluster.bench_secret.<case>  tests/cluster/client_bench_secret.py:
#                                brim-bench --secret-file against a local
#                                cluster whose nodes require a client
#                                secret (brim-cluster up --client-secret)
if(NOT TARGET brim-bench)
  return()
endif()

# The TCase names of tests/unit/test_<module>.c, from its add_case() calls,
# so that a case cannot be added without being run.
function(brim_bench_unit_test module)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_${module}.c)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  file(STRINGS ${src} lines REGEX "add_case\\(s, \"[A-Za-z0-9_]+\"")
  set(cases "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ".*add_case\\(s, \"([A-Za-z0-9_]+)\".*" "\\1"
      tc "${line}")
    list(APPEND cases ${tc})
  endforeach()
  if(NOT cases)
    message(FATAL_ERROR "tests/unit/test_${module}.c has no add_case()")
  endif()
  brim_unit_test(${module} CASES ${cases} LIBS brim_bench_core)
endfunction()

brim_bench_unit_test(bench_hist)
brim_bench_unit_test(bench_verify)
brim_bench_unit_test(bench_workload)
brim_bench_unit_test(bench_proto)

find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "python3 not found: the cluster.bench.* tests are not "
    "registered")
  return()
endif()

set(BENCH_TEST ${Python3_EXECUTABLE}
  ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_test.py
  --bench $<TARGET_FILE:brim-bench>)
if(TARGET brim-node)
  list(APPEND BENCH_TEST --node $<TARGET_FILE:brim-node>)
endif()
if(TARGET brimctl)
  list(APPEND BENCH_TEST --brimctl $<TARGET_FILE:brimctl>)
endif()

# brim_bench_cluster_test(SCENARIO TARGET)
function(brim_bench_cluster_test scenario target)
  set(name cluster.bench.${scenario}.${target})
  add_test(NAME ${name} COMMAND ${BENCH_TEST} ${scenario} ${target})
  set_tests_properties(${name} PROPERTIES LABELS cluster TIMEOUT 180
    SKIP_RETURN_CODE 77)
endfunction()

add_test(NAME cluster.bench.usage COMMAND ${BENCH_TEST} usage)
set_tests_properties(cluster.bench.usage PROPERTIES LABELS cluster
  TIMEOUT 60)
foreach(target memcached redis)
  foreach(scenario smoke verify stale lost evictions)
    brim_bench_cluster_test(${scenario} ${target})
  endforeach()
endforeach()
if(TARGET brim-node)
  foreach(scenario smoke verify stale lost evictions limits)
    brim_bench_cluster_test(${scenario} brim)
  endforeach()
endif()
# A fake node in the script: no server binary needed.
brim_bench_cluster_test(refused brim)

# brim-bench --coordinator against deploy/brim-cluster: one test per case of
# tests/cluster/bench_cluster.py (--list).
if(TARGET brim-node AND TARGET brim-coord)
  brim_script_tests(PREFIX cluster.bench_cluster. SCRIPT cluster/bench_cluster.py
    TIMEOUT 300 SKIP_CODE 77 ARGS --bench $<TARGET_FILE:brim-bench>
    --cluster ${PROJECT_SOURCE_DIR}/deploy/brim-cluster
    --bin $<TARGET_FILE_DIR:brim-node>)
  brim_script_tests(PREFIX cluster.bench_secret.
    SCRIPT cluster/client_bench_secret.py TIMEOUT 300 SKIP_CODE 77
    ARGS --bench $<TARGET_FILE:brim-bench>
    --cluster ${PROJECT_SOURCE_DIR}/deploy/brim-cluster
    --bin $<TARGET_FILE_DIR:brim-node>)
endif()

