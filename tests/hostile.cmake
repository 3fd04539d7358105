# Hostile peers against brim-node and brim-coord (issue 6; included by
# tests/CMakeLists.txt when present): connection floods beyond
# --max-conns, silent clients and --idle-timeout, peers that claim to be a
# node, and inputs I10 to I13 against the coordinator. One CTest test per
# case of tests/cluster/hostile.py (--list), hostile.<case>, label
# cluster.
if(NOT (TARGET brim-node AND TARGET brim-coord))
  return()
endif()
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "python3 not found: the hostile.* tests are not registered")
  return()
endif()
brim_script_tests(PREFIX hostile. SCRIPT cluster/hostile.py TIMEOUT 120
  ARGS --bin $<TARGET_FILE_DIR:brim-node>)
