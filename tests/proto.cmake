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

# The memcached parser's target (proto/mctext.h), likewise:
#   ./build/bin/fuzz_mctext -max_total_time=600 SCRATCH_DIR \
#       tests/fuzz/corpus/mctext
add_executable(fuzz_mctext_replay fuzz/fuzz_mctext.c fuzz/replay_main.c)
target_link_libraries(fuzz_mctext_replay PRIVATE brim_proto)
add_test(NAME fuzz.mctext_corpus
  COMMAND fuzz_mctext_replay ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus/mctext)
set_tests_properties(fuzz.mctext_corpus PROPERTIES LABELS fuzz TIMEOUT 120)

if(BRIM_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "BRIM_FUZZ needs clang (-DCMAKE_C_COMPILER=clang)")
  endif()
  foreach(name wire mctext)
    add_executable(fuzz_${name} fuzz/fuzz_${name}.c)
    target_compile_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    target_link_libraries(fuzz_${name} PRIVATE brim_proto)
  endforeach()
endif()

# memcached's text and meta protocols (proto/mctext.h, docs/memcached.md):
# the parser (every command, split points, limits, meta flags), then the
# replies and the expiry rule.
brim_unit_test(mctext LIBS brim_proto)
brim_unit_test(mctext_rep LIBS brim_proto)

# The same parser beside a live memcached (Debian's memcached, in
# deploy/packages.txt): mctext_model prints what proto/mctext.c makes of a
# byte stream, the script sends the stream to a memcached it starts on a
# free loopback port and compares; 77 (skipped) without memcached.
add_executable(mctext_model cluster/mctext_model.c)
target_link_libraries(mctext_model PRIVATE brim_proto)
if(Python3_FOUND)
  brim_script_tests(PREFIX cluster.mctext_ SCRIPT cluster/mctext_vs_memcached.py
    TIMEOUT 300 SKIP_CODE 77
    ARGS --model $<TARGET_FILE:mctext_model> --cases 500)
endif()

brim_unit_test(topo LIBS brim_proto)

# AUTH's proofs and the secret file (PROTOCOL.md section 12): vectors from
# Python's hmac module, refusals, and AUTH's wire shape.
brim_unit_test(auth LIBS brim_auth brim_proto
  ENV_HELP "TMPDIR=DIR             where the test secret files go (default /tmp)")
