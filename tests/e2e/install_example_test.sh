#!/bin/sh
# Installs the build into a temporary prefix, builds examples/ against it with find_package(pagoda) as a user's
# project would, and runs the example on the bundled model: both of its requests must finish.
#   install_example_test.sh BUILD_DIR SOURCE_DIR
set -eu
build=$1
source=$2
work=$(mktemp -d "${TMPDIR:-/tmp}/pagoda-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
test -f "$work/prefix/include/pagoda/generator.h"
test -f "$work/prefix/lib/cmake/pagoda/pagodaConfig.cmake" || test -f "$work/prefix/lib64/cmake/pagoda/pagodaConfig.cmake" ||
  test -n "$(find "$work/prefix" -name pagodaConfig.cmake)"
generator=""
if command -v ninja >/dev/null 2>&1; then generator="-G Ninja"; fi
# shellcheck disable=SC2086
cmake -S "$source/examples" -B "$work/examples" $generator -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/examples" >/dev/null
out=$("$work/examples/generate" "" "Once upon a time" 24)
printf '%s\n' "$out"
printf '%s\n' "$out" | grep -q '^\[greedy: length\]$'
printf '%s\n' "$out" | grep -q '^\[sampled: \(stop\|length\), [0-9]* tokens\]$'
