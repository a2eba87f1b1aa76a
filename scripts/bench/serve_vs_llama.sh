#!/usr/bin/env bash
# The serving comparison of issue 9: `pagoda bench serve` against pagoda's own server and against llama.cpp's
# llama-server on the same GGUF, in one script so both run on the same (shared, noisy) machine, and their result
# blocks printed side by side. Default workload: 12 cold random prompts, Poisson 0.2 req/s, 128 in / 64 out.
# Usage: scripts/bench/serve_vs_llama.sh MODEL.gguf [THREADS]
#   env: PAGODA (binary), PEER (the peer tools folder), NUM_PROMPTS (12), RATE (0.2), INPUT_LEN (128),
#        OUTPUT_LEN (64), SEED (0: prompts and arrivals), PAGODA_PORT (18080), LLAMA_PORT (18081),
#        PAGODA_ARGS / LLAMA_ARGS (extra server flags),
#        OUT (a folder for the logs and JSON results; default a temporary one).
#   Quick smoke run: NUM_PROMPTS=2 RATE=inf INPUT_LEN=16 OUTPUT_LEN=8 scripts/bench/serve_vs_llama.sh MODEL.gguf
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?usage: serve_vs_llama.sh MODEL.gguf [THREADS]}
threads=${2:-2}
P=${PAGODA:-$root/build/src/cli/pagoda}
peer=${PEER:-$root/../shared/tools/peer}
num_prompts=${NUM_PROMPTS:-12}
rate=${RATE:-0.2}
input_len=${INPUT_LEN:-128}
output_len=${OUTPUT_LEN:-64}
pagoda_port=${PAGODA_PORT:-18080}
llama_port=${LLAMA_PORT:-18081}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# Waits until GET URL answers 200 (llama-server answers 503 while it loads the model).
wait_ready() {
  for _ in $(seq 1 600); do
    if curl -sf -o /dev/null "$1"; then return 0; fi
    sleep 0.5
  done
  echo "serve_vs_llama: $1 never became ready" >&2
  return 1
}

# One benchmark run; the tokenizer of MODEL builds the prompts, sent as token ids so both servers see exactly
# INPUT_LEN tokens.
bench() {
  "$P" bench serve --base-url "http://127.0.0.1:$1" --endpoint /v1/completions -m "$model" \
    --num-prompts "$num_prompts" --request-rate "$rate" --dataset random --input-len "$input_len" \
    --output-len "$output_len" --seed "${SEED:-0}" --percentiles 50,99 --json "$out/$2.json" 2>"$out/$2.bench.log"
}

echo "== pagoda serve ($threads threads) vs llama-server (-np 8 -c 8192, $threads threads) on $model"
echo "   $num_prompts requests, rate $rate req/s, $input_len in / $output_len out; logs in $out"

# shellcheck disable=SC2086
"$P" serve -m "$model" --port "$pagoda_port" --threads "$threads" ${PAGODA_ARGS:-} >"$out/pagoda.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$pagoda_port/health"
bench "$pagoda_port" pagoda >"$out/pagoda.txt"
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true

# shellcheck disable=SC2086
"$peer/llama.sh" server -m "$model" --port "$llama_port" -np 8 -c 8192 -t "$threads" ${LLAMA_ARGS:-} \
  >"$out/llama.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$llama_port/health"
bench "$llama_port" llama >"$out/llama.txt"

printf "%-40s %-14s %-14s\n" "" "pagoda" "llama-server"
paste -d'\t' "$out/pagoda.txt" "$out/llama.txt" | awk -F'\t' '
  $1 !~ /:/ { print $1; next }
  { split($1, a, ":"); split($2, b, ":"); va = a[2]; vb = b[2]; gsub(/ /, "", va); gsub(/ /, "", vb);
    printf "%-40s %-14s %-14s\n", a[1] ":", va, vb }'
