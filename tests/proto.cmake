# Tests of proto/ (issue 3): the frame and wire unit tests, one CTest test
# per TCase, and the fuzz corpus replayed through the fuzz target's entry
# point by a plain driver, so it runs in every build, gcc and ASan included.
# With -DBRIM_FUZZ=ON (clang) the libFuzzer binary fuzz_wire is built too:
#   ./build/bin/fuzz_wire -runs=1000000 SCRATCH_DIR tests/fuzz/corpus/wire
# (SCRATCH_DIR first: libFuzzer writes new inputs into the first directory;
# docs/testing.md has the full command)

brim_unit_test(frame LIBS brim_proto CASES
  peek_whole_frame peek_again_until_whole peek_split_after_header
  peek_toobig_from_header three_in_one_buffer empty_body header_round_trip
  buf_grow_consume buf_nomem_unchanged)

brim_unit_test(wire LIBS brim_proto CASES
  req_round_trip_every_op req_optional_args mget_round_trip
  rep_round_trip_every_op rep_mget_entries rep_stats_map rep_errors
  rep_malformed key_limit value_limit mget_limit limits_check req_types
  long_names check_valid_objects check_huge_counts check_malformed
  check_depth check_object_budget stream_split_and_joined random_frames
  encode_nomem op_table membership_topology membership_budget
  membership_args stream_args)
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
brim_unit_test(mctext LIBS brim_proto CASES
  limits get_family storage delete incr_decr touch other_commands noreply
  pipelined split_points data_chunk key_too_long line_too_long unknown
  bad_numbers value_limit negative_exptime meta_get_flags meta_set
  meta_delete_arith meta_debug_noop base64_keys opaque names)
brim_unit_test(mctext_rep LIBS brim_proto CASES
  golden_replies golden_misc encode_nomem expiry)

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

brim_unit_test(topo LIBS brim_proto CASES
  round_trip encode_appends refuses_format refuses_settings refuses_names
  refuses_owners refuses_state refuses_weight ring_equals_direct
  copy_independent find)

# AUTH's proofs and the secret file (PROTOCOL.md section 12): vectors from
# Python's hmac module, refusals, and AUTH's wire shape.
brim_unit_test(auth LIBS brim_auth brim_proto CASES
  known_answer wrong_secret swapped_nonce sides_and_roles truncated_mac
  secret_length secret_file wire_shape)
