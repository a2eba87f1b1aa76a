#!/usr/bin/env bash
# YaRN far past the original context against llama.cpp: gen-model's tiny-gpt-oss-yarn (gpt-oss-20b's rope and
# window at tiny widths: 64-wide heads, base 150000, YaRN 32x over an original context of 4096, a 128-position
# window on the even layers), one prompt of PROMPT token ids (default 8000, so most of it and every generated token
# sit past 4096) sent as ids to llama-server's /completion and to pagoda serve's (the same endpoint, n_probs 10,
# greedy, EOS ignored). Prints whether the generated ids agree and the largest difference of the top-10 log-probs
# the two give the same token at each generated position, beside llama.cpp's own spread (the same request with
# flash attention off: at thousands of positions its two paths differ by tenths of a nat on this random model);
# exits non-zero past max(TOL (default 0.01 nats), that spread), or at a differing id whose llama.cpp top two are
# further apart than that tolerance.
# Usage: scripts/check/yarn_long_context.sh    env: PAGODA, PEER, PROMPT, N (generated, default 32), TOL, OUT,
#        PEER_FLAGS / OUR_FLAGS (more llama-server / pagoda serve flags, e.g. "-ctk f32 -ctv f32"),
#        FORMAT (gguf, or hf: pagoda serves gen-model's HF folder and llama.cpp the GGUF pagoda converts it to)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
P=${PAGODA:-$root/build/src/cli/pagoda}
peer=${PEER:-$root/scripts/peer}
prompt=${PROMPT:-8000}
n=${N:-32}
tol=${TOL:-0.01}
format=${FORMAT:-gguf}
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
ctx=$((prompt + n + 64))
echo "pagoda: $P; llama.cpp: $peer; work folder: $out"
if [ "$format" = hf ]; then
  "$P" gen-model --shape tiny-gpt-oss-yarn --format hf -o "$out/model" --seed 7 2>/dev/null
  "$P" convert --from hf "$out/model" -o "$out/model.gguf" 2>/dev/null
  ours_model=$out/model
else
  "$P" gen-model --shape tiny-gpt-oss-yarn --format gguf --type f32 -o "$out/model.gguf" --seed 7 2>/dev/null
  ours_model=$out/model.gguf
fi
python3 - "$prompt" "$n" > "$out/request.json" <<'PY'
import json, sys
prompt, n = int(sys.argv[1]), int(sys.argv[2])
ids = [3 + (i * 7919 + 13) % 509 for i in range(prompt)]  # past the placeholder vocabulary's 3 special tokens
print(json.dumps({"prompt": ids, "n_predict": n, "n_probs": 10, "temperature": 0, "ignore_eos": True}))
PY
port_peer=$((20000 + RANDOM % 10000)) port_ours=$((30000 + RANDOM % 10000)) port_nofa=$((40000 + RANDOM % 10000))
"$peer/llama.sh" server -m "$out/model.gguf" --port $port_peer -c $ctx -t 2 -np 1 ${PEER_FLAGS:-} >"$out/peer.log" 2>&1 &
peer_pid=$!
# llama.cpp again without flash attention: how far its own two attention paths are apart at this length.
"$peer/llama.sh" server -m "$out/model.gguf" --port $port_nofa -c $ctx -t 2 -np 1 -fa off ${PEER_FLAGS:-} \
  >"$out/peer-nofa.log" 2>&1 &
nofa_pid=$!
"$P" serve -m "$ours_model" --port $port_ours -c $ctx -t 2 ${OUR_FLAGS:-} >"$out/ours.log" 2>&1 &
ours_pid=$!
trap 'kill $peer_pid $nofa_pid $ours_pid 2>/dev/null || true' EXIT
for port in $port_peer $port_nofa $port_ours; do
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
    sleep 1
  done
done
curl -sf "http://127.0.0.1:$port_peer/completion" -H 'Content-Type: application/json' -d @"$out/request.json" \
  >"$out/peer.json"
curl -sf "http://127.0.0.1:$port_nofa/completion" -H 'Content-Type: application/json' -d @"$out/request.json" \
  >"$out/peer-nofa.json"
curl -sf "http://127.0.0.1:$port_ours/completion" -H 'Content-Type: application/json' -d @"$out/request.json" \
  >"$out/ours.json"
python3 - "$out/peer.json" "$out/ours.json" "$tol" "$prompt" "$out/peer-nofa.json" <<'PY'
import json, sys
theirs, ours, nofa = (json.load(open(p))["completion_probabilities"] for p in (sys.argv[1], sys.argv[2], sys.argv[5]))
tol, prompt = float(sys.argv[3]), int(sys.argv[4])
def top(step):
    return {t["id"]: t["logprob"] for t in step["top_logprobs"]}
worst, where, same = 0.0, None, 0
for k, (a, b) in enumerate(zip(theirs, ours)):
    ta, tb = top(a), top(b)
    for i in set(ta) & set(tb):
        d = abs(ta[i] - tb[i])
        if d > worst:
            worst, where = d, (k, i)
    if a["id"] != b["id"]:
        gap = sorted(ta.values())[-1] - sorted(ta.values())[-2]
        print(f"generated ids part at step {k} (position {prompt + k}): llama.cpp {a['id']}, pagoda {b['id']}; "
              f"llama.cpp's top two {gap:.4g} nats apart")
        break
    same += 1
# llama.cpp's own spread: its two attention paths at the first generated position (the same context in both).
spread = max(abs(top(theirs[0])[i] - top(nofa[0])[i]) for i in set(top(theirs[0])) & set(top(nofa[0])))
print(f"llama.cpp with and without flash attention: top-10 log-probs up to {spread:.3g} nats apart at position {prompt}")
tol = max(tol, spread)
print(f"{same}/{min(len(theirs), len(ours))} generated ids equal at positions {prompt}..{prompt + len(ours) - 1}; "
      f"largest top-10 log-prob difference {worst:.3g} nats" + (f" (step {where[0]}, token {where[1]})" if where else ""))
ok = worst <= tol and (same == len(theirs) or gap <= tol)
print("OK" if ok else f"OVER (tolerance {tol})")
sys.exit(0 if ok else 1)
PY
