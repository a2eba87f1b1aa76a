#!/usr/bin/env bash
# pagoda's dequantizers against llama.cpp's (opt-in: needs the peer's llama.cpp build, which llama.sh makes on first
# use): compiles dequant_vs_ggml.cc against this tree's built pagoda_format/quant/core libraries and the peer's
# libggml-base, and runs it. Every type pagoda converts or carries at load, plus q4_0 and q8_0, must give the same
# bits, and so must each carried type's carrier.
# Usage: scripts/check/dequant_vs_ggml.sh   env: BUILD (pagoda build folder, default build), PEER_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
peer=${PEER_DIR:-$HOME/.cache/pagoda-peer}/llama.cpp/build/bin
[ -e "$peer/libggml-base.so" ] || { echo "no $peer/libggml-base.so: run scripts/peer/llama.sh --help first" >&2; exit 2; }
cmake --build "$build" --target pagoda_format >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
c++ -std=c++20 -O2 -I "$root/src" -I "$root/include" "$root/scripts/check/dequant_vs_ggml.cc" \
  "$build/src/format/libpagoda_format.a" "$build/src/quant/libpagoda_quant.a" "$build/src/core/libpagoda_core.a" \
  -L"$peer" -lggml-base -Wl,-rpath,"$peer" -lfmt -o "$out/dequant_vs_ggml"
"$out/dequant_vs_ggml"
