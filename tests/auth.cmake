# The cluster secret (PROTOCOL.md section 12) between real brim-coord and
# brim-node processes, with fakes and an impostor in Python: one CTest test
# per case of tests/cluster/auth.py (--list), label cluster. The unit
# test of proto/auth.c (vectors, refusals) is in proto.cmake.
if(Python3_Interpreter_FOUND AND TARGET brim-coord AND TARGET brim-node)
  brim_script_tests(PREFIX auth. SCRIPT cluster/auth.py TIMEOUT 120
    ARGS --bin $<TARGET_FILE_DIR:brim-node>)
endif()
