# libbrim and brimctl tests (included by tests/CMakeLists.txt):
#   unit.client_link.<case> client/net's link: framing, matching, handshake
#                          (label unit)
#   client.faults.<case>   libbrim against a scripted fake node (label cluster)
#   client.ops.<case>      libbrim against a real brim-node (label cluster)
#   client.brimctl.<case>  brimctl against a real brim-node (label cluster)
#   client.coord.<case>    libbrim in cluster mode, its typed admin calls
#                          (admin) and brimctl against a real brim-coord
#                          and brim-nodes (label cluster)
#   lint.client_exports    libbrim.so exports exactly <brim.h>'s functions
#   lint.client_install    cmake --install, then a program built with
#                          pkg-config --cflags --libs brim runs, and the
#                          steps and program of docs/client.md work
if(NOT TARGET brim_static)
  return()
endif()
find_package(Threads REQUIRED)

add_library(brim_client_testnode STATIC cluster/client_node.c)
target_link_libraries(brim_client_testnode
  PUBLIC brim_proto PkgConfig::CHECK Threads::Threads)

# brim_client_test(faults [ENV ...]): tests/cluster/client_<name>.c, one
# CTest test client.<name>.<case> per tcase_create("case") of the source
# (brim_check_cases, tests/CMakeLists.txt).
function(brim_client_test name)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/cluster/client_${name}.c)
  brim_check_cases(${src} cases)
  add_executable(test_client_${name} ${src})
  target_link_libraries(test_client_${name}
    PRIVATE brim_static brim_client_testnode brim_testsupport)
  foreach(tc IN LISTS cases)
    add_test(NAME client.${name}.${tc} COMMAND test_client_${name})
    set_tests_properties(client.${name}.${tc} PROPERTIES LABELS cluster
      TIMEOUT 120
      ENVIRONMENT "CK_RUN_CASE=${tc};CK_DEFAULT_TIMEOUT=60;${ARGN}")
  endforeach()
endfunction()

brim_client_test(faults)

# unit.client_link.<case>: the transport of client/net/ (framing, replies
# matched in order, the HELLO and AUTH handshake, the blocking helpers),
# one CTest test per tcase_create("name") of tests/unit/test_client_link.c.
brim_unit_test(client_link LIBS brim_client_net)

if(TARGET brim-node)
  brim_client_test(ops BRIM_NODE_BIN=$<TARGET_FILE:brim-node>)
  # --help names what the suite reads (tests/support/check_main.c).
  string(CONCAT ops_env
    "BRIM_NODE_BIN=PATH     the brim-node to start (CTest sets it)|"
    "BRIM_TEST_NODE_LOG=F   append its output to F (default /dev/null)")
  target_compile_definitions(test_client_ops
    PRIVATE "BRIM_TEST_ENV_HELP=\"${ops_env}\"")

  foreach(tc basics binary ttl stats flush limits unreachable usage)
    add_test(NAME client.brimctl.${tc}
      COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/client_brimctl.sh
              --node $<TARGET_FILE:brim-node> --ctl $<TARGET_FILE:brimctl>
              ${tc})
    set_tests_properties(client.brimctl.${tc} PROPERTIES LABELS cluster
      TIMEOUT 120)
  endforeach()
else()
  message(WARNING "no brim-node target: client.ops and client.brimctl "
                  "tests are not registered")
endif()

# Every installed header: client/include/brim.h and client/include/brim/*.h
# (the admin calls), and the status list in the top-level include/.
file(GLOB _client_public_headers ${PROJECT_SOURCE_DIR}/client/include/brim.h
  ${PROJECT_SOURCE_DIR}/client/include/brim/*.h)
add_test(NAME lint.client_exports
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/client_exports.sh
          $<TARGET_FILE:brim> ${_client_public_headers}
          ${PROJECT_SOURCE_DIR}/include/brim/status.h)
set_tests_properties(lint.client_exports PROPERTIES LABELS lint TIMEOUT 60)

# A sanitized libbrim.so needs a program built with the same sanitizers.
string(JOIN " " _client_san ${BRIM_SAN})
set(_client_install_node "")
if(TARGET brim-node)
  set(_client_install_node $<TARGET_FILE:brim-node>)
endif()
add_test(NAME lint.client_install
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/client_install.sh
          ${CMAKE_BINARY_DIR} ${CMAKE_C_COMPILER} "${_client_san}"
          ${PROJECT_SOURCE_DIR}/docs/client.md "${_client_install_node}")
set_tests_properties(lint.client_install PROPERTIES LABELS lint TIMEOUT 120)

# libbrim in cluster mode against a real brim-coord and three brim-nodes
# (tests/cluster/client_coord.py drives client_coord_tool and brimctl).
if(TARGET brim-node AND TARGET brim-coord)
  add_executable(client_coord_tool cluster/client_coord_tool.c)
  target_link_libraries(client_coord_tool PRIVATE brim_static)
  # One test per case of tests/cluster/client_coord.py (--list).
  brim_script_tests(PREFIX client.coord. SCRIPT cluster/client_coord.py
    TIMEOUT 120 ARGS --coord $<TARGET_FILE:brim-coord>
    --node $<TARGET_FILE:brim-node> --ctl $<TARGET_FILE:brimctl>
    --tool $<TARGET_FILE:client_coord_tool>)
endif()

# brimctl import, verify (also --loop), leave --wait and stats --watch
# against a local cluster (deploy/brim-cluster); the cases come from
# tests/cluster/brimctl_import.py --list.
if(TARGET brim-node AND TARGET brim-coord)
  brim_script_tests(PREFIX client.brimctl_import.
    SCRIPT cluster/brimctl_import.py TIMEOUT 240
    ARGS --cluster ${PROJECT_SOURCE_DIR}/deploy/brim-cluster
    --bin $<TARGET_FILE_DIR:brimctl>)
endif()
