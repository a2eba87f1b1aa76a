#!/usr/bin/env bash
# What each optimization buys: `pagoda bench ablation` (a naive server, then one optimization switched on per row,
# cumulative, every row on the same requests and the same KV budget in bytes) on MODEL, recorded as the results
# page's table (docs/results/ablation.json, docs/BENCHMARKS.md via scripts/bench/results.py) unless RECORD=0.
# A benchmark (it prints figures), not a test: run it on a quiet machine; single rows move by 5-10 %.
# Usage: scripts/bench/ablation.sh MODEL.gguf [extra bench ablation flags...]
#   The page's model: `pagoda gen-model --shape tinyllama-1.1b --type f32 -o tinyllama-f32.gguf` (f32 4.2 GiB: the
#   baseline's weights; the rows quantize it at load).  env: PAGODA (the binary)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?usage: ablation.sh MODEL.gguf [bench ablation flags...]}
shift
P=${PAGODA:-$root/build/src/cli/pagoda}
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
out=$("$P" bench ablation -m "$model" "$@" --json)
rows=$(jq -r '.rows[] | [.row, .weights, (.ttft_ms.mean | . * 10 | round / 10 | tostring) + " ms",
  (.ttft_ms.p99 | . * 10 | round / 10 | tostring) + " ms", (.tpot_ms.mean | . * 10 | round / 10 | tostring) + " ms",
  (.tpot_ms.p99 | . * 10 | round / 10 | tostring) + " ms", (.output_tok_s | . * 100 | round / 100 | tostring),
  (.max_concurrent_seqs | tostring)] | join(" | ")' <<<"$out")
echo "$rows"
if [ "${RECORD:-1}" != 0 ]; then
  workload=$(jq -r '"\(.scenario): \(.num_requests) requests, \(if .scenario == "online" then "Poisson \(.request_rate) req/s, " else "" end)\(.input_len) prompt tokens (\(.shared_prefix_len) shared) and \(.output_len) out each, KV budget \(.kv_budget_bytes / 1048576 | round) MiB, best of \(.repeats) run(s) per row"' <<<"$out")
  flags=""; [ $# -gt 0 ] && flags=" $*"
  python3 "$root/scripts/bench/results.py" record --id ablation --no-peer \
    --command "scripts/bench/ablation.sh $(basename "$model")$flags" \
    --columns "row|weights|TTFT mean|TTFT p99|TPOT mean|TPOT p99|out tok/s|sequences the KV budget holds" \
    --note "Each row switches one more optimization on over a naive server (f32 weights, no fusion, naive attention, contiguous KV, static batching, whole-prompt prefill, no prefix cache). Model $(basename "$model"); $workload. Load at start $load_at_start." \
    <<<"$rows"
fi
