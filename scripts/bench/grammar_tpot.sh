#!/usr/bin/env bash
# What a grammar costs a generation: `pagoda bench structured --tpot` (a batch of seeded sampled requests per case
# with the grammar against the same batch without it, asking for the same token counts; best of alternating rounds)
# on MODEL, recorded as the results page's table (docs/results/grammar-tpot.json and docs/BENCHMARKS.md, through
# scripts/bench/results.py) unless RECORD=0. A benchmark (it prints figures), not a test: run it on a quiet machine.
# Usage: scripts/bench/grammar_tpot.sh [MODEL.gguf]   (default: the bundled model)
#   The page's model: `pagoda gen-model --shape tinyllama-1.1b --type q4_0 -o tinyllama-q4_0.gguf`.
#   env: PAGODA (the binary), THREADS (2), REQUESTS (4), MAX_TOKENS (48), ROUNDS (2)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
P=${PAGODA:-$root/build/src/cli/pagoda}
threads=${THREADS:-2}
requests=${REQUESTS:-4}
max_tokens=${MAX_TOKENS:-48}
rounds=${ROUNDS:-2}
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
model_args=()
model_name=bundled
if [ $# -ge 1 ]; then model_args=(-m "$1"); model_name=$(basename "$1"); fi
out=$("$P" bench structured --tpot "${model_args[@]}" --threads "$threads" --requests "$requests" \
      --max-tokens "$max_tokens" --rounds "$rounds" 2>/dev/null)
echo "$out"
# The table's rows: a case name of several words, then tokens, complete, TPOT free (value, "ms"), TPOT grammar
# (value, "ms") and the overhead; the mean row has no token counts.
rows=$(awk '$1 == "case" { on = 1; next }
            on && NF >= 5 { n = NF; name = $1; last = ($1 == "mean") ? NF - 5 : NF - 7
                            for (i = 2; i <= last; ++i) name = name " " $i
                            printf "%s|%s %s|%s %s|%s\n", name, $(n-4), $(n-3), $(n-2), $(n-1), $n }' <<<"$out")
if [ "${RECORD:-1}" != 0 ]; then
  python3 "$root/scripts/bench/results.py" record --id grammar-tpot --no-peer \
    --columns "case|TPOT free|TPOT with the grammar|overhead" \
    --note "Model $model_name, $threads threads; $requests seeded sampled requests of up to $max_tokens tokens per case, with and without the grammar, best of $rounds alternating rounds. Load at the script's start $load_at_start." \
    --command "scripts/bench/grammar_tpot.sh${1:+ $model_name}" <<<"$rows"
fi
