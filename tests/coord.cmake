# Tests of brim-coord (issue 4): the state file, one CTest test per TCase.
# (proto/topo.c's tests are in proto.cmake.)

brim_unit_test(persist LIBS brim_coord_core)

# brim-coord against fake nodes in Python (PROTOCOL.md section 10): one
# CTest test per case of tests/cluster/coord_membership.py (--list).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND TARGET brim-coord)
  brim_script_tests(PREFIX coord. SCRIPT cluster/coord_membership.py
    TIMEOUT 120 ARGS --coord $<TARGET_FILE:brim-coord>)
  # The same cases that do not test the state file itself, with the
  # state in a real etcd (issue 15 acceptance 5; label etcd, skipped, 77,
  # without Debian's etcd-server).
  brim_script_tests(PREFIX etcd.coord. SCRIPT cluster/coord_membership_etcd.py
    TIMEOUT 120 SKIP_CODE 77 LABELS etcd
    ARGS --coord $<TARGET_FILE:brim-coord>)
endif()

# SIGTERM's graceful leave with real brim-coord and brim-node processes,
# one CTest test per case of tests/cluster/coord_sigterm.py (--list).
if(Python3_Interpreter_FOUND AND TARGET brim-coord AND TARGET brim-node)
  brim_script_tests(PREFIX coord. SCRIPT cluster/coord_sigterm.py
    TIMEOUT 60 ARGS --bin $<TARGET_FILE_DIR:brim-node>)

  # brim-coord --etcd (issue 15) against a real etcd it starts itself:
  # label etcd (skipped, 77, without Debian's etcd-server).
  brim_script_tests(PREFIX etcd. SCRIPT cluster/etcd_coord.py
    TIMEOUT 90 SKIP_CODE 77 LABELS etcd
    ARGS --bin $<TARGET_FILE_DIR:brim-node>)

  # deploy/brim-cluster up --etcd 3 end to end (label etcd).
  add_test(NAME etcd.cluster_launcher
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/cluster_launcher_etcd.sh
            ${PROJECT_SOURCE_DIR}/deploy/brim-cluster
            $<TARGET_FILE_DIR:brim-node>)
  set_tests_properties(etcd.cluster_launcher PROPERTIES LABELS etcd
    TIMEOUT 120 SKIP_RETURN_CODE 77)

  # deploy/brim-cluster end to end.
  add_test(NAME coord.cluster_launcher
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/cluster_launcher.sh
            ${PROJECT_SOURCE_DIR}/deploy/brim-cluster
            $<TARGET_FILE_DIR:brim-node>)
  set_tests_properties(coord.cluster_launcher PROPERTIES LABELS cluster
    TIMEOUT 120)
endif()

# deploy/demo.sh's nine steps on the first 2,000 records of the Debian
# package index (issue 5), with this tree's binaries (--bin): exit 0,
# "verified D/D" twice, lost=0 stale=0 errors=0, no process left. Skipped
# (77) when apt-cache dumpavail prints nothing.
if(TARGET brim-coord AND TARGET brim-node AND TARGET brimctl
   AND TARGET brim-bench)
  add_test(NAME deploy.demo_slice
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/demo_slice.sh
            ${PROJECT_SOURCE_DIR}/deploy/demo.sh
            $<TARGET_FILE_DIR:brim-node> 2000)
  set_tests_properties(deploy.demo_slice PROPERTIES LABELS cluster
    TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
