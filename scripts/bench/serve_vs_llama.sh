#!/usr/bin/env bash
# The serving comparison of issue 9: `pagoda bench serve` against pagoda's own server and against llama.cpp's
# llama-server on the same GGUF, in one script so both run on the same (shared, noisy) machine, and their result
# blocks printed side by side. Default workload: 12 cold random prompts, Poisson 0.2 req/s, 128 in / 64 out.
# Usage: scripts/bench/serve_vs_llama.sh MODEL.gguf [THREADS]
#   env: PAGODA (binary), PEER (the peer tools folder), NUM_PROMPTS (12), RATE (0.2), INPUT_LEN (128),
#        OUTPUT_LEN (64), SEED (0: prompts and arrivals), PAGODA_PORT (18080), LLAMA_PORT (18081),
#        PAGODA_ARGS / LLAMA_ARGS (extra server flags), LLAMA_BIN (a folder holding llama-server, instead of
#        the peer's `llama.sh server`: e.g. an AVX2-only build where the native one dies on AMX),
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
curl -sf "http://127.0.0.1:$pagoda_port/metrics" >"$out/pagoda.metrics"
kill "${pids[0]}"; wait "${pids[0]}" 2>/dev/null || true

if [ -n "${LLAMA_BIN:-}" ]; then llama_server="$LLAMA_BIN/llama-server"; else llama_server="$peer/llama.sh server"; fi
# shellcheck disable=SC2086
$llama_server -m "$model" --port "$llama_port" -np 8 -c 8192 -t "$threads" ${LLAMA_ARGS:-} \
  >"$out/llama.log" 2>&1 &
pids+=($!)
wait_ready "http://127.0.0.1:$llama_port/health"
bench "$llama_port" llama >"$out/llama.txt"

printf "%-40s %-14s %-14s\n" "" "pagoda" "llama-server"
paste -d'\t' "$out/pagoda.txt" "$out/llama.txt" | awk -F'\t' '
  $1 !~ /:/ { print $1; next }
  { split($1, a, ":"); split($2, b, ":"); va = a[2]; vb = b[2]; gsub(/ /, "", va); gsub(/ /, "", vb);
    printf "%-40s %-14s %-14s\n", a[1] ":", va, vb }'

# The acceptance ratios (pagoda / llama-server) and pagoda's own /metrics histograms against the client's view:
# a histogram's mean is its _sum over its _count (the server measures from request arrival to its last byte).
jr() { jq -r "$1" "$out/$2.json"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
echo "== ratios pagoda / llama-server"
for k in p99_ttft_ms p99_tpot_ms median_ttft_ms median_tpot_ms output_throughput; do
  printf "   %-18s %10.2f %10.2f   %s\n" "$k" "$(jr ".$k" pagoda)" "$(jr ".$k" llama)" "$(ratio "$(jr ".$k" pagoda)" "$(jr ".$k" llama)")"
done
metric_mean_ms() {
  awk -v m="$1" 'index($0, m "_sum") == 1 { s += $NF } index($0, m "_count") == 1 { c += $NF } END { if (c > 0) printf "%.2f", 1000 * s / c; else print "n/a" }' \
    "$out/pagoda.metrics"
}
echo "== pagoda /metrics vs bench serve (means, ms)"
printf "   TTFT  /metrics %s  client %.2f\n" "$(metric_mean_ms pagoda:time_to_first_token_seconds)" "$(jr .mean_ttft_ms pagoda)"
printf "   E2E   /metrics %s  client %.2f\n" "$(metric_mean_ms pagoda:e2e_request_latency_seconds)" "$(jr .mean_e2el_ms pagoda)"
