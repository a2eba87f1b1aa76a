#!/usr/bin/env python3
"""What prompt-lookup (n-gram) drafts could give on a text, computed rather than measured: the bundled model's
greedy continuation of each stories prompt (from `pagoda run`), re-tokenized, is replayed through the n-gram
drafter's rule (the last n tokens, n from 4 down to 1, looked up at their most recent earlier occurrence) under a
step-cost model where a step verifying k drafts costs 1 + c*k plain steps. Prints, per prompt, the speed-up
(tokens per unit of step cost) with 4 drafts every step, and with the best number of drafts (0-5) for each match length
chosen in hindsight (an upper bound for any policy that looks at the match length only); c = 0 is the bound with
free verification. A check of what the measured speed-ups (scripts/bench/spec_decode.sh) can reach, not a
benchmark.

Usage: scripts/bench/spec_ngram_bound.py [C ...]   (default: 0 0.15 0.35)
  env: PAGODA (the binary), GEN (tokens, default 256)
"""
import itertools
import os
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pagoda = os.environ.get("PAGODA", os.path.join(root, "build", "src", "cli", "pagoda"))
gen = os.environ.get("GEN", "256")
costs = [float(c) for c in sys.argv[1:]] or [0.0, 0.15, 0.35]
prompts = ["Once upon a time, there was a little girl named Lily. She loved to play outside in the sunshine.",
           "One day, a little boy named Tim found a big red ball in the garden. He",
           "Lily and Ben went to the park. They"]


def ids(text):
    out = subprocess.run([pagoda, "tokenize", text], capture_output=True, text=True, check=True).stdout
    return [int(x) for x in out.split()]


def propose(tokens, max_drafts=5):
    """The match length and drafts of the n-gram rule (min 1, max 4)."""
    num = len(tokens)
    for n in range(min(4, num - 1), 0, -1):
        suffix = tokens[num - n:]
        for start in range(num - n - 1, -1, -1):
            if tokens[start:start + n] == suffix:
                first = start + n
                return n, tokens[first:first + min(max_drafts, num - first)]
    return 0, []


def speedup(full, first, c, drafts_for):
    i, cost, made = first, 0.0, 0
    while i < len(full):
        n, d = propose(full[:i])
        k = min(drafts_for(n), len(d))
        accepted = 0
        while accepted < k and i + accepted < len(full) and d[accepted] == full[i + accepted]:
            accepted += 1
        cost += 1 + c * k
        i += accepted + 1
        made += accepted + 1
    return made / cost


for prompt in prompts:
    text = subprocess.run([pagoda, "run", "-q", "-p", prompt, "-n", gen, "--temp", "0", "--ignore-eos"],
                          capture_output=True, text=True, check=True).stdout.rstrip("\n")
    full, first = ids(text), len(ids(prompt))
    print(f"-- prompt: {prompt} ({len(full) - first} tokens)")
    for c in costs:
        fixed = speedup(full, first, c, lambda n: 4 if n else 0)
        best, ks = max((speedup(full, first, c, lambda n, ks=ks: ks[n - 1] if n else 0), ks)
                       for ks in itertools.product(range(6), repeat=4))
        print(f"   c = {c:.2f}: 4 drafts {fixed:.2f}x; best drafts per match length 1..4 {ks} in hindsight {best:.2f}x")
