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

# SIGTERM's graceful leave with real brim-coord and brim-node processes,
# one CTest test per case of tests/cluster/coord_sigterm.py (--list).
if(Python3_Interpreter_FOUND AND TARGET brim-coord AND TARGET brim-node)
  set(_sigterm_script ${CMAKE_CURRENT_SOURCE_DIR}/cluster/coord_sigterm.py)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
    ${_sigterm_script})
  execute_process(COMMAND ${Python3_EXECUTABLE} ${_sigterm_script} --list
    OUTPUT_VARIABLE _sigterm_out RESULT_VARIABLE _sigterm_rc
    OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _sigterm_rc EQUAL 0 OR _sigterm_out STREQUAL "")
    message(FATAL_ERROR "coord_sigterm.py --list failed (${_sigterm_rc})")
  endif()
  string(REPLACE "\n" ";" _sigterm_cases "${_sigterm_out}")
  foreach(_case IN LISTS _sigterm_cases)
    add_test(NAME coord.${_case}
      COMMAND ${Python3_EXECUTABLE} ${_sigterm_script}
              --bin $<TARGET_FILE_DIR:brim-node> ${_case})
    set_tests_properties(coord.${_case} PROPERTIES LABELS cluster TIMEOUT 60)
  endforeach()

  # deploy/brim-cluster end to end.
  add_test(NAME coord.cluster_launcher
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/cluster/cluster_launcher.sh
            ${PROJECT_SOURCE_DIR}/deploy/brim-cluster
            $<TARGET_FILE_DIR:brim-node>)
  set_tests_properties(coord.cluster_launcher PROPERTIES LABELS cluster
    TIMEOUT 120)
endif()
