#!/usr/bin/env python3
"""Renders every chat template in a folder (default: llama.cpp's models/templates in the peer's cache) with
Python's jinja2 the way transformers' apply_chat_template does (sandboxed, trim_blocks, lstrip_blocks,
loopcontrols, {% generation %}, tojson without ASCII escapes, raise_exception, strftime_now) and with pagoda's
Jinja engine (`pagoda tokenize --chat-template FILE --jsonl`), for a few conversations: a lone user turn; system,
user, assistant, user; tools with an assistant tool call and its result; and enable_thinking false. Prints one
line per template (match, mismatch with the first differing position, or which side refused) and a tally.

Usage: scripts/check/chat_template_parity.py [TEMPLATES_DIR] [--pagoda BUILD/src/cli/pagoda] [--show NAME]
"""
import argparse, datetime, json, os, subprocess, sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}},
                   "required": ["city"]}}}]

CONVERSATIONS = {
    "user": {"messages": [{"role": "user", "content": "Hello there"}], "add_generation_prompt": True},
    "multi": {"messages": [{"role": "system", "content": "You are terse."},
                           {"role": "user", "content": "Hi"},
                           {"role": "assistant", "content": "Hello."},
                           {"role": "user", "content": "Tell me a story"}], "add_generation_prompt": True},
    "tools": {"messages": [{"role": "system", "content": "You can call tools."},
                           {"role": "user", "content": "Weather in Paris?"},
                           {"role": "assistant", "content": "", "tool_calls": [
                               {"id": "call12345", "type": "function",
                                "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                           {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
                            "content": "{\"temp\": 21}"}],
              "tools": TOOLS, "add_generation_prompt": True},
    "nothink": {"messages": [{"role": "user", "content": "2+2?"}], "add_generation_prompt": True,
                "enable_thinking": False},
}


class GenerationTracker(jinja2.ext.Extension):
    """transformers' AssistantTracker: {% generation %}...{% endgeneration %} renders its body."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_render"), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def hf_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return datetime.datetime.now().strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[GenerationTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir", nargs="?",
                    default=os.path.expanduser("~/.cache/pagoda-peer/llama.cpp/models/templates"))
    ap.add_argument("--pagoda", default=os.path.join(os.path.dirname(__file__), "../../build/src/cli/pagoda"))
    ap.add_argument("--show", help="print both renderings of this template (file name)")
    a = ap.parse_args()
    files = sorted(f for f in os.listdir(a.dir) if f.endswith(".jinja"))
    if not files:
        sys.exit(f"chat_template_parity: no .jinja files in {a.dir}")
    env = hf_env()
    tally = {"match": 0, "mismatch": 0, "pagoda refuses": 0, "both refuse": 0, "only pagoda renders": 0}
    for f in files:
        if a.show and f != a.show:
            continue
        source = open(os.path.join(a.dir, f), encoding="utf-8").read()
        results = []
        lines = []
        for name, conv in CONVERSATIONS.items():
            ctx = dict(conv, bos_token="<s>", eos_token="</s>")
            try:
                expected = env.from_string(source).render(**ctx)
            except Exception as e:  # noqa: BLE001: any refusal of the reference
                expected = None
                ref_error = f"{type(e).__name__}: {e}"
            lines.append(json.dumps(ctx))
            results.append((name, expected, None if expected is not None else ref_error))
        path = os.path.join(a.dir, f)
        got, errors = [], []
        for line in lines:  # one process per conversation: a refusal names its own conversation
            p = subprocess.run([a.pagoda, "tokenize", "--chat-template", path, "--jsonl"], input=line + "\n",
                               capture_output=True, text=True)
            got.append(json.loads(p.stdout) if p.returncode == 0 and p.stdout.strip() else None)
            errors.append(p.stderr.strip().splitlines()[-1][:160] if p.stderr.strip() else "")
        verdicts = []
        for i, (name, expected, ref_error) in enumerate(results):
            mine = got[i]
            if expected is None and mine is None:
                v = "both refuse"
            elif expected is None:
                v = "only pagoda renders"
            elif mine is None:
                v = "pagoda refuses"
            elif mine == expected:
                v = "match"
            else:
                v = "mismatch"
            tally[v] += 1
            detail = ""
            if v == "mismatch":
                at = next((k for k in range(min(len(mine), len(expected))) if mine[k] != expected[k]),
                          min(len(mine), len(expected)))
                detail = f" at {at}: {expected[max(0, at - 20):at + 30]!r} vs {mine[max(0, at - 20):at + 30]!r}"
            elif v == "pagoda refuses":
                detail = f" ({errors[i]})"
            elif v in ("both refuse", "only pagoda renders"):
                detail = f" (reference: {ref_error[:100]})"
            verdicts.append(f"{name}={v}{detail}")
            if a.show:
                print(f"--- {name} reference:\n{expected}\n--- {name} pagoda:\n{mine}")
        print(f"{f}: " + "; ".join(verdicts))
    print("tally:", ", ".join(f"{k} {v}" for k, v in tally.items()))


if __name__ == "__main__":
    main()
