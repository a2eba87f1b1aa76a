#!/usr/bin/env python3
"""The hardening issue's own reproductions, run against a release binary: each attack as the issue wrote it, then a
check that the process answered as it should and is still serving (or, for the CLI and model files, exited with a
clear error rather than an abort). One line per check; exits non-zero if any fails.

This is a check script, not a test: the regression tests (tests/unit/server, tests/e2e, tests/unit/format, ...) are
what `make test` runs. It exists so a person can replay the attacks by hand on a build.

Usage: scripts/check/hardening_repros.py [PAGODA_BINARY]
"""
import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
pagoda = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "src", "cli", "pagoda")
model = os.path.join(root, "assets", "models", "stories260K", "stories260K.gguf")
work = tempfile.mkdtemp(prefix="pagoda-hardening-")
failures = 0


def report(ok, what, detail=""):
    global failures
    failures += 0 if ok else 1
    print(f"{'ok  ' if ok else 'FAIL'} {what}{': ' + detail if detail else ''}", flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    def __init__(self, *flags):
        self.port = free_port()
        self.proc = subprocess.Popen([pagoda, "serve", "-m", model, "--port", str(self.port), *flags],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if self.get("/health")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("server did not start")

    def request(self, method, path, body=None, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request(method, path, body=json.dumps(body) if isinstance(body, (dict, list)) else body,
                  headers={"Content-Type": "application/json"})
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, data, r

    def get(self, path):
        return self.request("GET", path, timeout=5)

    def alive(self):
        time.sleep(0.2)  # an abort on an I/O thread can land just after the reply
        try:
            return self.proc.poll() is None and self.get("/health")[0] == 200
        except OSError:
            return False

    def raw(self, payload, read=4096, timeout=10, shutdown_write=False):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        s.sendall(payload)
        if shutdown_write:
            s.shutdown(socket.SHUT_WR)
        data = b""
        try:
            while len(data) < read:
                chunk = s.recv(read)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            pass
        s.close()
        return data

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return None


def status_of(raw):
    while raw.startswith(b"HTTP/1.1 1"):  # interim responses (the server's 100 Continue to a half-closed client)
        raw = raw.split(b"\r\n\r\n", 1)[1]
    line = raw.split(b"\r\n", 1)[0].decode(errors="replace")
    parts = line.split(" ")
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None


def run_cli(args, stdin=None):
    p = subprocess.run([pagoda, *args], input=stdin, capture_output=True, timeout=120)
    return p.returncode, p.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]


def aborted(rc):
    return rc is None or rc < 0 or rc in (134, 137, 139)


def health_while(threads, interval):
    """Starts the threads and times /health every `interval` seconds until they end: (worst ms, every probe's ms)."""
    for t in threads:
        t.start()
    time.sleep(0.2)
    probes = []
    while any(t.is_alive() for t in threads):
        t0 = time.time()
        s.get("/health")
        probes.append((time.time() - t0) * 1000)
        time.sleep(interval)
    for t in threads:
        t.join()
    return (max(probes) if probes else 0.0), probes


def server_gone(kind, value, tb):
    """A binary that dies under an attack (as the issue's did) ends the run with a FAIL line, not a traceback."""
    if not issubclass(kind, OSError):
        sys.__excepthook__(kind, value, tb)
        return
    print(f"FAIL the server stopped answering ({value}); the checks after it did not run", flush=True)
    print(f"{failures + 1} failed")
    sys.exit(1)


sys.excepthook = server_gone
print(f"pagoda: {pagoda}")
s = Server()

# 1. A chunked request whose trailer is over 64 KiB.
raw = s.raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: " + b"a" * 65600
            + b"\r\n\r\n")
report(status_of(raw) in (400, 431) and s.alive(), "1. 65,600-byte trailer", f"status {status_of(raw)}, alive {s.alive()}")

# 2. A content part whose type is not a string (chat and /tokenize).
body = {"messages": [{"role": "user", "content": [{"type": 5, "text": "a"}]}]}
for path in ("/v1/chat/completions", "/tokenize"):
    st, data, _ = s.request("POST", path, body)
    report(st == 400 and b'"error"' in data and s.alive(), f"2. type-confused content part on {path}", f"status {st}")

# 2 (CLI). tokenizer_config.json with a chat_template list whose name is a number; tokenize --jsonl with
# add_generation_prompt "yes".
hf = os.path.join(work, "hf")
gen = subprocess.run([pagoda, "gen-model", "--shape", "tiny", "--format", "hf", "-o", hf], capture_output=True)
if gen.returncode == 0:
    path = os.path.join(hf, "tokenizer_config.json")
    config = json.load(open(path)) if os.path.exists(path) else {}
    config["chat_template"] = [{"name": 5, "template": "x"}]
    json.dump(config, open(path, "w"))
    rc, last = run_cli(["run", "-m", hf, "-p", "hi", "-n", "1"])
    report(rc != 0 and not aborted(rc), "2. run -m DIR with a type-confused chat_template list", f"exit {rc}: {last[0]}")
else:
    report(False, "2. gen-model --format hf", gen.stderr.decode()[-200:])
template = os.path.join(work, "t.jinja")
open(template, "w").write("{% for m in messages %}{{ m.content }}{% endfor %}")
rc, last = run_cli(["tokenize", "-m", model, "--jsonl", "--chat-template", template],
                   stdin=b'{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":"yes"}\n')
report(rc != 0 and not aborted(rc), "2. tokenize --jsonl with add_generation_prompt \"yes\"", f"exit {rc}: {last[0]}")

# 3. A GGUF whose llama.block_count is 2^24 (and 2^31 - 1).
data = bytearray(open(model, "rb").read())
key = data.find(b"llama.block_count") + len(b"llama.block_count")
for count in (1 << 24, (1 << 31) - 1):
    data[key + 4:key + 8] = count.to_bytes(4, "little")
    bad = os.path.join(work, f"blocks-{count}.gguf")
    open(bad, "wb").write(data)
    t0 = time.time()
    rc, last = run_cli(["run", "-m", bad, "-p", "hi", "-n", "1"])
    report(rc != 0 and not aborted(rc) and time.time() - t0 < 10, f"3. block_count {count}",
           f"exit {rc} in {time.time() - t0:.2f} s: {last[0]}")

# 4. 64 prompts x n = 16 x 500 tokens x logprobs 20.
st, data, _ = s.request("POST", "/v1/completions", {"prompt": ["Once upon a time"] * 64, "n": 16, "max_tokens": 500,
                                                     "logprobs": 20})
report(st == 400 and b"max-request-tokens" in data, "4. 64 prompts x n 16 x 500 tokens x logprobs 20",
       f"status {st}: {json.loads(data)['error']['message'][:90] if st == 400 else ''}")

# 5. Two 8 MiB bodies; /health meanwhile.
big = json.dumps({"prompt": "a " * ((4 << 20) - 64), "max_tokens": 1}).encode()  # under --max-body (8 MiB)
results = []
threads = [threading.Thread(target=lambda: results.append(s.request("POST", "/v1/completions", big, timeout=120)[0]))
           for _ in range(2)]
worst, probes = health_while(threads, 0.02)
report(worst < 50 and s.alive(), "5. /health while two 8 MiB bodies are prepared",
       f"{len(probes)} probes, worst {worst:.1f} ms; the bodies got {results}")

# 5. Four whole responses of 16 choices x 500 tokens with 20 logprobs each (about 4 MiB of JSON apiece, the load's
# never-reading clients ask for such); /health meanwhile, as their bodies are built.
whole = {"prompt": "Once upon a time", "max_tokens": 500, "n": 16, "logprobs": 20, "ignore_eos": True}
sizes = []
threads = [threading.Thread(target=lambda: sizes.append(len(s.request("POST", "/v1/completions", whole, timeout=120)[1])))
           for _ in range(4)]
worst, probes = health_while(threads, 0.01)
report(worst < 100 and len(sizes) == 4 and s.alive(), "5. /health while four 4 MiB whole responses are built",
       f"{len(probes)} probes, worst {worst:.1f} ms; bodies of {sorted(sizes)} bytes")

# 8. HEAD without a body; a half-closed client gets its response; HTTP/1.0 stream not chunked; n > --max-queue.
raw = s.raw(b"HEAD /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
head, _, rest = raw.partition(b"\r\n\r\n")
report(status_of(raw) == 200 and rest == b"", "8. HEAD answers without a body", f"{len(rest)} body bytes")
req = json.dumps({"prompt": "Once", "max_tokens": 2}).encode()
raw = s.raw(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(req)).encode() + b"\r\n\r\n" + req, shutdown_write=True)
report(status_of(raw) == 200, "8. a half-closed client gets its response", f"status {status_of(raw)}")
req = json.dumps({"prompt": "Once", "max_tokens": 3, "stream": True}).encode()
raw = s.raw(b"POST /v1/completions HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(req)).encode() + b"\r\n\r\n" + req, read=1 << 20)
report(status_of(raw) == 200 and b"transfer-encoding: chunked" not in raw.lower() and b"[DONE]" in raw,
       "8. a stream to an HTTP/1.0 client is not chunked", f"status {status_of(raw)}")
rc = s.stop()
report(rc == 0, "SIGTERM drains and exits 0", f"exit {rc}")
s = Server("--max-queue", "4")
st, data, _ = s.request("POST", "/v1/completions", {"prompt": ["Once"] * 5, "n": 2, "max_tokens": 1})
report(st == 400 and s.alive(), "8. 5 prompts x n 2 on a server with --max-queue 4 is a 400 (it can never fit)",
       f"status {st}")
s.stop()

# 6. A hostile chat template: stops at its budget or the request deadline; SIGTERM still ends the server.
hostile = os.path.join(work, "hostile.jinja")
open(hostile, "w").write("{% for i in range(400000) %}{% set x = 'a' * 15000000 %}{% endfor %}")
s = Server("--chat-template-file", hostile, "--request-timeout", "5")
t0 = time.time()
st, data, _ = s.request("POST", "/v1/chat/completions", {"messages": [{"role": "user", "content": "hi"}]}, timeout=60)
took = time.time() - t0
report(st in (400, 408, 500) and took < 10 and s.alive(), "6. hostile chat template",
       f"status {st} in {took:.1f} s: {json.loads(data)['error']['message'][:80]}")
rc = s.stop()
report(rc == 0, "6. SIGTERM ends it", f"exit {rc}")

# 7. A keep-alive connection trickling its second request is cut at --read-timeout; one address cannot hold every
# connection.
s = Server("--read-timeout", "2", "--max-connections", "16", "--max-connections-per-address", "4")
sock = socket.create_connection(("127.0.0.1", s.port), timeout=30)
sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
sock.recv(4096)
t0 = time.time()
closed_after = None
try:
    for ch in b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n":
        sock.sendall(bytes([ch]))
        time.sleep(0.5)
        if time.time() - t0 > 8:
            break
    sock.settimeout(5)
    got = sock.recv(4096)
    closed_after = time.time() - t0 if (not got or status_of(got) == 408) else None
except OSError:
    closed_after = time.time() - t0
sock.close()
report(closed_after is not None and closed_after < 6, "7. a trickled keep-alive request is cut at --read-timeout",
       f"after {closed_after:.1f} s" if closed_after else "not cut")
held = [socket.create_connection(("127.0.0.1", s.port), timeout=5) for _ in range(6)]
refused = 0
for c in held:
    try:
        c.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        got = c.recv(4096)
        refused += 0 if status_of(got) == 200 else 1
    except OSError:
        refused += 1
for c in held:
    c.close()
time.sleep(0.5)  # the server notices the closed connections
alive = s.alive()
report(refused >= 2 and alive, "7. one address is held to --max-connections-per-address 4",
       f"{refused} of 6 connections refused; serving afterwards: {alive}")
s.stop()

print(f"{failures} failed" if failures else "all held")
sys.exit(1 if failures else 0)
