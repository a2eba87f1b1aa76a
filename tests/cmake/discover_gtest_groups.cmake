# Script mode (cmake -P), run after a test binary is built in the ASan tree: lists its tests and writes a ctest file
# registering one ctest test per group: a gtest suite, and for a parameterised suite one group per parameter name (so
# a level the CPU lacks is still its own, skipped, group; run_gtest_group.sh reports it so). Under ASan each process
# costs 0.08-0.18 s of start-up (shadow memory, the leak check at exit): 679 processes, one a test, made about a third
# of that tree's ctest time (117 s; grouped, 159 processes: 76 s). The other trees keep one ctest test per gtest test
# (GoogleTest's gtest_discover_tests).
# Inputs: TEST_EXECUTABLE, TEST_FILE (written), RUNNER (run_gtest_group.sh), TEST_LABELS (may be empty).
execute_process(COMMAND "${TEST_EXECUTABLE}" --gtest_list_tests
                OUTPUT_VARIABLE listing RESULT_VARIABLE status TIMEOUT 60)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${TEST_EXECUTABLE} --gtest_list_tests failed (${status}):\n${listing}")
endif()
string(REPLACE ";" "\\;" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suite "")
set(groups "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #][^ ]*)\\.( .*)?$")          # "Suite." (typed suites add "  # TypeParam = ...")
    set(suite "${CMAKE_MATCH_1}")
  elseif(suite AND line MATCHES "^  ([^ ]+)")         # "  Test" or "  Test/param  # GetParam() = ..."
    if(CMAKE_MATCH_1 MATCHES "/([^/]+)$")
      list(APPEND groups "${suite}.*/${CMAKE_MATCH_1}")
    else()
      list(APPEND groups "${suite}.*")
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES groups)
set(content "")
foreach(group IN LISTS groups)
  string(APPEND content "add_test([=[${group}]=] \"${RUNNER}\" \"${TEST_EXECUTABLE}\" [=[${group}]=])\n")
  string(APPEND content "set_tests_properties([=[${group}]=] PROPERTIES SKIP_RETURN_CODE 77")
  if(TEST_LABELS)
    string(APPEND content " LABELS [=[${TEST_LABELS}]=]")
  endif()
  string(APPEND content ")\n")
endforeach()
file(WRITE "${TEST_FILE}" "${content}")
