#!/usr/bin/env bash
# Issue 4's single-stream comparison: llama.cpp's llama-bench (pp512, and tg128 after a 512-token context, -d 512,
# which is where `pagoda bench latency` decodes) and `pagoda bench latency --prompt-len 512 --gen 128` on each
# GGUF given, in one script, with the ratios pagoda / llama.cpp and pagoda's MBU (bandwidth measured by pagoda
# right before and after its decode).
# Usage: scripts/bench/latency_vs_llama.sh MODEL.gguf [MODEL.gguf ...]
#   env: PAGODA (binary), PEER (the peer tools folder), THREADS (2), REPS (llama-bench repetitions, 3),
#        LLAMA_BIN (a folder holding llama-bench; default: the peer's llama.sh build. On a VM whose CPU advertises
#        AMX it cannot run, build llama.cpp with -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
#        and point LLAMA_BIN at its bin/), PAGODA_ARGS (extra flags for bench latency, e.g. --no-repack),
#        RESULTS_ID (a name: the table goes to docs/results/RESULTS_ID.json and docs/BENCHMARKS.md's block of it),
#        DEPTH0 (1: also decode at depth 0, llama-bench -p 0 -n 128 against bench latency --prompt-len 1 --gen 128).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
[ $# -ge 1 ] || { echo "usage: latency_vs_llama.sh MODEL.gguf [MODEL.gguf ...]" >&2; exit 2; }
P=${PAGODA:-$root/build/src/cli/pagoda}
peer=${PEER:-$root/scripts/peer}
threads=${THREADS:-2}
if [ -n "${LLAMA_BIN:-}" ]; then llama_bench=("$LLAMA_BIN/llama-bench"); else llama_bench=("$peer/llama.sh" bench); fi
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }

depth0=${DEPTH0:-0}
printf "%-28s %10s %10s %7s %10s %10s %7s %6s %7s" model "pp512 pag" "pp512 lcp" ratio "tg128 pag" "tg128 lcp" \
  ratio MBU "GB/s"
[ "$depth0" = 1 ] && printf " %10s %10s %7s %6s" "tg d0 pag" "tg d0 lcp" ratio "MBU d0"
printf "\n"
table_rows=""
for model in "$@"; do
  fail() { echo "latency_vs_llama: $1 failed on $model (run it by hand to see why)" >&2; exit 1; }
  # llama.cpp cannot load pagoda's own types (int8, awq): its columns then read 0 and the ratios n/a.
  lpp=$("${llama_bench[@]}" -m "$model" -t "$threads" -p 512 -n 0 -r "${REPS:-3}" -o json 2>/dev/null |
        jq -r '.[0].avg_ts // 0' 2>/dev/null) || lpp=0
  ltg=$("${llama_bench[@]}" -m "$model" -t "$threads" -p 0 -n 128 -d 512 -r "${REPS:-3}" -o json 2>/dev/null |
        jq -r '.[0].avg_ts // 0' 2>/dev/null) || ltg=0
  # shellcheck disable=SC2086
  pj=$("$P" bench latency -m "$model" --threads "$threads" --prompt-len 512 --gen 128 --json ${PAGODA_ARGS:-} \
       2>/dev/null) || fail "pagoda bench latency"
  ppp=$(jq -r '.prefill_tok_s // 0' <<<"$pj"); ptg=$(jq -r '.decode_tok_s // 0' <<<"$pj")
  printf "%-28s %10.2f %10.2f %7s %10.2f %10.2f %7s %5.1f%% %7.2f" "$(basename "$model")" "$ppp" "$lpp" \
    "$(ratio "$ppp" "$lpp")" "$ptg" "$ltg" "$(ratio "$ptg" "$ltg")" "$(jq -r '(.mbu // 0) * 100' <<<"$pj")" \
    "$(jq -r '.membw_gbps // 0' <<<"$pj")"
  row=$(printf "\`%s\`|%.1f|%.1f|**%s**|%.1f|%.1f|**%s**|%.1f %%" "$(basename "$model" .gguf)" "$ppp" "$lpp" \
    "$(ratio "$ppp" "$lpp")" "$ptg" "$ltg" "$(ratio "$ptg" "$ltg")" "$(jq -r '(.mbu // 0) * 100' <<<"$pj")")
  if [ "$depth0" = 1 ]; then
    l0=$("${llama_bench[@]}" -m "$model" -t "$threads" -p 0 -n 128 -r "${REPS:-3}" -o json 2>/dev/null |
         jq -r '.[0].avg_ts // 0' 2>/dev/null) || l0=0
    # shellcheck disable=SC2086
    p0j=$("$P" bench latency -m "$model" --threads "$threads" --prompt-len 1 --gen 128 --json ${PAGODA_ARGS:-} \
         2>/dev/null) || fail "pagoda bench latency at depth 0"
    p0=$(jq -r '.decode_tok_s // 0' <<<"$p0j"); mbu0=$(jq -r '(.mbu // 0) * 100' <<<"$p0j")
    printf " %10.2f %10.2f %7s %5.1f%%" "$p0" "$l0" "$(ratio "$p0" "$l0")" "$mbu0"
    row+=$(printf "|%.1f|%.1f|**%s**|%.1f %%" "$p0" "$l0" "$(ratio "$p0" "$l0")" "$mbu0")
  fi
  printf "\n"
  table_rows+="$row"$'\n'
  membw=$(jq -r '.membw_gbps // 0' <<<"$pj")
  isa=$(jq -r '.isa // empty' <<<"$pj")
done
if [ -n "${RESULTS_ID:-}" ]; then
  python3 "$root/scripts/bench/results.py" record --id "$RESULTS_ID" \
    --columns "model (file)|pp512 pagoda|llama.cpp|ratio|tg128 d512 pagoda|llama.cpp|ratio|pagoda MBU$([ "$depth0" = 1 ] && echo "|tg128 d0 pagoda|llama.cpp|ratio|pagoda MBU d0")" \
    --note "$threads threads; llama-bench's mean of ${REPS:-3} repetitions, pagoda one run; tokens/s." \
    ${isa:+--pagoda-isa "$isa"} --membw "$membw" \
    --command "$(for v in RESULTS_ID REPS THREADS PAGODA_ARGS DEPTH0; do if [ -n "${!v:-}" ]; then printf '%s=%q ' "$v" "${!v}"; fi; done)scripts/bench/latency_vs_llama.sh $*" \
    <<<"$table_rows"
fi
