# brim-sim process-level tests, label "sim" (included by tests/CMakeLists.txt).
# tests/sim/expect.py runs brim-sim and checks its exact exit status, stdout
# and stderr; tests/sim/check_bands.py holds the acceptance bands of
# shared/cases/seed-figures.md and checks brim-sim's figures against them.
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(WARNING "python3 not found: the sim.* tests are not registered")
  return()
endif()

set(SIM_DIR ${CMAKE_CURRENT_SOURCE_DIR}/sim)
set(SIM_EXPECT ${Python3_EXECUTABLE} ${SIM_DIR}/expect.py)

# brim_sim_test(NAME [TIMEOUT s] ARGS expect.py-flags... -- brim-sim args...)
function(brim_sim_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "ARGS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  list(FIND T_ARGS "--" sep)
  list(SUBLIST T_ARGS 0 ${sep} flags)
  math(EXPR first "${sep} + 1")
  list(SUBLIST T_ARGS ${first} -1 cmd)
  add_test(NAME sim.${name}
    COMMAND ${SIM_EXPECT} ${flags} -- $<TARGET_FILE:brim-sim> ${cmd})
  set_tests_properties(sim.${name} PROPERTIES LABELS sim TIMEOUT ${T_TIMEOUT})
endfunction()

# --help everywhere, exit 0.
brim_sim_test(help ARGS --stdout-re "^usage: brim-sim COMMAND" -- --help)
foreach(cmd grid spread place)
  brim_sim_test(${cmd}.help ARGS --stdout-re "^usage: brim-sim ${cmd}"
    -- ${cmd} --help)
endforeach()

# place: hand-computed golden outputs (the .in files say how).
foreach(case i03_wrap walk_skips_full ties no_cap)
  brim_sim_test(place.${case} ARGS --stdout ${SIM_DIR}/place/${case}.out
    -- place ${SIM_DIR}/place/${case}.in)
endforeach()
brim_sim_test(place.stdin ARGS --stdin ${SIM_DIR}/place/i03_wrap.in
  --stdout ${SIM_DIR}/place/i03_wrap.out -- place -)

# place: bad input exits 2 with FILE:LINE messages and places nothing.
brim_sim_test(place.bad_lines ARGS --exit 2 --stdout-empty
  --stderr-re "bad_lines.in:3: bad position \"-5\""
  --stderr-re "bad_lines.in:4: bad position \"12x\""
  --stderr-re "bad_lines.in:6: unknown item \"shuffle\""
  --stderr-re "bad_lines.in:7: bad node \"4096\""
  --stderr-re "bad_lines.in:8: eps given twice"
  -- place ${SIM_DIR}/place/bad_lines.in)
brim_sim_test(place.no_eps ARGS --exit 2 --stdout-empty
  --stdin ${SIM_DIR}/place/no_eps.in --stderr-re "<stdin>: no eps line"
  -- place -)
brim_sim_test(place.missing_file ARGS --exit 2 --stderr-re "cannot open"
  -- place ${SIM_DIR}/place/does-not-exist.in)
brim_sim_test(place.no_file ARGS --exit 2 --stderr-re "expected one FILE"
  -- place)

# Usage errors name the flag and the value and exit 2.
brim_sim_test(usage.command ARGS --exit 2 --stderr-re "unknown command \"frob\""
  -- frob)
brim_sim_test(usage.grid_tokens ARGS --exit 2
  --stderr-re "--tokens: bad value \"abc\"" -- grid --tokens 1,abc)
brim_sim_test(usage.grid_eps ARGS --exit 2
  --stderr-re "--eps: bad value \"-0.1\"" -- grid --eps 0.1,-0.1)
brim_sim_test(usage.grid_nodes ARGS --exit 2
  --stderr-re "--nodes: bad value \"1\": expected an integer 2..4095"
  -- grid --nodes 1)
brim_sim_test(usage.grid_rule ARGS --exit 2
  --stderr-re "--rule: bad value \"fresh\"" -- grid --rule fresh)
brim_sim_test(usage.grid_unknown ARGS --exit 2
  --stderr-re "unknown flag --frobnicate" -- grid --frobnicate 3)
brim_sim_test(usage.grid_missing ARGS --exit 2
  --stderr-re "flag --seeds needs a value" -- grid --seeds)
brim_sim_test(usage.spread_format ARGS --exit 2
  --stderr-re "--format: bad value \"xml\"" -- spread --format xml)

# The figures do not depend on the number of threads.
set(SIM_SMALL_GRID grid --nodes 20,50 --keys-per-node 10,100 --tokens 1,16
  --seeds 5 --rule both --format csv)
list(JOIN SIM_SMALL_GRID " " small_grid_text)
brim_sim_test(grid.threads ARGS
  --same-stdout-with "${small_grid_text} --threads 1"
  -- ${SIM_SMALL_GRID} --threads 3)

# The published figures: the acceptance grid (200 nodes, 24 seeds, both
# rules, about 15 s on 2 cores) and Model B at 400 seeds. Too slow to be
# useful under the sanitizers, which the lighter tests above already cover.
if(NOT BRIM_ASAN AND NOT BRIM_UBSAN AND NOT BRIM_TSAN)
  add_test(NAME sim.figures.grid COMMAND ${Python3_EXECUTABLE}
    ${SIM_DIR}/check_bands.py grid $<TARGET_FILE:brim-sim>)
  set_tests_properties(sim.figures.grid PROPERTIES LABELS sim TIMEOUT 600)
  add_test(NAME sim.figures.spread COMMAND ${Python3_EXECUTABLE}
    ${SIM_DIR}/check_bands.py spread $<TARGET_FILE:brim-sim>)
  set_tests_properties(sim.figures.spread PROPERTIES LABELS sim TIMEOUT 120)

  # The pictures of docs/simulation.md: deploy/sim-plots.sh --quick into a
  # temporary directory (valid PNGs of sane size), malformed JSON refused
  # by sim/plot/sim_plots.py, and every PNG the page shows committed.
  # Skipped (exit 77) only when the plotting python has no matplotlib.
  add_test(NAME sim.plots COMMAND ${Python3_EXECUTABLE}
    ${SIM_DIR}/check_plots.py ${PROJECT_SOURCE_DIR} $<TARGET_FILE:brim-sim>)
  set_tests_properties(sim.plots PROPERTIES LABELS sim TIMEOUT 120
    SKIP_RETURN_CODE 77)
endif()
