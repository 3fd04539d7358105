# Tests of proto/ (issue 3): the frame, wire, topo and auth unit tests, one
# CTest test per TCase (read from the source by brim_unit_test), and the
# fuzz corpus replayed through the fuzz target's entry point by a plain
# driver, so it runs in every build, gcc and ASan included.
# With -DBRIM_FUZZ=ON (clang) the libFuzzer binary fuzz_wire is built too:
#   ./build/bin/fuzz_wire -runs=1000000 SCRATCH_DIR tests/fuzz/corpus/wire
# (SCRATCH_DIR first: libFuzzer writes new inputs into the first directory;
# docs/testing.md has the full command)

brim_unit_test(frame LIBS brim_proto)

brim_unit_test(wire LIBS brim_proto)
# Count msgpack_unpack() calls: a refused body must never reach msgpack-c.
target_link_options(test_wire PRIVATE -Wl,--wrap=msgpack_unpack)

add_executable(fuzz_wire_replay fuzz/fuzz_wire.c fuzz/replay_main.c)
target_link_libraries(fuzz_wire_replay PRIVATE brim_proto)
add_test(NAME fuzz.wire_corpus
  COMMAND fuzz_wire_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/wire)
set_tests_properties(fuzz.wire_corpus PROPERTIES LABELS fuzz TIMEOUT 120)

if(BRIM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "BRIM_FUZZ needs clang (-DCMAKE_C_COMPILER=clang)")
  endif()
  add_executable(fuzz_wire fuzz/fuzz_wire.c)
  target_compile_options(fuzz_wire PRIVATE -fsanitize=fuzzer)
  target_link_options(fuzz_wire PRIVATE -fsanitize=fuzzer)
  target_link_libraries(fuzz_wire PRIVATE brim_proto)
endif()

brim_unit_test(topo LIBS brim_proto)

# AUTH's proofs and the secret file (PROTOCOL.md section 12): vectors from
# Python's hmac module, refusals, and AUTH's wire shape.
brim_unit_test(auth LIBS brim_auth brim_proto)
