# Unit tests of common/: one executable per module, one CTest test per
# TCase (unit.<module>.<case>), the cases read from the source by
# brim_unit_test (tests/CMakeLists.txt).

brim_unit_test(status)
brim_unit_test(alloc)
brim_unit_test(hash)
target_link_libraries(test_hash PRIVATE PkgConfig::XXHASH)
brim_unit_test(rng)
brim_unit_test(ring)
string(CONCAT placement_env
  "BRIM_TEST_SEED=N       base seed of the property cases|"
  "BRIM_TEST_CASE_SEED=N  run one property case: the seed a failure printed")
brim_unit_test(placement ENV_HELP "${placement_env}")
brim_unit_test(map)
brim_unit_test(parse)
brim_unit_test(units)
