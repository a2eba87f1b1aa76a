#!/usr/bin/env bash
# Runs llama.cpp's own tools, built natively from the llama.cpp source that node-llama-cpp ships (a git bundle; its
# version is pinned in package.json and package-lock.json), so there is a real llama-server, llama-bench and
# llama-batched-bench to compare against. First use builds them into PEER_DIR (default ~/.cache/pagoda-peer), once per
# CPU kind: the one slow step; later uses, from any clone, start at once.
#   llama.sh server -m MODEL.gguf --port 8081 [llama-server flags]
#   llama.sh bench  -m MODEL.gguf -t 2 -p 512 -n 128 [-o json]
#   llama.sh batched-bench | cli | perplexity | quantize | tokenize | imatrix | gguf-split | embedding ...
#   llama.sh --isa      prints how the build is made: native or noamx, and the instruction sets this CPU has
# The build is what a user gets from `cmake -DGGML_NATIVE=ON`: every SIMD extension this CPU has (AVX-512, VNNI,
# BF16, ...). Only on CPUs that advertise AMX is it built with GGML_NATIVE=OFF and the same extensions listed one by
# one minus AMX, because llama.cpp's AMX path crashed on such a VM. Never compare against an AVX2-only build
# on a CPU that has more: that is not the peer a user would run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${PEER_DIR:-$HOME/.cache/pagoda-peer}
tool=${1:?usage: llama.sh server|bench|batched-bench|cli|perplexity|quantize|tokenize ARGS | --isa}; shift
"$here/setup.sh" >/dev/null 2>&1 || "$here/setup.sh"
src="$dir/llama.cpp"
flags=$(grep -m1 '^flags' /proc/cpuinfo)
has() { grep -qw "$1" <<<"$flags"; }
if has amx_tile; then
  mode="noamx"
  opts=(-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON)
  for f in avx512f:AVX512 avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16 avx512vbmi:AVX512_VBMI avx_vnni:AVX_VNNI; do
    if has "${f%%:*}"; then opts+=("-DGGML_${f#*:}=ON"); fi
  done
else
  mode="native"
  opts=(-DGGML_NATIVE=ON)
fi
isa="$mode: $(for f in avx2 avx512f avx512_vnni avx512_bf16 avx_vnni amx_int8; do if has $f; then printf '%s ' $f; fi; done)"
if [ "$tool" = "--isa" ]; then echo "$isa"; exit 0; fi
build="$src/build"
# One build at a time: a second caller waits for the first instead of deleting its half-built tree.
exec 9>"$dir/.build.lock"
flock 9
if [ ! -x "$build/bin/llama-batched-bench" ] || [ "$(cat "$build/.pagoda-isa" 2>/dev/null)" != "$isa" ]; then
  [ -d "$src" ] || git clone -q "$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$src"
  echo "building llama.cpp tools in $build ($isa; once per CPU kind)..." >&2
  rm -rf "$build"
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release "${opts[@]}" -DLLAMA_CURL=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF >/dev/null
  cmake --build "$build" -j"$(nproc)" --target llama-server llama-bench llama-cli llama-perplexity \
        llama-quantize llama-tokenize llama-batched-bench >/dev/null
  echo "$isa" > "$build/.pagoda-isa"
fi
# A tool outside the first build's list (llama-imatrix, llama-gguf-split, llama-embedding, ...) is built on first use.
if [ ! -x "$build/bin/llama-$tool" ]; then
  echo "building llama-$tool ..." >&2
  cmake --build "$build" -j"$(nproc)" --target "llama-$tool" >/dev/null
fi
exec 9>&-
exec "$build/bin/llama-$tool" "$@"
