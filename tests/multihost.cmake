# Multi-host fault tests of issue 6 (included by tests/CMakeLists.txt when
# present): brim-coord and brim-nodes each in a test host of its own, made
# by deploy/multihost/netns.sh from network namespaces on this machine; a
# host cut off, a node paused, a node's traffic slowed by
# deploy/multihost/delay_relay.py. tests/cluster/multihost.py runs them.
# One CTest test per case, multihost.<case>, labels cluster and multihost
# (ctest -L multihost); the case list comes from the script (--list).
#
# They need root and iproute2 ("ip netns"). Elsewhere a case exits 77 and
# CTest shows it skipped, which is not a pass; with
# BRIM_MULTIHOST_REQUIRED=1 in the environment (CI) it fails instead.
if(Python3_Interpreter_FOUND)
  brim_script_tests(PREFIX multihost. SCRIPT cluster/multihost.py
    TIMEOUT 180 SKIP_CODE 77 ARGS --bin $<TARGET_FILE_DIR:brim-node>)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
    ${CMAKE_CURRENT_SOURCE_DIR}/cluster/fault_kill.py
    ${CMAKE_CURRENT_SOURCE_DIR}/cluster/migrate_basic.py)
  # brim_script_tests gives the label cluster; add multihost.
  get_property(_mh_tests DIRECTORY PROPERTY TESTS)
  foreach(_t IN LISTS _mh_tests)
    if(_t MATCHES "^multihost\\.")
      set_tests_properties(${_t} PROPERTIES LABELS "cluster;multihost")
    endif()
  endforeach()
else()
  message(WARNING "python3 not found: the multihost.* tests are not "
    "registered")
endif()
