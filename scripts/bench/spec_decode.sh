#!/usr/bin/env bash
# Speculative decoding with prompt-lookup (n-gram) drafts against plain decoding, on the bundled model (or MODEL),
# greedy, stories prompts: each `pagoda bench latency --spec ngram` call times the same request without and then
# with speculation in one process, ROUNDS times, and prints the decode tokens/s of both, the median ratio, whether
# the greedy tokens are identical (it exits non-zero when not), the acceptance rate and the tokens per decode step.
# The machine is shared and noisy: only the ratios mean much, and only from one run of this script.
# Usage: scripts/bench/spec_decode.sh [MODEL.gguf] [THREADS]
#   env: PAGODA (the binary), K (drafts per step at most, default 4), GEN (tokens per request, default 256),
#   ROUNDS (5), NGRAM_MIN / NGRAM_MAX (1 / 4), FIXED=1 (--spec-fixed: every draft found, no adaptive length)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:-$root/assets/models/stories260K/stories260K.gguf}
threads=${2:-1}
P=${PAGODA:-$root/build/src/cli/pagoda}
k=${K:-4}
gen=${GEN:-256}
rounds=${ROUNDS:-5}
prompts=(
  "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine."
  "One day, a little boy named Tim found a big red ball in the garden. He"
  "Lily and Ben went to the park. They"
)
echo "== speculative decoding (--spec ngram --spec-tokens $k, n-grams ${NGRAM_MIN:-1}..${NGRAM_MAX:-4}), greedy, $gen tokens, $threads threads, model $model"
echo "   CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load: $(cut -d' ' -f1-3 /proc/loadavg)"
for prompt in "${prompts[@]}"; do
  echo "-- prompt: $prompt"
  "$P" bench latency -m "$model" --threads "$threads" --prompt "$prompt" --gen "$gen" --spec ngram --spec-tokens "$k" \
    --spec-ngram-min "${NGRAM_MIN:-1}" --spec-ngram-max "${NGRAM_MAX:-4}" --rounds "$rounds" \
    ${FIXED:+--spec-fixed}
done
