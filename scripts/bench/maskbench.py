#!/usr/bin/env python3
"""MaskBench through pagoda's grammar engine, recorded for the results page: every EVERY-th file (in byte order of
the names) of guidance-ai/jsonschemabench's `maskbench/data` goes through `pagoda bench structured --maskbench` on
llama.cpp's Llama 3 vocabulary (128,256 tokens, the peer tree's ggml-vocab-llama-bpe.gguf), and the totals and each
category's counts and times become docs/results/maskbench.json and its table in docs/BENCHMARKS.md
(scripts/bench/results.py) unless RECORD=0. A benchmark (it prints figures), not a test. The data is fetched, not
committed: `git clone https://github.com/guidance-ai/jsonschemabench` and pass its `maskbench/data`.

  python3 scripts/bench/maskbench.py DATA_DIR [--every 10] [--binary build/src/cli/pagoda] [--vocab GGUF]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PEER = Path(os.environ.get("PEER_DIR", Path.home() / ".cache" / "pagoda-peer"))


def pct(part, whole, digits=1):
    return f"{100.0 * part / whole:.{digits}f} %" if whole else "-"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("--every", type=int, default=10)
    parser.add_argument("--binary", default=str(ROOT / "build" / "src" / "cli" / "pagoda"))
    parser.add_argument("--vocab", default=str(PEER / "llama.cpp" / "models" / "ggml-vocab-llama-bpe.gguf"))
    args = parser.parse_args()
    files = sorted(p for p in args.data.iterdir() if p.suffix == ".json")
    if not files:
        sys.exit(f"maskbench.py: no .json files in {args.data}")
    if not Path(args.vocab).exists():
        sys.exit(f"maskbench.py: no vocabulary at {args.vocab} (build the peer: scripts/peer/llama.sh --isa)")
    chosen = files[:: args.every]
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    with tempfile.TemporaryDirectory(prefix="pagoda-maskbench-") as tmp:
        for f in chosen:
            os.symlink(f.resolve(), Path(tmp) / f.name)
        started = time.monotonic()
        out = subprocess.run([args.binary, "bench", "structured", "--maskbench", tmp, "--vocab", args.vocab, "--json"],
                             capture_output=True, text=True)
        seconds = time.monotonic() - started
    if out.returncode != 0:
        sys.exit(f"maskbench.py: pagoda bench structured failed ({out.returncode}):\n{out.stderr[-4000:]}")
    report = json.loads(out.stdout)
    total = report["total"]
    print(f"{len(chosen)} of {len(files)} files, {seconds:.0f} s, load at start {load}")
    print(json.dumps(total, indent=1))

    def row(name, t):
        return " | ".join([
            name, f"{t['passing']} / {t['schemas']} ({pct(t['passing'], t['schemas'])})", str(t["compile_errors"]),
            f"{t['validation_errors']} ({pct(t['validation_errors'], t['tests'], 2)})", str(t["invalidation_errors"]),
            str(t["timeouts"]), f"{t['ttfm_us']['p50'] / 1000:.1f} / {t['ttfm_us']['p99'] / 1000:.1f}",
            f"{t['mask_us']['p50']:.1f} / {t['mask_us']['p99']:.0f}"])

    rows = [row("**all**", total)] + [row(name, t) for name, t in sorted(report["categories"].items())]
    for r in rows:
        print(r)
    if os.environ.get("RECORD", "1") == "0":
        return 0
    every = f" --every {args.every}" if args.every != 10 else ""
    note = (f"Every {args.every}th file of MaskBench's data ({len(chosen)} of {len(files)} schemas, "
            f"{total['tests']} instances), 128,256-token vocabulary, one thread; validation errors are valid "
            f"instances rejected (share of all instances), invalidation errors invalid ones accepted; times are the "
            f"thread's CPU time (time to first mask: compile and first mask; per mask: mask and commit). Load at "
            f"start {load}, {seconds:.0f} s in all.")
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench" / "results.py"), "record", "--id", "maskbench", "--no-peer",
         "--command", f"python3 scripts/bench/maskbench.py jsonschemabench/maskbench/data{every}",
         "--columns", "category|passing|compile errors|validation errors|invalidation errors|timeouts (30 s)|"
                      "first mask p50 / p99 ms|per mask p50 / p99 us", "--note", note],
        input="\n".join(rows) + "\n", text=True).returncode


if __name__ == "__main__":
    sys.exit(main())
