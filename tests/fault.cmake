# Fault-injection tests of issue 4 (included by tests/CMakeLists.txt when
# present): SIGKILL of a node under load, of a stream's sender and of its
# receiver, of brim-coord mid-change, and conditional ops on keys not yet
# streamed. tests/cluster/fault_kill.py starts brim-coord, brim-node and
# brim-bench from the build tree on free loopback ports. One CTest test
# per case, fault.<case> (label cluster); the case list comes from the
# script itself (--list), so a case cannot be added without being run.
if(Python3_Interpreter_FOUND)
  brim_script_tests(PREFIX fault. SCRIPT cluster/fault_kill.py TIMEOUT 120
    ARGS --bin $<TARGET_FILE_DIR:brim-node>)
else()
  message(WARNING "python3 not found: the fault.* tests are not registered")
endif()
