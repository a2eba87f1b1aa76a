#!/usr/bin/env bash
# The engine's benchmark figures on one model, each comparison inside this one script (the machine is shared
# and noisy, so only ratios measured side by side mean much):
#   1. batched decode: pagoda bench batched vs llama.cpp's llama-batched-bench (S_TG per batch size, ratios)
#   2. continuous vs static batching on outputs of 10-256 tokens, uniform and log-uniform, after prompts of 32-128
#      and 8-32 tokens (output tokens/s ratio, with static's padding bound; static-shrink too)
#   3. chunked prefill: stream inter-token latency while a 1,024-token prompt arrives (p99 during its prefill
#      over the undisturbed p50, and the overall p99/p50), with and without chunking, and chunked with
#      --max-prefill-with-decodes PREFILL_CAP (default 0: chunks as large as the step budget)
#   4. prefix cache: TTFT of a request sharing a 1,024-token prefix vs the first one's
#   5. KV concurrency (with KV_MODEL, a model of context >= 2048: e.g. gen-model --shape tinyllama-1.1b
#      --layers 1): peak running sequences at one KV budget, paged vs contiguous (and INT8 KV), wasted slots
# Usage: scripts/bench/engine_figures.sh MODEL.gguf [THREADS]
#   env: PAGODA, PEER, KV_MODEL, KV_GIB, ONLY (ONLY=1,3 runs only those sections), RESULTS_ID (section 1's table goes
#   to docs/results/RESULTS_ID.json and its block in docs/BENCHMARKS.md), RECORD (1: sections 2 and 3 go
#   to docs/results/continuous-batching.json and chunked-prefill.json and docs/BENCHMARKS.md; 0: print only;
#   the page's model is `pagoda gen-model --shape tinyllama-1.1b --type q4_0 -o tinyllama-q4_0.gguf`), LLAMA_BIN (a directory with
#   llama-batched-bench; default: the peer's llama.sh build). On a VM whose CPU advertises AMX it cannot run,
#   llama.sh's GGML_NATIVE build dies on quantized models: build llama.cpp with -DGGML_NATIVE=OFF -DGGML_AVX2=ON
#   -DGGML_FMA=ON -DGGML_F16C=ON and point LLAMA_BIN at its bin/.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:?usage: engine_figures.sh MODEL.gguf [THREADS]}
threads=${2:-2}
P=${PAGODA:-$root/build/src/cli/pagoda}
peer=${PEER:-$root/scripts/peer}
only=${ONLY:-1,2,3,4,5}
want() { [[ ",$only," == *",$1,"* ]]; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
load_at_start=$(cut -d' ' -f1-3 /proc/loadavg)
record() {  # ID COLUMNS NOTE, rows on stdin
  if [ "${RECORD:-1}" != 0 ] && [ "$threads" = 2 ] && [ -z "${MAX_BATCHED_TOKENS:-}" ] && [ -z "${PREFILL_CAP:-}" ]; then
    python3 "$root/scripts/bench/results.py" record --id "$1" --no-peer --columns "$2" \
      --command "ONLY=${only} scripts/bench/engine_figures.sh $(basename "$model")" \
      --note "$3 Model $(basename "$model"), $threads threads; load at the script's start $load_at_start."
  else
    cat >/dev/null
  fi
}

if want 1; then
  echo "== 1. batched decode, -npp 128 -ntg 64, $threads threads"
  ours=$("$P" bench batched -m "$model" --threads "$threads" --npp 128 --ntg 64 --npl 1,4,8,16 --json 2>/dev/null)
  if [ -n "${LLAMA_BIN:-}" ]; then batched=("$LLAMA_BIN/llama-batched-bench"); else batched=("$peer/llama.sh" batched-bench); fi
  theirs=$("${batched[@]}" -m "$model" -t "$threads" -c 4096 -npp 128 -ntg 64 -npl 1,4,8,16 2>/dev/null |
           awk -F'|' '$2 ~ /^ *[0-9]+ *$/ { gsub(/ /, "", $4); gsub(/ /, "", $9); print $4, $9 }')
  echo "   B   pagoda S_TG   llama.cpp S_TG   ratio"
  one=""
  batched_rows=""
  for b in 1 4 8 16; do
    s=$(jq -r --argjson b "$b" '.rows[] | select(.b == $b) | .s_tg' <<<"$ours")
    l=$(awk -v b="$b" '$1 == b { print $2 }' <<<"$theirs")
    [ "$b" = 1 ] && one=$s
    printf "%4d %13.2f %16s %7s\n" "$b" "$s" "${l:-n/a}" "$(ratio "$s" "${l:-0}")"
    batched_rows+="$b|$(printf %.1f "$s")|${l:-n/a}|**$(ratio "$s" "${l:-0}")**"$'\n'
    [ "$b" = 16 ] && echo "   pagoda S_TG(16) / S_TG(1) = $(ratio "$s" "$one")"
  done
  # With RESULTS_ID the table is recorded against the peer (the page's other tables are sections 2 and 3's).
  if [ -n "${RESULTS_ID:-}" ] && [ "${RECORD:-1}" != 0 ]; then
    python3 "$root/scripts/bench/results.py" record --id "$RESULTS_ID" --columns "sequences|pagoda S_TG|llama.cpp S_TG|ratio" \
      --note "Model $(basename "$model"), $threads threads, -npp 128 -ntg 64, tokens/s; load at the script's start $load_at_start." \
      --command "RESULTS_ID=$RESULTS_ID ONLY=1 scripts/bench/engine_figures.sh $(basename "$model")" <<<"$batched_rows"
  fi
fi

if want 2; then
  # The padding bound is static's rows over its useful rows, (outputs + padding) / outputs: the ratio continuous
  # batching would reach if a step cost its rows and prompts cost nothing. For uniform 10-256 outputs in batches
  # of 16 it is about E[max of 16] / E[mean] = 241 / 133 = 1.8; skewed mixes go higher.
  compare() {  # INPUT_LEN OUTPUT_LEN LABEL
    local args=(bench offline -m "$model" --threads "$threads" --num-prompts 32 --input-len "$1" --output-len "$2"
                --batch-size 16 --json)
    local c s sj r
    c=$("$P" "${args[@]}" --batching continuous 2>/dev/null | jq -r .output_tok_s)
    sj=$("$P" "${args[@]}" --batching static 2>/dev/null)
    s=$(jq -r .output_tok_s <<<"$sj")
    local bound
    bound=$(jq -r '(.num_output_tokens + .num_padding_tokens) / .num_output_tokens * 100 | round / 100' <<<"$sj")
    echo "   $3: continuous $c, static $s output tok/s, ratio $(ratio "$c" "$s") (padding bound $bound)"
    r=""
    if [ "${4:-}" = shrink ]; then
      r=$("$P" "${args[@]}" --batching static-shrink 2>/dev/null | jq -r .output_tok_s)
      echo "      static-shrink (members that end leave the step) $r, continuous / static-shrink $(ratio "$c" "$r")"
    fi
    batching_rows+="$3 | $c | $s | $(ratio "$c" "$s") | $bound | ${r:+$(ratio "$c" "$r")}"$'\n'
  }
  batching_rows=""
  echo "== 2. continuous vs static batching: 32 requests, outputs 10-256, batch 16"
  compare 32-128 10-256 "prompts 32-128, outputs uniform" shrink
  # The same lengths drawn log-uniformly (mostly short replies, a long tail: the shape of chat traffic).
  compare 32-128 log:10-256 "prompts 32-128, outputs log-uniform"
  # Short prompts (a story's opening line): the prompt work, the same in both modes, no longer hides the outputs.
  compare 8-32 10-256 "prompts 8-32, outputs uniform"
  compare 8-32 log:10-256 "prompts 8-32, outputs log-uniform"
  printf '%s' "$batching_rows" | record continuous-batching \
    "workload|continuous out tok/s|static out tok/s|continuous / static|padding bound (computed)|continuous / static-shrink" \
    "32 requests in batches of 16: continuous batching against static (fixed-shape batches whose ended members pad until the longest ends, as HF generate runs them) and static-shrink (ended members leave the step); the padding bound is static's rows over its useful rows, computed from the run."
fi

if want 3; then
  echo "== 3. chunked prefill: 8 streams decode while a 1,024-token prompt arrives"
  j=$("$P" bench interference -m "$model" --threads "$threads" --streams 8 --long-prompt 1024 --json \
        ${MAX_BATCHED_TOKENS:+--max-batched-tokens $MAX_BATCHED_TOKENS} 2>/dev/null)
  line='"stream ITL p50 \(.itl_ms.p50) ms, p99 \(.itl_ms.p99) ms, p99/p50 \(.itl_p99_over_p50); during the prefill p99 \(.during_prefill_itl_ms.p99) ms, max \(.during_prefill_itl_ms.max) ms, over the undisturbed p50 \(.undisturbed_itl_ms.p50) ms: \(.during_p99_over_undisturbed_p50)x; long TTFT \(.long_ttft_ms) ms"'
  row='"\(.itl_ms.p50 * 10 | round / 10) ms | \(.itl_ms.p99 * 10 | round / 10) ms | \(.during_p99_over_undisturbed_p50 * 100 | round / 100)x | \(.long_ttft_ms / 100 | round / 10) s"'
  interference_rows=""
  for mode in chunked unchunked; do
    jq -r --arg m "$mode" ".[\$m] | \"   \(\$m): \" + $line" <<<"$j"
    label="chunked, automatic budget (the default)"; [ "$mode" = unchunked ] && label="not chunked"
    interference_rows+="$label | $(jq -r --arg m "$mode" ".[\$m] | $row" <<<"$j")"$'\n'
  done
  # The default paces prompt tokens by the decodes (--max-prefill-with-decodes auto); the budget alone:
  cap=${PREFILL_CAP:-0}
  j=$("$P" bench interference -m "$model" --threads "$threads" --streams 8 --long-prompt 1024 --json \
        --max-prefill-with-decodes "$cap" ${MAX_BATCHED_TOKENS:+--max-batched-tokens $MAX_BATCHED_TOKENS} 2>/dev/null)
  jq -r ".chunked | \"   chunked, --max-prefill-with-decodes $cap: \" + $line" <<<"$j"
  interference_rows+="chunked, \`--max-prefill-with-decodes $cap\` | $(jq -r ".chunked | $row" <<<"$j")"$'\n'
  printf '%s' "$interference_rows" | record chunked-prefill \
    "prefill|stream ITL p50|ITL p99|p99 during its prefill / undisturbed p50|the long prompt's TTFT" \
    "8 streams decode while a 1,024-token prompt arrives (pagoda bench interference)."
fi

if want 4; then
  echo "== 4. prefix cache: a 1,024-token shared prefix + 16 own tokens"
  "$P" bench prefix -m "$model" --threads "$threads" --prefix-len 1024 --suffix-len 16 --rounds 2 --json 2>/dev/null |
    jq -r '"   first TTFT \(.first_ttft_ms) ms, second TTFT \(.second_ttft_ms) ms (\(.second_cached_tokens) cached), ratio \(.ttft_ratio)"'
fi

if want 5 && [ -n "${KV_MODEL:-}" ]; then
  gib=${KV_GIB:-0.5}
  echo "== 5. KV concurrency at --kv-memory $gib GiB, max_seq_len 2048, prompts 64-512, outputs 16-256"
  args=(bench offline -m "$KV_MODEL" --threads "$threads" --max-seq-len 2048 --kv-memory "$gib" --num-prompts 96
        --input-len 64-512 --output-len 16-256 --batch-size 256 --max-batched-tokens 512 --json)
  declare -A peak
  for layout in contiguous paged paged-int8; do
    extra=(--kv-layout "${layout%-int8}")
    [ "$layout" = paged-int8 ] && extra+=(--kv-cache-dtype int8)
    if j=$("$P" "${args[@]}" "${extra[@]}" 2>/dev/null); then
      key=${layout//-/_}
      peak[$key]=$(jq -r .peak_running <<<"$j")
      echo "   $layout: peak running ${peak[$key]}, wasted slots $(jq -r '.mean_wasted_slot_fraction * 100' <<<"$j")%, preemptions $(jq -r .num_preemptions <<<"$j")"
    else
      echo "   $layout: not available"
    fi
  done
  echo "   paged / contiguous = $(ratio "${peak[paged]:-0}" "${peak[contiguous]:-0}"), paged-int8 / contiguous = $(ratio "${peak[paged_int8]:-0}" "${peak[contiguous]:-0}")"
fi
