#!/usr/bin/env bash
# What each `pagoda quantize` type costs the bundled model: its size, its perplexity and its mean KL divergence and
# top-1 agreement against the f32 model, over the TinyStories sample at ctx 128. Deterministic: the same figures on
# any machine. The table is recorded in docs/results/quant-quality.json and written into docs/BENCHMARKS.md
# (scripts/bench/results.py) unless RECORD=0.
# Usage: scripts/bench/quant_quality.sh [TYPE...]   (default: Q8_0 Q6_K Q5_K_M Q4_K_M Q4_0 int8 awq-int4:32 awq-int4)
#   TYPE is a `pagoda quantize --type` value, with `:G` for an AWQ group size.
#   env: PAGODA (binary), TEXT (default tests/data/tinystories-valid-sample.txt), CTX (default 128)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
P=${PAGODA:-$root/build/src/cli/pagoda}
model=$root/assets/models/stories260K/stories260K.gguf
text=${TEXT:-$root/tests/data/tinystories-valid-sample.txt}
ctx=${CTX:-128}
types=("$@")
[ ${#types[@]} -gt 0 ] || types=(Q8_0 Q6_K Q5_K_M Q4_K_M Q4_0 int8 awq-int4:32 awq-int4)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

measure() {  # FILE LABEL SIZE: prints one table row
  "$P" perplexity -m "$1" -f "$text" --ctx "$ctx" --kl-base bundled --threads 1 --json 2>/dev/null |
    python3 -c 'import json, sys
j = json.load(sys.stdin); k = j["kl"]
print("%s|%s|%.4f|%.4f|%.1f %%" % (sys.argv[1], sys.argv[2], j["ppl"], k["mean_kl"], 100 * k["top1_agreement"]))' "$2" "$3"
}
mib() { awk -v b="$(stat -c %s "$1")" 'BEGIN { printf "%.2f MiB", b / 1048576 }'; }

rows=$(measure "$model" "f32 (as shipped)" "$(mib "$model")")$'\n'
for spec in "${types[@]}"; do
  type=${spec%%:*}
  flags=(--type "$type")
  label=$type
  if [[ $spec == *:* ]]; then flags+=(--group "${spec#*:}"); label="$type g${spec#*:}"; fi
  file=$out/$type-${spec#*:}.gguf
  "$P" quantize "$model" "$file" "${flags[@]}" >/dev/null 2>"$out/quantize.err" ||
    { echo "pagoda quantize --type $spec failed:" >&2; cat "$out/quantize.err" >&2; exit 1; }
  rows+=$(measure "$file" "$label" "$(mib "$file")")$'\n'
done
printf '%s' "$rows" | column -t -s '|'
if [ "${RECORD:-1}" != 0 ]; then
  command="$(for v in CTX; do if [ -n "${!v:-}" ]; then printf '%s=%s ' "$v" "${!v}"; fi; done)scripts/bench/quant_quality.sh${1:+ $*}"
  python3 "$root/scripts/bench/results.py" record --id quant-quality --no-peer --command "$command" \
    --columns "file|size|PPL|mean KL (nats)|same top-1" \
    --note "The bundled model quantized by \`pagoda quantize --type T\`, perplexity over $(basename "$text") at ctx $ctx with KL against the f32 model (\`pagoda perplexity --kl-base bundled\`); deterministic." <<<"$rows"
fi
