#!/usr/bin/env python3
"""Hostile output constraints against the real server: how long each takes to be answered, the server's peak RSS,
what plain requests see meanwhile, and how long SIGTERM takes during compiles. A benchmark (it prints figures), not a
test; run it on a quiet machine.

  python3 scripts/bench/hostile_constraints.py [--binary build/src/cli/pagoda] [-- extra serve flags...]

The constraints: nested counted repeats through guided_regex, a JSON Schema `pattern` and GBNF `{m,n}` (counts of 100
and 1,000, and three levels deep), a 50,000-definition $ref chain, 100,000-choice lists (guided_choice and an enum),
a GBNF of 100,000 rules. Then two hostile requests at once, six times over, while plain completions are timed; then
SIGTERM with four compiles running or queued. The table and the figures after it are recorded in
docs/results/hostile-constraints.json and written into docs/BENCHMARKS.md (scripts/bench/results.py) unless RECORD=0.
"""
import os
import json
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

args = sys.argv[1:]
extra = args[args.index('--') + 1:] if '--' in args else []
binary = args[args.index('--binary') + 1] if '--binary' in args else 'build/src/cli/pagoda'


def start_server(flags):
    proc = subprocess.Popen([binary, 'serve', '--port', '0', *flags, *extra], stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        if m := re.search(r'listening on http://[^:]+:(\d+)', line):
            port = int(m.group(1))
            threading.Thread(target=lambda: proc.stderr.read(), daemon=True).start()
            return proc, port
    raise SystemExit('the server did not start')


def post(port, body, timeout=120):
    data = json.dumps(body).encode()
    req = urllib.request.Request(f'http://127.0.0.1:{port}/v1/completions', data=data,
                                 headers={'Content-Type': 'application/json'})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    except Exception as e:  # the connection cut at shutdown
        status, text = 0, str(e)
    return status, text, time.monotonic() - t0


def peak_rss_mib(pid):
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) / 1024
    return float('nan')


def completion(constraint):
    return {'prompt': 'Once upon a time', 'max_tokens': 8, 'temperature': 0, **constraint}


def hostile_constraints():
    defs = {f'd{i}': {'$ref': f'#/$defs/d{i + 1}'} for i in range(50000)}
    defs['d50000'] = {'enum': ['yes', 'no']}
    rules = 'root ::= r0\n' + ''.join(f'r{i} ::= "x" r{i + 1} | "y"\n' for i in range(100000)) + 'r100000 ::= "z"\n'
    return [
        ('`guided_regex` `(a{1,100}){1,100}`', {'guided_regex': '(a{1,100}){1,100}'}),
        ('`guided_regex` `(b{1,1000}){1,1000}`', {'guided_regex': '(b{1,1000}){1,1000}'}),
        ('`guided_regex` `((c{1,1000}){1,1000}){1,1000}`', {'guided_regex': '((c{1,1000}){1,1000}){1,1000}'}),
        ('`guided_json` string `pattern` `^(d{1,1000}){1,1000}$`',
         {'guided_json': {'type': 'string', 'pattern': '^(d{1,1000}){1,1000}$'}}),
        ('GBNF `root ::= (("e"){1,1000}){1,1000}`', {'grammar': 'root ::= (("e"){1,1000}){1,1000}'}),
        ('GBNF of 100,000 chained rules', {'grammar': rules}),
        ('`guided_json` `$ref` chain of 50,000 definitions', {'guided_json': {'$ref': '#/$defs/d0', '$defs': defs}}),
        ('`guided_choice` of 100,000 strings', {'guided_choice': [f'c{i}' for i in range(100000)]}),
        ('`guided_json` `enum` of 100,000 strings', {'guided_json': {'enum': [f'v{i}' for i in range(100000)]}}),
    ]


def main():
    proc, port = start_server([])
    print(f'binary {binary}; one server, default settings')
    print(f'{"constraint":40} {"status":>6} {"seconds":>8}  answer')
    worst = 0.0
    rows = []
    for name, constraint in hostile_constraints():
        status, text, secs = post(port, completion(constraint))
        worst = max(worst, secs)
        try:
            answer = json.loads(text)
            answer = answer['error']['message'] if 'error' in answer else answer['choices'][0]['text']
        except Exception:
            answer = text
        print(f'{name:40} {status:6} {secs:8.3f}  {answer[:90]}')
        shown = answer if status != 200 else 'generated: ' + json.dumps(answer)
        rows.append(f'{name}|{status}|{secs:.2f} s|{shown[:100].replace("|", "/")}')
    rss_first = peak_rss_mib(proc.pid)
    print(f'slowest answer {worst:.3f} s; peak RSS {rss_first:.0f} MiB')

    # Plain requests alone, then beside two hostile compiles at a time (new grammars each time: no cache hits).
    def plain_latencies(seconds):
        out, end = [], time.monotonic() + seconds
        while time.monotonic() < end:
            out.append(post(port, {'prompt': 'Once upon a time', 'max_tokens': 8, 'temperature': 0})[2])
            time.sleep(0.02)
        return out
    alone = sorted(plain_latencies(3))
    stop = threading.Event()
    hostile_times = []

    def attacker(k):
        i = 0
        while not stop.is_set():
            letter = 'fghijklmnopqrstuvwxyz'[(k * 7 + i) % 21]
            _, _, secs = post(port, completion({'guided_regex': f'({letter}{{1,{1000 - i}}}){{1,1000}}'}))
            hostile_times.append(secs)
            i += 1
    threads = [threading.Thread(target=attacker, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    beside = sorted(plain_latencies(5))
    stop.set()
    for t in threads:
        t.join()
    med = lambda v: v[len(v) // 2]
    print(f'plain completions (8 tokens, {len(alone)} / {len(beside)}): median {med(alone) * 1e3:.1f} ms, max {alone[-1] * 1e3:.1f} ms alone; '
          f'median {med(beside) * 1e3:.1f} ms, max {beside[-1] * 1e3:.1f} ms beside 2 hostile clients '
          f'({len(hostile_times)} hostile requests, slowest {max(hostile_times):.3f} s)')
    rss_after = peak_rss_mib(proc.pid)
    print(f'peak RSS {rss_after:.0f} MiB')
    plain = (f'Plain 8-token completions: median {med(alone) * 1e3:.1f} ms, max {alone[-1] * 1e3:.1f} ms alone '
             f'({len(alone)} requests); median {med(beside) * 1e3:.1f} ms, max {beside[-1] * 1e3:.1f} ms while two '
             f'clients sent new hostile constraints back to back ({len(beside)} requests beside '
             f'{len(hostile_times)} hostile ones, the slowest of those answered in {max(hostile_times):.2f} s).')
    proc.send_signal(signal.SIGTERM)
    proc.wait()

    proc, port = start_server(['--drain-timeout', '5'])
    replies = []
    clients = [threading.Thread(target=lambda k=k: replies.append(
        post(port, completion({'guided_regex': f'({"wxyz"[k]}{{1,1000}}){{1,1000}}'}))[0])) for k in range(4)]
    for c in clients:
        c.start()
    time.sleep(0.2)
    t0 = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    code = proc.wait()
    exit_secs = time.monotonic() - t0
    for c in clients:
        c.join()
    print(f'SIGTERM with 4 compiles running or queued: exit {code} after {exit_secs:.3f} s; replies {sorted(replies)}')
    if os.environ.get('RECORD', '1') != '0':
        note = (f'Bundled stories260K, default `pagoda serve` flags. Slowest answer {worst:.2f} s; the server\'s peak '
                f'RSS {rss_first:.0f} MiB after all nine, {rss_after:.0f} MiB after the next part. {plain} SIGTERM '
                f'with four compiles running or queued: exit {code} after {exit_secs:.3f} s, replies '
                f'{", ".join(map(str, sorted(replies)))}.')
        isa = subprocess.run([binary, 'run', '-n', '1', '-p', 'x'], capture_output=True, text=True).stderr
        isa = re.search(r'\((\w+) kernels', isa)
        command = 'python3 scripts/bench/hostile_constraints.py' + ''.join(f' {a}' for a in sys.argv[1:])
        subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), 'results.py'), 'record',
                        '--id', 'hostile-constraints', '--no-peer', '--command', command, '--note', note,
                        '--columns', 'constraint (a /v1/completions field)|status|answered in|answer',
                        *(['--pagoda-isa', isa.group(1)] if isa else [])],
                       input='\n'.join(rows) + '\n', text=True, check=True)


if __name__ == '__main__':
    main()
