#!/usr/bin/env python3
"""The results page's data: benchmark scripts record their tables as JSON under docs/results/, and this script writes
those tables into docs/BENCHMARKS.md, so rerunning a benchmark refreshes the page. Owns the JSON's shape and the
rendering of a table block; the prose around the blocks is the page's own, written by hand.

  results.py record --id ID --command CMD --columns 'a|b|c' [--note TEXT] [--pagoda-isa L] [--membw GBPS]
      reads one table row per line from stdin (cells separated by '|'), adds the machine (lscpu's model, cores),
      the date, pagoda's commit and the peer's version and --isa, and writes docs/results/ID.json, then renders the
      page. A script records only when RECORD is not 0 (RECORD=0 prints without touching the page).
  results.py render [--check]
      replaces every block `<!-- results: ID -->` ... `<!-- /results -->` in docs/BENCHMARKS.md with the table of
      docs/results/ID.json; --check changes nothing and fails when the page differs, a block names a missing file,
      or a file is in no block (the ctest `results_page`).
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
PAGE = ROOT / "docs" / "BENCHMARKS.md"
BLOCK = re.compile(r"(<!-- results: ([a-z0-9-]+) -->\n)(.*?)(<!-- /results -->)", re.S)
KEYS = ("id", "command", "measured", "pagoda", "machine", "peer", "columns", "rows")


def run(cmd, cwd=ROOT):
    try:
        return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def machine(pagoda_isa, membw, with_peer=True):
    lscpu = run(["lscpu"])
    model = re.search(r"^Model name:\s*(.+)$", lscpu, re.M)
    text = f'lscpu "{model.group(1) if model else "unknown"}", {os.cpu_count()} cores'
    if pagoda_isa:
        text += f", pagoda at {pagoda_isa}"
    if membw:
        text += f", read bandwidth {membw} GB/s"
    # A script run under `chrt -f N` passes the policy to every process it starts, pagoda's and the peer's alike:
    # the machine's other work then barely disturbs either side, and the page says so.
    try:
        if os.sched_getscheduler(0) in (os.SCHED_FIFO, os.SCHED_RR):
            who = "both sides" if with_peer else "run"
            text += f", {who} at real-time priority (chrt -f {os.sched_getparam(0).sched_priority})"
    except (AttributeError, OSError):
        pass
    return text


def peer():
    src = Path(os.environ.get("PEER_DIR", Path.home() / ".cache" / "pagoda-peer"))
    info = src / "node_modules" / "node-llama-cpp" / "llama" / "llama.cpp.info.json"
    tag = json.loads(info.read_text()).get("tag", "?") if info.exists() else "?"
    commit = run(["git", "-C", str(src / "llama.cpp"), "log", "-1", "--format=%h"])
    isa = run([str(ROOT / "scripts" / "peer" / "llama.sh"), "--isa"])
    return f"llama.cpp {tag} ({commit or 'not built'}), {isa or 'isa unknown'}"


def pagoda_commit():
    head = run(["git", "rev-parse", "--short", "HEAD"])
    # The page and its JSON change as tables are recorded; only a change to anything else makes the build differ.
    dirty = run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs/results",
                 ":!docs/BENCHMARKS.md"])
    return head + ("+changes" if dirty else "") if head else "unknown"


def record(args):
    columns = args.columns.split("|")
    rows = []
    for line in sys.stdin.read().splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split("|")]
        if len(cells) != len(columns):
            sys.exit(f"results.py: row {line!r} has {len(cells)} cells, the table {len(columns)} columns")
        rows.append(cells)
    if not rows:
        sys.exit("results.py: no rows on stdin")
    result = {
        "id": args.id,
        "command": args.command,
        "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "pagoda": pagoda_commit(),
        "machine": machine(args.pagoda_isa, args.membw, bool(args.peer)),
        "peer": peer() if args.peer else None,
        "columns": columns,
        "rows": rows,
    }
    if args.note:
        result["note"] = args.note
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.id}.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"results.py: wrote docs/results/{args.id}.json", file=sys.stderr)
    return render(check=False, strict=False)


def load(result_id, results=RESULTS):
    path = results / f"{result_id}.json"
    data = json.loads(path.read_text())
    missing = [k for k in KEYS if k not in data]
    if missing:
        raise ValueError(f"{path.name} lacks {', '.join(missing)}")
    if data["id"] != result_id:
        raise ValueError(f"{path.name} says its id is {data['id']}")
    for row in data["rows"]:
        if len(row) != len(data["columns"]):
            raise ValueError(f"{path.name}: a row of {len(row)} cells in a table of {len(data['columns'])} columns")
    return data


def table(data):
    by = f"pagoda {data['pagoda']}"
    if data.get("peer"):
        by += f" against {data['peer']}"
    head = f"{data['machine']}; recorded {data['measured']}, {by}."
    if data.get("note"):
        head += " " + data["note"]
    lines = [head + f" `{data['command']}`:", ""]
    lines.append("| " + " | ".join(data["columns"]) + " |")
    lines.append("|" + "---|" * len(data["columns"]))
    lines += ["| " + " | ".join(row) + " |" for row in data["rows"]]
    return "\n".join(lines) + "\n"


def render(check, page_path=PAGE, results=RESULTS, strict=True):
    page = page_path.read_text()
    used, errors = set(), []

    def fill(m):
        used.add(m.group(2))
        try:
            return m.group(1) + table(load(m.group(2), results)) + m.group(4)
        except (OSError, ValueError, KeyError) as e:
            errors.append(f"block {m.group(2)}: {e}")
            return m.group(0)

    new = BLOCK.sub(fill, page)
    unused = sorted(p.stem for p in results.glob("*.json") if p.stem not in used)
    errors += [f"docs/results/{u}.json is in no block of docs/BENCHMARKS.md" for u in unused]
    if errors:
        # After a record the table is written whatever the rest of the page's state: a script that records
        # several tables goes on; the page check (`render --check`, a ctest) still fails on these.
        print("\n".join(("warning: " if not strict else "") + e for e in errors), file=sys.stderr)
        if strict:
            return 1
    if check:
        if new != page:
            print("docs/BENCHMARKS.md differs from its docs/results tables: run scripts/bench/results.py render",
                  file=sys.stderr)
            return 1
        print(f"docs/BENCHMARKS.md matches its {len(used)} recorded tables")
        return 0
    if new != page:
        page_path.write_text(new)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--id", required=True)
    rec.add_argument("--command", required=True)
    rec.add_argument("--columns", required=True)
    rec.add_argument("--note")
    rec.add_argument("--pagoda-isa")
    rec.add_argument("--membw")
    rec.add_argument("--no-peer", dest="peer", action="store_false")
    ren = sub.add_parser("render")
    ren.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.what == "record":
        if not re.fullmatch(r"[a-z0-9-]+", args.id):
            sys.exit("results.py: an id is lower-case letters, digits and dashes")
        return record(args)
    return render(args.check)


if __name__ == "__main__":
    sys.exit(main())
