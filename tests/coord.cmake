# Tests of brim-coord (issue 4): the state file, one CTest test per TCase.
# (proto/topo.c's tests are in proto.cmake.)

brim_unit_test(persist LIBS brim_coord_core CASES
  round_trip round_trip_pending missing_is_notfound truncated checksum
  bad_magic future_version malformed_body inconsistent leftover_tmp_ignored
  save_fails epochs_survive settings_check nomem)
