#!/usr/bin/env python3
"""The module graph, checked from the code: every `#include "M/..."` in src/N is an edge N -> M.

Fails (exit 1, naming the files) when the graph has a cycle, when a module includes one it must not (the rules below:
src/kv does not know the model, the engine neither loads files nor knows the server, nothing below the CLI includes
it), or when a module reads files although only the loader, format and a few named ones may.
`--print` writes the edges as `N -> M` lines (for docs/ARCHITECTURE.md).
Run by ctest (module_graph) and by hand: python3 scripts/check/module_graph.py [--print]
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
SRC = os.path.join(ROOT, 'src')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)

# (module, must not include) pairs: the dependency rules the architecture names.
FORBIDDEN = [
    ('kv', 'model'),
    ('engine', 'loader'), ('engine', 'server'), ('engine', 'cli'), ('engine', 'bench'), ('engine', 'chat'),
    ('engine', 'synth'), ('server', 'synth'),
    ('model', 'engine'), ('model', 'loader'), ('kernels', 'model'), ('tokenizer', 'chat'), ('tokenizer', 'model'),
    ('sampling', 'engine'), ('server', 'loader'), ('server', 'cli'), ('grammar', 'engine'),
]
# Modules whose code may open files: loading (loader, format's readers and writers, model's HF checkpoint reader and
# weight repacking's /proc check), the tools that write or read files by design (synth writes random-weight models),
# and core's /proc reader.
FILE_READERS = {'loader', 'format', 'model', 'tokenizer', 'bench', 'synth', 'cli', 'eval', 'core', 'assets', 'parallel'}
FILE_IO = re.compile(r'\b(std::ifstream|std::ofstream|std::fopen|fopen\(|::open\(|mmap\()')


def edges():
    graph = {}
    sources = {}
    for module in sorted(os.listdir(SRC)):
        folder = os.path.join(SRC, module)
        if not os.path.isdir(folder):
            continue
        graph.setdefault(module, set())
        for dirpath, _, files in os.walk(folder):
            for name in files:
                if not name.endswith(('.h', '.cc')):
                    continue
                path = os.path.join(dirpath, name)
                text = open(path, encoding='utf-8').read()
                sources[path] = (module, text)
                for target in INCLUDE.findall(text):
                    if target != module and os.path.isdir(os.path.join(SRC, target)):
                        graph[module].add(target)
    return graph, sources


def find_cycle(graph):
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if state.get(m) is None:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if state.get(n) is None:
            c = visit(n)
            if c:
                return c
    return None


def main():
    graph, sources = edges()
    if '--print' in sys.argv:
        for n in sorted(graph):
            print(f"{n} -> {', '.join(sorted(graph[n])) or '(nothing)'}")
        return 0
    problems = []
    cycle = find_cycle(graph)
    if cycle:
        problems.append('cycle: ' + ' -> '.join(cycle))
    for module, banned in FORBIDDEN:
        if banned in graph.get(module, ()):
            files = [os.path.relpath(p, ROOT) for p, (m, t) in sources.items()
                     if m == module and re.search(r'#\s*include\s+"' + banned + '/', t)]
            problems.append(f'{module} includes {banned}: ' + ', '.join(sorted(files)))
    for path, (module, text) in sorted(sources.items()):
        for header in re.findall(r'#\s*include\s+"kv/([^"]+)"', text):
            if module == 'model' and header != 'kv_cache_view.h':
                problems.append(f'{os.path.relpath(path, ROOT)}: the model may see only kv/kv_cache_view.h of src/kv')
        if module not in FILE_READERS and FILE_IO.search(text):
            problems.append(f'{os.path.relpath(path, ROOT)}: module {module} opens files (only loading modules may)')
    for p in problems:
        print('module graph: ' + p)
    if not problems:
        print(f'module graph: {len(graph)} modules, {sum(len(v) for v in graph.values())} edges, acyclic, rules hold')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
