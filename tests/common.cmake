# Unit tests of common/: one executable per module, one CTest test per
# TCase (unit.<module>.<case>). The case list is read from the test source
# (every tcase_create("...")), so a TCase cannot be added without running;
# check_main.c fails a binary whose CK_RUN_CASE matches nothing.

function(brim_common_unit_test module)
  set(src ${CMAKE_CURRENT_SOURCE_DIR}/unit/test_${module}.c)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${src})
  file(STRINGS ${src} lines REGEX "tcase_create\\(\"[A-Za-z0-9_]+\"\\)")
  set(cases "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ".*tcase_create\\(\"([A-Za-z0-9_]+)\"\\).*" "\\1"
      tc "${line}")
    list(APPEND cases ${tc})
  endforeach()
  if(NOT cases)
    message(FATAL_ERROR "tests/unit/test_${module}.c has no tcase_create()")
  endif()
  brim_unit_test(${module} CASES ${cases} ${ARGN})
endfunction()

brim_common_unit_test(status)
brim_common_unit_test(alloc)
brim_common_unit_test(hash)
target_link_libraries(test_hash PRIVATE PkgConfig::XXHASH)
brim_common_unit_test(rng)
brim_common_unit_test(ring)
brim_common_unit_test(placement)
brim_common_unit_test(map)
brim_common_unit_test(parse)
