#!/usr/bin/env bash
# One ctest test of the ASan tree: the tests of a test binary that a gtest filter selects (discover_gtest_groups.cmake),
# in one process. Exit status: the binary's when it fails; 77 (the tests' SKIP_RETURN_CODE) when it ran tests and
# every one of them skipped (a level this CPU lacks); 0 otherwise (skips beside passes stay in the output).
#   run_gtest_group.sh BINARY FILTER
set -uo pipefail
out=$("$1" --gtest_filter="$2" 2>&1)
status=$?
printf '%s\n' "$out"
[ "$status" -ne 0 ] && exit "$status"
if grep -q '^\[  PASSED  \] 0 tests\.' <<<"$out" && grep -q '^\[  SKIPPED \] ' <<<"$out"; then exit 77; fi
exit 0
