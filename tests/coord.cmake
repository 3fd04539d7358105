# Tests of brim-coord (issue 4): the state file, one CTest test per TCase.
# (proto/topo.c's tests are in proto.cmake.)

brim_unit_test(persist LIBS brim_coord_core CASES
  round_trip round_trip_pending missing_is_notfound truncated checksum
  bad_magic future_version malformed_body inconsistent leftover_tmp_ignored
  save_fails epochs_survive settings_check nomem)

# brim-coord against fake nodes in Python (PROTOCOL.md section 10): one
# CTest test per case of tests/cluster/coord_membership.py (--list).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND TARGET brim-coord)
  set(_coord_script ${CMAKE_CURRENT_SOURCE_DIR}/cluster/coord_membership.py)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
    ${_coord_script})
  execute_process(COMMAND ${Python3_EXECUTABLE} ${_coord_script} --list
    OUTPUT_VARIABLE _coord_out RESULT_VARIABLE _coord_rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _coord_rc EQUAL 0 OR _coord_out STREQUAL "")
    message(FATAL_ERROR "coord_membership.py --list failed (${_coord_rc})")
  endif()
  string(REPLACE "\n" ";" _coord_cases "${_coord_out}")
  foreach(_case IN LISTS _coord_cases)
    add_test(NAME coord.${_case}
      COMMAND ${Python3_EXECUTABLE} ${_coord_script}
              --coord $<TARGET_FILE:brim-coord> ${_case})
    set_tests_properties(coord.${_case} PROPERTIES LABELS cluster TIMEOUT 120)
  endforeach()
endif()
