# brim-node tests (included by tests/CMakeLists.txt): the store's unit
# tests (label unit, unit.store.<case>) and the process-level wire tests of
# tests/cluster/node_wire.py against a real brim-node on loopback (label
# cluster, node.<case>), cases I10 to I13 of shared/cases/inputs.md among
# them.

# Unit tests: the cases are read from the source by brim_unit_test.
brim_unit_test(store LIBS brim_node_store)
# --prefault (server/prefault.c): the heap it faults in is kept and reused.
brim_unit_test(prefault LIBS brim_server_core)

# Process-level tests: one CTest test per case of node_wire.py.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "python3 not found: the node.* tests are not registered")
  return()
endif()

# The case list comes from the script itself (node_wire.py --list), so a
# case cannot be added without being registered.
brim_script_tests(PREFIX node. SCRIPT cluster/node_wire.py TIMEOUT 120
  ARGS --node $<TARGET_FILE:brim-node>)

# Issue 3, acceptance 5: 50 connections of load beside a slow reader and a
# garbage sender; the node keeps serving within its memory limit + 10%.
add_test(NAME node.hostile_under_load
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/cluster/node_load.py
          --node $<TARGET_FILE:brim-node> --bench $<TARGET_FILE:brim-bench>)
set_tests_properties(node.hostile_under_load PROPERTIES LABELS cluster
  TIMEOUT 120)

# Issue 4: brim-node in cluster mode against a fake coordinator written in
# Python (tests/cluster/node_cluster.py): one test per case,
# node.cluster_<case>; the case list comes from the script (--list).
brim_script_tests(PREFIX node.cluster_ SCRIPT cluster/node_cluster.py
  TIMEOUT 120 ARGS --node $<TARGET_FILE:brim-node>)

# Issue 4: partition migration between real processes (brim-coord and
# brim-nodes): tests/cluster/migrate_basic.py, one test per case,
# migrate.<case>; the case list comes from the script (--list).
brim_script_tests(PREFIX migrate. SCRIPT cluster/migrate_basic.py
  TIMEOUT 180 ARGS --bin $<TARGET_FILE_DIR:brim-node>)

# Issue 16: the daemons' HTTP port (tests/cluster/http_metrics.py):
# promtool on every /metrics, a real Prometheus scraping a cluster under
# load, hostile HTTP clients; http.<case>. A case whose tool is missing
# exits 77 (skipped).
brim_script_tests(PREFIX http. SCRIPT cluster/http_metrics.py
  TIMEOUT 120 SKIP_CODE 77 ARGS --bin $<TARGET_FILE_DIR:brim-node>)

# cmake --install installs the daemons (issue 12).
add_test(NAME lint.install_daemons
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/install_daemons.sh
          ${CMAKE_BINARY_DIR})
set_tests_properties(lint.install_daemons PROPERTIES LABELS lint TIMEOUT 120)

# What a new user once tripped over (issue 12): tests/cluster/papercuts.py.
brim_script_tests(PREFIX papercuts. SCRIPT cluster/papercuts.py
  TIMEOUT 180 ARGS --bin $<TARGET_FILE_DIR:brim-node>)

# Migration you can see (issue 13 item 3): tests/cluster/migrations_view.py.
brim_script_tests(PREFIX migrations. SCRIPT cluster/migrations_view.py
  TIMEOUT 180 ARGS --bin $<TARGET_FILE_DIR:brim-node>)

# The migration pace adapts (issue 13 item 1): tests/cluster/pace.py.
brim_script_tests(PREFIX pace. SCRIPT cluster/pace.py
  TIMEOUT 180 SKIP_CODE 77 ARGS --bin $<TARGET_FILE_DIR:brim-node>)

# A join that streams big partitions (issue 13 item 2):
# tests/cluster/big_partition.py.
brim_script_tests(PREFIX bigpart. SCRIPT cluster/big_partition.py
  TIMEOUT 240 ARGS --bin $<TARGET_FILE_DIR:brim-node>)

# The memcached port (issue 14): tests/cluster/mcport.py, one test per
# case, mcport.<case>; memccapable (libmemcached-tools) and pymemcache
# (python3-pymemcache) against a standalone node and a 3-node cluster.
brim_script_tests(PREFIX mcport. SCRIPT cluster/mcport.py TIMEOUT 240
  SKIP_CODE 77 ARGS --bin $<TARGET_FILE_DIR:brim-node>
  --cluster ${CMAKE_SOURCE_DIR}/deploy/brim-cluster
  --tool $<TARGET_FILE:client_coord_tool>)

# The coordinator's live web view in a real headless chromium (issue 16
# item 4, acceptance 3): tests/cluster/webview.py; skipped (77) without
# chromium or python3-websocket.
brim_script_tests(PREFIX webview. SCRIPT cluster/webview.py
  TIMEOUT 180 SKIP_CODE 77 ARGS --bin $<TARGET_FILE_DIR:brim-node>)
