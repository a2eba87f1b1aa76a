#!/usr/bin/env bash
# Runs the kernel, model, engine, sampling, grammar and API unit tests, and the bundled model's greedy story, on an
# emulated AVX2-only CPU (QEMU user mode, -cpu Haswell: AVX2/FMA/F16C, no AVX-512, no AVX-VNNI, no AMX), for the
# machines we cannot get: pagoda must pick avx2 there, the wider levels' tests must skip, and the text must equal
# the native avx2 run's. Needs Debian's qemu-user (QEMU 7.2+ emulates AVX2). A check, not a benchmark.
#   scripts/check/avx2_only.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
command -v qemu-x86_64 >/dev/null || { echo "avx2_only: install qemu-user (apt-get install qemu-user)"; exit 2; }
q=(qemu-x86_64 -cpu Haswell)
for t in kernels/kernels_tests model/model_tests engine/engine_tests sampling/sampling_tests grammar/grammar_tests \
         api/api_tests; do
  printf '%-24s ' "$t"
  "${q[@]}" "$build/tests/unit/$t" --gtest_brief=1 2>&1 | grep -E '^\[  (PASSED|SKIPPED|FAILED)' | tr '\n' ' '
  echo
done
summary=$("${q[@]}" "$build/src/cli/pagoda" run -p "Once" -n 2 2>&1)
grep -q "(avx2 kernels" <<<"$summary" || { echo "avx2_only: the emulated run did not pick avx2"; exit 1; }
emulated=$("${q[@]}" "$build/src/cli/pagoda" run -q -p "Once upon a time" -n 196 --temp 0 2>/dev/null)
native=$(PAGODA_ISA=avx2 "$build/src/cli/pagoda" run -q -p "Once upon a time" -n 196 --temp 0 2>/dev/null)
[ "$emulated" = "$native" ] || { echo "avx2_only: the texts differ"; exit 1; }
echo "greedy story: the emulated AVX2-only run picks avx2 and gives the native avx2 text"
