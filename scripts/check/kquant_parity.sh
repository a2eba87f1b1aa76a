#!/usr/bin/env bash
# llama.cpp's quantized file types in pagoda against llama.cpp itself (opt-in: needs the peer tools). For each file
# type, llama-quantize turns one f16 GGUF (gen-model's) into that type; then
# - perplexity over a text: pagoda perplexity vs llama-perplexity, same file, same --ctx (the issue's bar: 0.1%),
#   in the configuration where llama.cpp's arithmetic is the most exact: flash attention off and an f32 KV cache on
#   both sides (`-fa off -ctk f32 -ctv f32`, pagoda `--kv-cache-dtype f32`). With flash attention on (its default on
#   CPU) llama.cpp casts K and V to f16, rounds Q to f16 and sums softmax(QK)·V in f16; on a Q8_0 file that alone
#   moves its perplexity by 0.15 % against its own FA-off figure. pagoda also reads llama-perplexity's saved
#   distributions (--kl-base-logits), so each row gives the paired ln(PPL ratio) with its standard error and the
#   mean KL: a quantized file's activations are requantized before every matmul, so any float rounding difference
#   turns into rounding noise (llama.cpp's FA on against its FA off: mean KL 2e-4 on Q8_0), and a difference within
#   two standard errors is that noise, not a bias. The error is taken over the chunks' means (each chunk starts
#   afresh; a chunk's tokens share its context, so their differences are correlated and a per-token error reads
#   too small); the default text, tests/data/parity-text.txt, is long enough for that error to resolve the bar;
# - greedy tokens: pagoda's argmax of each step's logits vs generate.sh's ids, the first index where they part and
#   pagoda's margin there (random weights leave near-ties, so a parting is reported, not failed).
# pagoda converts types it has no kernel for at load (model/tensor_set.h), which its stderr line "weights: ..." says.
# Prints one line per type and check; exits non-zero if a perplexity is off by more than 0.1% or a file fails to load.
# The table is recorded in docs/results/kquant-parity.json and written into docs/BENCHMARKS.md (scripts/bench/results.py)
# unless RECORD=0 (RESULTS_ID names another block: a re-check of some types on another text beside the full table).
# Usage: scripts/check/kquant_parity.sh F16.gguf [FTYPE...]   (default: Q4_K_M Q6_K Q5_K_M Q4_0)
#   env: PAGODA (binary), PEER (the peer tools folder), TEXT (default tests/data/parity-text.txt), CTX (default 256),
#        N (greedy tokens, default 32), OUT (work folder, default a fresh temp folder), VOCAB (default: the logits file's row size),
#        IMATRIX (an imatrix GGUF from `llama.sh imatrix`, passed to llama-quantize: the i-quants below 4 bits need one),
#        PEER_ONLY=1 (run llama.cpp's side alone: a later run with the same OUT, text, ctx and N reuses its quantized
#        files, perplexities, saved distributions and greedy ids, which depend on nothing of pagoda's)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
P=${PAGODA:-$root/build/src/cli/pagoda}
peer=${PEER:-$root/scripts/peer}
text=${TEXT:-$root/tests/data/parity-text.txt}
ctx=${CTX:-256}
n=${N:-32}
out=${OUT:-$(mktemp -d)}
f16=${1:?usage: kquant_parity.sh F16.gguf [FTYPE...]}
shift
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Q4_K_M Q6_K Q5_K_M Q4_0)
failed=0
rows=""
echo "pagoda: $P; llama.cpp: $peer; work folder: $out; text: $text; ctx $ctx"
for t in "${types[@]}"; do
  q=$out/$(basename "$f16" .gguf)-$t.gguf
  [ -s "$q" ] || "$peer/llama.sh" quantize ${IMATRIX:+--imatrix "$IMATRIX"} "$f16" "$q" "$t" >"$out/$t.quantize.log" 2>&1
  # llama.cpp's side of this file, text and ctx, kept for a later run.
  base=$out/$t.$(cat "$text" | sha1sum | cut -c1-12).c$ctx
  theirs=$(cat "$base.llama.ppl" 2>/dev/null || true)
  [ -s "$base.llama.logits" ] || theirs=
  # Under a terminal (script): with its output on pipes, llama-perplexity's last lines never arrive.
  for try in 1 2 3; do
    [ -n "$theirs" ] && break
    theirs=$(script -qec "'$peer/llama.sh' perplexity -m '$q' -f '$text' -c $ctx -t 2 -fa off -ctk f32 -ctv f32 \
      --kl-divergence-base '$base.llama.logits'" /dev/null 2>&1 | sed -n 's/.*Final estimate: PPL = \([0-9.]*\).*/\1/p')
    [ -n "$theirs" ] && echo "$theirs" >"$base.llama.ppl"
  done
  peer_json=$out/$t.n$n.peer.json
  [ -s "$peer_json" ] || "$peer/generate.sh" "$q" "hello world" $n 2>&1 >/dev/null | tail -n 1 >"$peer_json" || true
  if [ "${PEER_ONLY:-0}" = 1 ]; then
    echo "$t llama.cpp: perplexity ${theirs:-n/a}, greedy ids in $peer_json"
    continue
  fi
  pj=$("$P" perplexity -m "$q" -f "$text" --ctx $ctx --threads 2 --kv-cache-dtype f32 --json \
    ${theirs:+--kl-base-logits "$base.llama.logits"} 2>"$out/$t.pagoda.err" || true)
  ours=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["ppl"])' "$pj" 2>/dev/null || true)
  paired=$(python3 -c 'import json, sys; j = json.loads(sys.argv[1]); k = j["kl"]
error = "± %.3f %%" % (k["ln_ppl_ratio_chunk_error"] * 100) if j["chunks"] > 1 else "(one chunk: no error)"
print("%+.3f %s|%.2e" % (k["ln_ppl_ratio"] * 100, error, k["mean_kl"]))' "$pj" \
    2>/dev/null || echo "n/a|n/a")
  note=$(sed -n 's/^pagoda: weights: //p' "$out/$t.pagoda.err" | head -1)
  line=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { if (a == "" || b == "") { print "n/a FAILED"; exit }
    d = (a / b - 1) * 100; if (d < 0) d = -d; printf "%.4f%% %s", d, (d <= 0.1 ? "OK" : "OVER 0.1%") }')
  echo "$t perplexity (ctx $ctx): pagoda $ours, llama.cpp $theirs, difference $line; paired ln ratio and mean KL: ${paired/|/, }"
  echo "$t pagoda weights: ${note:-as stored}"
  diff_pct=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { if (a == "" || b == "") print "n/a"; else printf "%+.3f %%", (a / b - 1) * 100 }')
  [[ $line == *OK ]] || failed=1
  # Greedy tokens.
  "$P" run -m "$q" -p "hello world" -n $n --temp 0 --ignore-eos --threads 2 -q --logits-out "$out/$t.logits" \
    >/dev/null 2>&1 || true
  greedy=$(python3 - "$out/$t.logits" "$peer_json" "$n" "${VOCAB:-0}" <<'PY' || true
import json, struct, sys
data = open(sys.argv[1], 'rb').read()
n, vocab = int(sys.argv[3]), int(sys.argv[4])
vocab = vocab or len(data) // 4 // n  # one row per generated token
v = struct.unpack(f'{len(data) // 4}f', data)
ours = [max(range(vocab), key=lambda i: v[r * vocab + i]) for r in range(len(v) // vocab)]
theirs = json.loads(open(sys.argv[2]).read())['generated_ids']
first = next((i for i in range(n) if i >= len(ours) or i >= len(theirs) or ours[i] != theirs[i]), None)
if first is None:
    print(f"greedy: the same {n}/{n} tokens")
elif first < len(ours) and first < len(theirs):
    row = v[first * vocab:(first + 1) * vocab]
    print(f"greedy: the same {first}/{n} tokens, then pagoda {ours[first]} vs llama.cpp {theirs[first]}; pagoda's "
          f"margin of one over the other there: {row[ours[first]] - row[theirs[first]]:.4g} (row max {max(map(abs, row)):.4g})")
else:
    print(f"greedy: {len(ours)} pagoda and {len(theirs)} llama.cpp tokens")
PY
)
  echo "$t $greedy"
  same=$(sed -n 's/^greedy: the same \([0-9]*\/[0-9]*\) tokens.*/\1/p' <<<"$greedy")
  margin=$(sed -n "s/.*margin of one over the other there: \([^ ]*\) (row max \([^)]*\)).*/\1 (row max \2)/p" <<<"$greedy")
  rows+="$t|${note:-as stored}|$ours|$theirs|$diff_pct|$paired|${same:-?}|${margin:-none}"$'\n'
done
if [ "${RECORD:-1}" != 0 ] && [ -n "$rows" ]; then
  command="$(for v in TEXT CTX N IMATRIX RESULTS_ID; do if [ -n "${!v:-}" ]; then printf '%s=%s ' "$v" "${!v}"; fi; done)scripts/check/kquant_parity.sh $f16 ${types[*]}"
  python3 "$root/scripts/bench/results.py" record --id "${RESULTS_ID:-kquant-parity}" --command "$command" \
    --columns "file|pagoda runs it as|pagoda PPL|llama.cpp PPL|difference|paired ln(PPL ratio)|mean KL (nats)|same greedy tokens|pagoda's margin at the parting" \
    --note "llama-quantize's output of the f16 file, perplexity on $(basename "$text") at ctx $ctx with flash attention off and f32 KV on both sides (llama.cpp's most exact arithmetic), the paired ln(PPL ratio) (± one standard error over the $(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["chunks"])' "$pj" 2>/dev/null || echo ?) chunks) and KL against llama-perplexity's saved distributions, greedy tokens after \"hello world\"." <<<"$rows"
fi
exit $failed
