#!/usr/bin/env bash
# What splitting a model over MPI ranks costs on this machine, all in one script (the machine is shared and
# noisy, so only figures measured side by side mean much):
#   1. one stream's decode (pagoda run, greedy): one process with 2 threads and with 1, tensor parallel 2 and
#      pipeline parallel 2 (1 thread per rank: the two ranks take the two cores)
#   2. throughput (pagoda bench offline, REQUESTS requests at once): the same four
# Each split run prints rank 0's time in communication calls (waits for the other rank included), the bytes it
# moved, and both per engine step. A 2-core machine cannot show a speed-up from splitting: the point is the cost.
# Usage: scripts/bench/parallel_figures.sh MODEL.gguf [TOKENS]
#   env: PAGODA, REQUESTS (16), INPUT_LEN (64), OUTPUT_LEN (32), RECORD (1: with the default settings both parts
#   go to docs/results/parallel.json and docs/BENCHMARKS.md; 0: print only; the page's model is
#   `pagoda gen-model --shape tinyllama-1.1b --type q4_0 -o tinyllama-q4_0.gguf`)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?usage: parallel_figures.sh MODEL.gguf [TOKENS]}
tokens=${2:-64}
P=${PAGODA:-$root/build/src/cli/pagoda}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi=(mpirun -np 2 --oversubscribe)
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
declare -A stream_tps stream_comm

layouts=("1 process, 2 threads|--threads 2" "1 process, 1 thread|--threads 1" "tp 2 (2 ranks x 1 thread)|--tp 2 --threads 1"
         "pp 2 (2 ranks x 1 thread)|--pp 2 --threads 1")
launch() {  # launch FLAGS ARGS...: under mpirun when FLAGS split the model
  local flags=$1; shift
  if [[ "$flags" == *--tp* || "$flags" == *--pp* ]]; then "${mpi[@]}" "$P" "$@" $flags; else "$P" "$@" $flags; fi
}

echo "== 1. one stream: $tokens tokens after a short prompt ($model)"
printf "   %-28s %10s   %s\n" layout "decode t/s" "communication (rank 0)"
for l in "${layouts[@]}"; do
  name=${l%%|*}; flags=${l#*|}
  err=$(launch "$flags" run -m "$model" -p "Once upon a time" -n "$tokens" --temp 0 --ignore-eos 2>&1 >/dev/null)
  tps=$(sed -n 's/^decode: \([0-9.]*\) tokens\/s.*/\1/p' <<<"$err")
  comm=$(grep -o 'in communication.*' <<<"$err" | sed 's/in communication, //' || true)
  pct=$(grep -o '([0-9.]*%) in communication' <<<"$err" | grep -o '[0-9.]*%' || true)
  printf "   %-28s %10s   %s\n" "$name" "$tps" "${comm:+$pct of the run, $comm}"
  stream_tps[$name]=$tps; stream_comm[$name]=${comm:+$pct: $comm}
done

n=${REQUESTS:-16}
rows=""
echo "== 2. throughput: $n requests at once, ${INPUT_LEN:-64} prompt + ${OUTPUT_LEN:-32} output tokens each"
printf "   %-28s %10s %10s   %s\n" layout "out t/s" "total t/s" "communication (rank 0)"
for l in "${layouts[@]}"; do
  name=${l%%|*}; flags=${l#*|}
  out=$(launch "$flags" bench offline -m "$model" --num-prompts "$n" --input-len "${INPUT_LEN:-64}" \
        --output-len "${OUTPUT_LEN:-32}" --json 2>/tmp/parallel_figures.err)
  comm=$(grep -o 'in communication.*' /tmp/parallel_figures.err | sed 's/in communication, //' || true)
  pct=$(grep -o '([0-9.]*%) in communication' /tmp/parallel_figures.err | grep -o '[0-9.]*%' || true)
  printf "   %-28s %10.2f %10.2f   %s\n" "$name" "$(jq -r .output_tok_s <<<"$out")" "$(jq -r .total_tok_s <<<"$out")" \
    "${comm:+$pct of the run, $comm}"
  rows+="$name | ${stream_tps[$name]} | $(jq -r '.output_tok_s * 10 | round / 10' <<<"$out") | ${stream_comm[$name]} | ${comm:+$pct: $comm}"$'\n'
done
if [ "${RECORD:-1}" != 0 ] && [ "$tokens" = 64 ] && [ "$n" = 16 ] && [ -z "${INPUT_LEN:-}${OUTPUT_LEN:-}" ]; then
  printf '%s' "$rows" | python3 "$root/scripts/bench/results.py" record --id parallel --no-peer \
    --command "scripts/bench/parallel_figures.sh $(basename "$model")" \
    --columns "run|one stream, decode tok/s|16 requests (64 in / 32 out), out tok/s|rank 0 in communication, one stream|rank 0 in communication, 16 requests" \
    --note "One machine split over 2 MPI ranks (shared-memory Open MPI); a 2-core machine cannot show a speed-up, the point is the cost. Model $(basename "$model"); load at start $load_at_start."
fi
