#!/usr/bin/env bash
# Issue 4's single-stream comparison: llama.cpp's llama-bench (pp512, tg128) and `pagoda bench latency` (the
# same prompt and generation lengths) on each GGUF given, in one script, with the ratios pagoda / llama.cpp and
# pagoda's MBU (bandwidth measured by pagoda right before and after its decode).
# Usage: scripts/bench/latency_vs_llama.sh MODEL.gguf [MODEL.gguf ...]
#   env: PAGODA (binary), PEER (the peer tools folder), THREADS (2), REPS (llama-bench repetitions, 3),
#        LLAMA_BIN (a folder holding llama-bench; default: the peer's llama.sh build. On a VM whose CPU advertises
#        AMX it cannot run, build llama.cpp with -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
#        and point LLAMA_BIN at its bin/), PAGODA_ARGS (extra flags for bench latency, e.g. --no-repack).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: latency_vs_llama.sh MODEL.gguf [MODEL.gguf ...]" >&2; exit 2; }
P=${PAGODA:-$root/build/src/cli/pagoda}
peer=${PEER:-$root/../shared/tools/peer}
threads=${THREADS:-2}
if [ -n "${LLAMA_BIN:-}" ]; then llama_bench=("$LLAMA_BIN/llama-bench"); else llama_bench=("$peer/llama.sh" bench); fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

printf "%-28s %10s %10s %7s %10s %10s %7s %6s %7s\n" model "pp512 pag" "pp512 lcp" ratio "tg128 pag" "tg128 lcp" \
  ratio MBU "GB/s"
for model in "$@"; do
  lj=$("${llama_bench[@]}" -m "$model" -t "$threads" -p 512 -n 128 -r "${REPS:-3}" -o json 2>/dev/null)
  lpp=$(jq -r '.[] | select(.n_prompt == 512 and .n_gen == 0) | .avg_ts' <<<"$lj")
  ltg=$(jq -r '.[] | select(.n_prompt == 0 and .n_gen == 128) | .avg_ts' <<<"$lj")
  # shellcheck disable=SC2086
  pj=$("$P" bench latency -m "$model" --threads "$threads" --prompt-len 512 --gen 128 --json ${PAGODA_ARGS:-} 2>/dev/null)
  ppp=$(jq -r .prefill_tok_s <<<"$pj"); ptg=$(jq -r .decode_tok_s <<<"$pj")
  printf "%-28s %10.2f %10.2f %7s %10.2f %10.2f %7s %5.1f%% %7.2f\n" "$(basename "$model")" "$ppp" "$lpp" \
    "$(ratio "$ppp" "$lpp")" "$ptg" "$ltg" "$(ratio "$ptg" "$ltg")" "$(jq -r '.mbu * 100' <<<"$pj")" \
    "$(jq -r .membw_gbps <<<"$pj")"
done
