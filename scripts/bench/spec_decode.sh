#!/usr/bin/env bash
# Speculative decoding with n-gram drafts against plain decoding, on the bundled model (or MODEL), greedy, stories
# prompts: each `pagoda bench latency --spec ngram` call times the same request without and then with speculation in
# one process, ROUNDS times, and prints the decode tokens/s of both, the median ratio, whether the greedy tokens are
# identical (it exits non-zero when not), the acceptance rate and the tokens per decode step. Each prompt runs twice:
# prompt lookup alone, then with an n-gram corpus (--spec-ngram-corpus) of the model's own greedy stories for 90
# other prompts (generated here first: no measured prompt among them, so the corpus never holds the measured text;
# llama.cpp's lookup cache built from a model's earlier outputs is the same idea).
# The machine is shared and noisy: only the ratios mean much, and only from one run of this script.
# Usage: scripts/bench/spec_decode.sh [MODEL.gguf] [THREADS]   (threads: default pagoda's own, one per core or 1 for a
#   model under 4M parameters such as the bundled one)
#   env: PAGODA (the binary), K (drafts per step at most, default 4), GEN (tokens per request, default 256),
#   ROUNDS (15: medians of 9 moved too much from run to run on a 2-core VM), NGRAM_MIN / NGRAM_MAX (1 / 4),
#   FIXED=1 (--spec-fixed: every draft found, no adaptive length), CORPUS=0 (prompt lookup only),
#   PROMPTS_FILE (one prompt a line, measured after the three below), STORY_PROMPTS=1 (also the first sentence of
#   each TinyStories validation story in tests/data), RECORD (1: with the default model, threads and settings, the
#   per-prompt table goes to docs/results/spec-decode.json and docs/BENCHMARKS.md; 0: print only)
# Last, for each mode, the spread over the prompts: each prompt's median speed-up, their geometric mean, the lowest.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:-$root/assets/models/stories260K/stories260K.gguf}
threads=${2:-}
thread_flags=(); [ -n "$threads" ] && thread_flags=(--threads "$threads")
P=${PAGODA:-$root/build/src/cli/pagoda}
k=${K:-4}
gen=${GEN:-256}
rounds=${ROUNDS:-15}
prompts=(
  "Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine."
  "One day, a little boy named Tim found a big red ball in the garden. He"
  "Lily and Ben went to the park. They"
)
if [ -n "${PROMPTS_FILE:-}" ]; then
  while IFS= read -r line; do [ -n "$line" ] && prompts+=("$line"); done <"$PROMPTS_FILE"
fi
if [ "${STORY_PROMPTS:-0}" = 1 ]; then
  while IFS= read -r line; do [ -n "$line" ] && prompts+=("$line"); done \
    < <(sed 's/\([.!?]\) .*/\1/' "$root/tests/data/tinystories-valid-sample.txt")
fi
echo "== speculative decoding (--spec ngram --spec-tokens $k, n-grams ${NGRAM_MIN:-1}..${NGRAM_MAX:-4}), greedy, $gen tokens, ${threads:-the default number of} threads, model $model"
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
echo "   CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load: $load_at_start"
corpus_flags=()
if [ "${CORPUS:-1}" != 0 ]; then
  corpus=$(mktemp /tmp/pagoda-spec-corpus.XXXXXX)
  trap 'rm -f "$corpus"' EXIT
  names=(Max Sara Tom Mia Jack Anna Sam Emma Lucy Pip Sue Bob Kate Joe Zoe Ben Amy Dan)
  things=("a big box" "a little bird" "a shiny key" "a red car" "a soft teddy" "a funny hat" "a blue ball"
          "a small boat" "a new book" "a big cake")
  places=("in the garden" "at the park" "in the forest" "by the lake" "at school" "in the kitchen" "on the beach"
          "in the yard")
  i=0
  for name in "${names[@]}"; do
    for j in 0 1 2 3 4; do
      thing=${things[i % 10]}; place=${places[(i * 3 + j) % 8]}
      case $((i % 4)) in
        0) p="Once upon a time, there was a kid named $name. $name found $thing $place." ;;
        1) p="One day, $name saw $thing $place. $name" ;;
        2) p="$name and mom went to the ${place#* the }. They" ;;
        *) p="$name was playing $place with $thing. Then" ;;
      esac
      "$P" run -q -m "$model" "${thread_flags[@]}" -p "$p" -n "$gen" --temp 0 --ignore-eos >>"$corpus"
      echo >>"$corpus"
      i=$((i + 1))
    done
  done
  echo "   corpus: the model's greedy stories for $i other prompts, $(wc -c <"$corpus") bytes"
  corpus_flags=(--spec-ngram-corpus "$corpus")
fi
mode_name=("prompt lookup alone" "prompt lookup and the corpus")
medians=("" "")
rows=""
for prompt in "${prompts[@]}"; do
  row=""
  echo "-- prompt: $prompt"
  for with_corpus in 0 1; do
    [ "$with_corpus" = 1 ] && [ ${#corpus_flags[@]} = 0 ] && continue
    flags=(); [ "$with_corpus" = 1 ] && flags=("${corpus_flags[@]}")
    echo "   ${mode_name[with_corpus]}:"
    out=$("$P" bench latency -m "$model" "${thread_flags[@]}" --prompt "$prompt" --gen "$gen" --spec ngram \
      --spec-tokens "$k" --spec-ngram-min "${NGRAM_MIN:-1}" --spec-ngram-max "${NGRAM_MAX:-4}" --rounds "$rounds" \
      ${FIXED:+--spec-fixed} "${flags[@]}") || { echo "$out"; exit 1; }  # e.g. the greedy tokens differ
    grep -v '^  round\|^           step cost' <<<"$out"
    median=$(sed -n 's/^decode speed-up with speculation: median \([0-9.]*\)x.*/\1/p' <<<"$out")
    medians[with_corpus]+=" $median"
    row+="${median}x | "
    if [ "$with_corpus" = 1 ]; then
      row+=$(sed -n 's/^acceptance rate \([0-9.]*\) %, \([0-9.]*\) tokens per decode step.*/\1 % | \2/p' <<<"$out")
    fi
  done
  short=$prompt; [ ${#short} -gt 48 ] && short="${short:0:45}..."
  rows+="$short | $row"$'\n'
done
echo "== over the ${#prompts[@]} prompts (each prompt's median speed-up)"
for with_corpus in 0 1; do
  [ -z "${medians[with_corpus]}" ] && continue
  awk -v name="${mode_name[with_corpus]}" '{ s = 0; lo = $1; for (i = 1; i <= NF; ++i) { s += log($i); if ($i < lo) lo = $i }
    printf "   %s: geometric mean %.2fx, lowest %.2fx; each:%s\n", name, exp(s / NF), lo, $0 }' <<<"${medians[with_corpus]}"
done
if [ "${RECORD:-1}" != 0 ] && [ -z "${1:-}" ] && [ -z "$threads" ] && [ "${CORPUS:-1}" != 0 ] && [ -z "${FIXED:-}" ] \
   && [ "$k" = 4 ] && [ "$gen" = 256 ] && [ "$rounds" = 15 ] && [ -z "${PROMPTS_FILE:-}" ]; then
  geo() { awk '{ s = 0; for (i = 1; i <= NF; ++i) s += log($i); printf "%.2fx", exp(s / NF) }' <<<"$1"; }
  command="scripts/bench/spec_decode.sh"; [ "${STORY_PROMPTS:-0}" = 1 ] && command="STORY_PROMPTS=1 $command"
  printf '%s**geometric mean of the prompts** | **%s** | **%s** | | \n' "$rows" "$(geo "${medians[0]}")" \
    "$(geo "${medians[1]}")" |
  python3 "$root/scripts/bench/results.py" record --id spec-decode --no-peer --command "$command" \
    --columns "prompt|lookup alone|with the corpus|acceptance (with the corpus)|tokens per verifying step" \
    --note "N-gram drafts on the bundled stories260K at its default of one thread, greedy, $gen tokens, up to $k drafts a step: each prompt's median speed-up of decode tokens/s over $rounds rounds, without and with speculation in one process; greedy tokens identical in every round. Load when it started: $load_at_start."
fi
