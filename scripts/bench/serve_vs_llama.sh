#!/usr/bin/env bash
# The serving comparison of issue 28: `pagoda bench serve` against pagoda's own server and against llama.cpp's
# llama-server on the same GGUF, in one script so both run on the same (shared, noisy) machine, on four workloads,
# each server started fresh for each (no prefix cache carried over):
#   default    12 cold random prompts, Poisson 0.2 req/s, 128 in / 64 out
#   rate1      the same at 1 req/s
#   chatmix    24 prompts at 0.5 req/s: 10% of 1,024 tokens among 64-256-token ones, 64 out
#   multiturn  4 conversations x 4 turns at 0.5 req/s, each turn resending the conversation (128 tokens, then 64
#              more a turn), 64 out: the prefix cache shows
# Prompts are token ids (from the byte tokens every Llama-family vocabulary has) sent to /v1/completions, so both
# servers see exactly the same tokens. Prints each workload's blocks side by side, then a table of the acceptance
# ratios (pagoda / llama-server, p99 TTFT and TPOT, target <= 0.7 both at once).
# Usage: scripts/bench/serve_vs_llama.sh MODEL.gguf [THREADS]
#   env: PAGODA (binary), PEER (the peer tools folder), WORKLOADS ("default rate1 chatmix multiturn"), SEED (0),
#        PAGODA_PORT (18080), LLAMA_PORT (18081), PAGODA_ARGS / LLAMA_ARGS (extra server flags), LLAMA_BIN (a
#        folder holding llama-server, instead of the peer's `llama.sh server`), OUT (logs and JSON; default a
#        temporary folder), SCALE (1: multiplies every workload's request count; 0.25 for a smoke run).
#        RECORD (1: the ratio table goes to docs/results/serving-vs-llama.json and docs/BENCHMARKS.md, when every
#        workload ran at SCALE 1; 0: print only).
#   Quick smoke run: SCALE=0.25 WORKLOADS=rate1 scripts/bench/serve_vs_llama.sh MODEL.gguf
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?usage: serve_vs_llama.sh MODEL.gguf [THREADS]}
threads=${2:-2}
P=${PAGODA:-$root/build/src/cli/pagoda}
peer=${PEER:-$root/scripts/peer}
workloads=${WORKLOADS:-default rate1 chatmix multiturn}
scale=${SCALE:-1}
seed=${SEED:-0}
pagoda_port=${PAGODA_PORT:-18080}
llama_port=${LLAMA_PORT:-18081}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
server_pid=
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
if [ -n "${LLAMA_BIN:-}" ]; then llama_server="$LLAMA_BIN/llama-server"; else llama_server="$peer/llama.sh server"; fi

# Waits until GET URL answers 200 (llama-server answers 503 while it loads the model).
wait_ready() {
  for _ in $(seq 1 600); do
    if curl -sf -o /dev/null "$1"; then return 0; fi
    sleep 0.5
  done
  echo "serve_vs_llama: $1 never became ready" >&2
  return 1
}
count() { awk -v n="$1" -v s="$scale" 'BEGIN { c = int(n * s + 0.5); print (c < 1 ? 1 : c) }'; }

# The JSONL datasets: {"prompt": [ids], "output_len": N}, ids in [3, 259) (byte tokens), seeded.
python3 - "$out" "$seed" "$(count 24)" "$(count 4)" <<'EOF'
import json, random, sys
out, seed, n_mix, n_conv = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
ids = lambda n: [rng.randrange(3, 259) for _ in range(n)]
with open(f"{out}/chatmix.jsonl", "w") as f:
    for i in range(n_mix):
        n = 1024 if i % 10 == 4 else rng.randint(64, 256)  # 10%, spread through the run
        f.write(json.dumps({"prompt": ids(n), "output_len": 64}) + "\n")
convs = [ids(128) for _ in range(n_conv)]
with open(f"{out}/multiturn.jsonl", "w") as f:
    for turn in range(4):
        for c in range(n_conv):
            if turn > 0:
                convs[c] += ids(64)
            f.write(json.dumps({"prompt": convs[c], "output_len": 64}) + "\n")
EOF

# bench serve arguments of a workload.
workload_args() {
  case "$1" in
    default) echo "--num-prompts $(count 12) --request-rate 0.2 --dataset random --input-len 128 --output-len 64" ;;
    rate1) echo "--num-prompts $(count 12) --request-rate 1 --dataset random --input-len 128 --output-len 64" ;;
    chatmix) echo "--num-prompts $(count 24) --request-rate 0.5 --dataset $out/chatmix.jsonl" ;;
    multiturn) echo "--num-prompts $(( $(count 4) * 4 )) --request-rate 0.5 --dataset $out/multiturn.jsonl" ;;
    *) echo "serve_vs_llama: unknown workload $1" >&2; return 1 ;;
  esac
}

bench() {  # PORT NAME WORKLOAD
  # shellcheck disable=SC2046
  "$P" bench serve --base-url "http://127.0.0.1:$1" --endpoint /v1/completions -m "$model" $(workload_args "$3") \
    --seed "$seed" --percentiles 50,99 --json "$out/$2.json" 2>"$out/$2.bench.log"
}

jr() { jq -r "$1" "$out/$2.json"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

echo "== pagoda serve ($threads threads) vs llama-server (-np 8 -c 16384, $threads threads) on $model"
llama_isa=$([ -z "${LLAMA_BIN:-}" ] && "$peer/llama.sh" --isa 2>/dev/null | head -1 || echo "(LLAMA_BIN build)")
echo "   cpu: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; pagoda: $("$P" run -n 1 -p x 2>&1 |
  sed -n 's/^model: .*(\(.*\) kernels.*/\1/p') kernels; llama.cpp: $llama_isa; logs in $out"
summary=()
table_rows=""
for w in $workloads; do
  echo
  echo "== workload $w: $(workload_args "$w" | sed "s|$out/||")"
  # shellcheck disable=SC2086
  "$P" serve -m "$model" --port "$pagoda_port" --threads "$threads" ${PAGODA_ARGS:-} >"$out/pagoda-$w.log" 2>&1 &
  server_pid=$!
  wait_ready "http://127.0.0.1:$pagoda_port/health"
  bench "$pagoda_port" "pagoda-$w" "$w" >"$out/pagoda-$w.txt"
  curl -sf "http://127.0.0.1:$pagoda_port/metrics" >"$out/pagoda-$w.metrics"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=

  # shellcheck disable=SC2086
  $llama_server -m "$model" --port "$llama_port" -np 8 -c 16384 -t "$threads" ${LLAMA_ARGS:-} \
    >"$out/llama-$w.log" 2>&1 &
  server_pid=$!
  wait_ready "http://127.0.0.1:$llama_port/health"
  bench "$llama_port" "llama-$w" "$w" >"$out/llama-$w.txt"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=

  printf "%-40s %-14s %-14s\n" "" "pagoda" "llama-server"
  paste -d'\t' "$out/pagoda-$w.txt" "$out/llama-$w.txt" | awk -F'\t' '
    $1 !~ /:/ { print $1; next }
    { split($1, a, ":"); split($2, b, ":"); va = a[2]; vb = b[2]; gsub(/ /, "", va); gsub(/ /, "", vb);
      printf "%-40s %-14s %-14s\n", a[1] ":", va, vb }'
  t=$(ratio "$(jr .p99_ttft_ms "pagoda-$w")" "$(jr .p99_ttft_ms "llama-$w")")
  p=$(ratio "$(jr .p99_tpot_ms "pagoda-$w")" "$(jr .p99_tpot_ms "llama-$w")")
  verdict=$(awk -v t="$t" -v p="$p" 'BEGIN { print (t != "n/a" && p != "n/a" && t <= 0.7 && p <= 0.7) ? "pass" : "miss" }')
  summary+=("$(printf "%-10s %9.1f %9.1f %6s | %9.1f %9.1f %6s | %6.1f %6.1f | %s" "$w" \
    "$(jr .p99_ttft_ms "pagoda-$w")" "$(jr .p99_ttft_ms "llama-$w")" "$t" \
    "$(jr .p99_tpot_ms "pagoda-$w")" "$(jr .p99_tpot_ms "llama-$w")" "$p" \
    "$(jr .output_throughput "pagoda-$w")" "$(jr .output_throughput "llama-$w")" "$verdict")")
  table_rows+=$(printf "%s|%.1f|%.1f|**%s**|%.1f|%.1f|**%s**|%.1f|%.1f" "$w" \
    "$(jr .p99_ttft_ms "pagoda-$w")" "$(jr .p99_ttft_ms "llama-$w")" "$t" \
    "$(jr .p99_tpot_ms "pagoda-$w")" "$(jr .p99_tpot_ms "llama-$w")" "$p" \
    "$(jr .output_throughput "pagoda-$w")" "$(jr .output_throughput "llama-$w")")$'\n'
done

echo
echo "== p99 ratios pagoda / llama-server (target: TTFT and TPOT both <= 0.7)"
printf "%-10s %9s %9s %6s | %9s %9s %6s | %6s %6s | %s\n" "workload" "TTFT pag" "TTFT lcp" "ratio" "TPOT pag" \
  "TPOT lcp" "ratio" "tok/s" "lcp" "verdict"
for line in "${summary[@]}"; do echo "$line"; done

if [ "${RECORD:-1}" != 0 ] && [ "$scale" = 1 ] && [ "$workloads" = "default rate1 chatmix multiturn" ]; then
  python3 "$root/scripts/bench/results.py" record --id serving-vs-llama \
    --columns "workload|TTFT p99 pagoda|llama-server|ratio|TPOT p99 pagoda|llama-server|ratio|tok/s pagoda|llama-server" \
    --note "\`$(basename "$model" .gguf)\`, pagoda serve with its defaults, llama-server -np 8 -c 16384, $threads threads; p99 in ms." \
    --pagoda-isa "$("$P" run -n 1 -p x 2>&1 | sed -n 's/^model: .*(\(.*\) kernels.*/\1/p')" \
    --command "scripts/bench/serve_vs_llama.sh $model $threads" <<<"$table_rows"
fi
