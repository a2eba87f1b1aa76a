#!/usr/bin/env bash
# The results page's memory table: KV cache bytes per token of named model shapes in each cache type, and how many
# sequences of 576 tokens a GiB of paged KV holds (`pagoda bench kv-memory`: computed from the shapes with the KV
# storage's own accounting, not measured), recorded in docs/results/kv-memory.json and docs/BENCHMARKS.md
# (scripts/bench/results.py) unless RECORD=0.
# Usage: scripts/bench/kv_memory.sh   env: PAGODA (the binary)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
P=${PAGODA:-$root/build/src/cli/pagoda}
out=$("$P" bench kv-memory --json)
rows=$(jq -r '.shapes[] | [.shape, "\(.layers) x \(.kv_heads) x \(.head_dim)"] + ([.types | ("f32", "f16", "q8_0", "q4_0", "int8") as $t | .[$t] |
  if .fits then "\(.bytes_per_token / 1024 * 10 | round / 10) KiB (\(.max_seqs))" else "-" end]) | join(" | ")' <<<"$out")
echo "$rows"
if [ "${RECORD:-1}" != 0 ]; then
  python3 "$root/scripts/bench/results.py" record --id kv-memory --no-peer --command "scripts/bench/kv_memory.sh" \
    --columns "shape|layers x KV heads x head dim|f32|f16 (the default, as llama.cpp's)|q8_0|q4_0|pagoda INT8" \
    --note "**Computed**, not measured: K and V bytes per token over all layers as the KV storage lays them out (q8_0 and q4_0 in ggml's blocks of 32 values with an f16 scale, INT8 with an f32 scale per token and head), and in brackets the sequences of 576 tokens 1 GiB of paged KV (blocks of 16) holds." \
    <<<"$rows"
fi
