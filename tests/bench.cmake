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
#   cluster.bench_redis_cluster.<case>  tests/cluster/bench_redis_cluster.py:
#                                brim-bench --target redis-cluster against
#                                a real 3-master Redis Cluster (ports
#                                33000-33999), resharded to a fourth
#                                master under --verify --rate, and ASK
#                                forced on a slot in migration; skips
#                                without redis-server (label cluster)
#   cluster.bench_secret.<case>  tests/cluster/client_bench_secret.py:
#                                brim-bench --secret-file against a local
#                                cluster whose nodes require a client
#                                secret (brim-cluster up --client-secret)
if(NOT TARGET brim-bench)
  return()
endif()

foreach(module bench_hist bench_verify bench_workload bench_proto
    bench_rcluster)
  brim_unit_test(${module} LIBS brim_bench_core)
endforeach()

find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "python3 not found: the cluster.bench.* tests are not "
    "registered")
  return()
endif()

# One test per case of tests/bench/bench_test.py (--list):
# cluster.bench.<scenario>.<target>, and cluster.bench.usage.
set(_bench_args --bench $<TARGET_FILE:brim-bench>)
if(TARGET brim-node)
  list(APPEND _bench_args --node $<TARGET_FILE:brim-node>)
endif()
if(TARGET brimctl)
  list(APPEND _bench_args --brimctl $<TARGET_FILE:brimctl>)
endif()
brim_script_tests(PREFIX cluster.bench. SCRIPT bench/bench_test.py
  TIMEOUT 180 SKIP_CODE 77 ARGS ${_bench_args})

# brim-bench --target redis-cluster against a Redis Cluster it starts.
brim_script_tests(PREFIX cluster.bench_redis_cluster.
  SCRIPT cluster/bench_redis_cluster.py TIMEOUT 300 SKIP_CODE 77
  ARGS --bench $<TARGET_FILE:brim-bench>)

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

