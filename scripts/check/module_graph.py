#!/usr/bin/env python3
"""The module graph, checked from the code: every `#include "M/..."` in src/N is an edge N -> M.

Fails (exit 1, naming the files) when the graph has a cycle, when a module includes one it must not (the rules below:
src/kv does not know the model, the engine neither loads files nor knows the server, nothing below the CLI includes
it), when a module reads files although only the loader, format and a few named ones may, or when docs/ARCHITECTURE.md's
module table says otherwise than the includes.

The table (the one whose header is `| module | holds | uses |`): one row per module of src/, bottom to top, its
`module` cell the name in backticks; its `uses` cell the modules whose headers the module's files include, comma
separated, or `-` for none. Text in parentheses after a name is a note the check ignores (`kv (view only)`). Every
module of src/ has its row, every name in a `uses` cell is included and every include is named there, and a used
module's row comes above its user's.
`--print` writes the edges as `N -> M` lines (for docs/ARCHITECTURE.md).
Run by ctest (module_graph) and by hand: python3 scripts/check/module_graph.py [--print]
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
SRC = os.path.join(ROOT, 'src')
ARCHITECTURE = os.path.join(ROOT, 'docs', 'ARCHITECTURE.md')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/[^"]+"', re.M)

# (module, must not include) pairs: the dependency rules the architecture names.
FORBIDDEN = [
    ('kv', 'model'),
    ('engine', 'loader'), ('engine', 'server'), ('engine', 'cli'), ('engine', 'bench'), ('engine', 'chat'),
    ('engine', 'synth'), ('server', 'synth'),
    ('model', 'engine'), ('model', 'loader'), ('kernels', 'model'), ('tokenizer', 'chat'), ('tokenizer', 'model'),
    ('sampling', 'engine'), ('server', 'loader'), ('server', 'cli'), ('grammar', 'engine'),
    ('engine', 'hub'), ('server', 'hub'), ('loader', 'hub'),
]
# Modules whose code may open files: loading (loader, format's readers and writers, model's HF checkpoint reader and
# weight repacking's /proc check), the tools that write or read files by design (synth writes random-weight models,
# hub writes downloads into the Hugging Face cache), and core's /proc reader.
FILE_READERS = {'loader', 'format', 'model', 'tokenizer', 'bench', 'synth', 'cli', 'eval', 'core', 'assets', 'parallel',
                'hub'}
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


def split_cells(line):
    """A markdown table row's cells, stripped; a '|' inside backticks belongs to its cell."""
    cells, cell, code = [], '', False
    for ch in line.strip().strip('|'):
        if ch == '`':
            code = not code
        if ch == '|' and not code:
            cells.append(cell.strip())
            cell = ''
        else:
            cell += ch
    cells.append(cell.strip())
    return cells


def parse_module_table(markdown):
    """docs/ARCHITECTURE.md's module table -> ([(line number, [modules], [used modules])], problems).
    Modules are the backticked names of the `module` cell; the `uses` cell is `-` or names separated by commas,
    each name's parenthesized note dropped. Names are returned as written; check_table judges them."""
    lines = markdown.split('\n')
    header = None
    for i, line in enumerate(lines):
        if line.lstrip().startswith('|') and [c.lower() for c in split_cells(line)] == ['module', 'holds', 'uses']:
            header = i
            break
    if header is None:
        return [], ['docs/ARCHITECTURE.md has no module table (a `| module | holds | uses |` header)']
    rows, problems = [], []
    for i in range(header + 2, len(lines)):
        line = lines[i]
        if not line.lstrip().startswith('|'):
            break
        cells = split_cells(line)
        if len(cells) != 3:
            problems.append(f'ARCHITECTURE.md:{i + 1}: a module table row needs 3 cells, has {len(cells)}')
            continue
        modules = re.findall(r'`([^`]*)`', cells[0])
        uses_cell = re.sub(r'\([^)]*\)', '', cells[2]).replace('`', '').strip()
        uses = [] if uses_cell == '-' else [u.strip() for u in uses_cell.split(',')]
        rows.append((i + 1, modules, uses))
    return rows, problems


def check_table(rows, graph, sources=None):
    """Problems where the table's rows disagree with the include graph (module -> set of included modules)."""
    problems = []
    position = {}
    for number, modules, uses in rows:
        where = f'ARCHITECTURE.md:{number}'
        if len(modules) != 1:
            problems.append(f'{where}: a row names one module in backticks, this one {len(modules)}')
            continue
        module = modules[0]
        if module not in graph:
            problems.append(f'{where}: `{module}` is not a module of src/')
            continue
        if module in position:
            problems.append(f'{where}: `{module}` has a second row')
            continue
        position[module] = number
        listed = set()
        for used in uses:
            if used not in graph:
                problems.append(f'{where}: `{module}` uses "{used}", which is not a module of src/ '
                                '(name each used module; notes go in parentheses)')
                continue
            listed.add(used)
            if used not in graph[module]:
                problems.append(f'{where}: the table says `{module}` uses {used}, but no file of src/{module} '
                                f'includes {used}/')
            elif used not in position:
                problems.append(f'{where}: `{module}` uses {used}, whose row is not above it (bottom to top)')
        for included in sorted(graph[module] - listed):
            files = sorted(including_files(sources, module, included)) if sources else []
            shown = ', '.join(files[:3]) + (f' and {len(files) - 3} more' if len(files) > 3 else '')
            problems.append(f'{where}: `{module}` includes {included}/ ({shown or "its files"}), '
                            'which its uses cell does not list')
    for module in sorted(set(graph) - set(position)):
        problems.append(f'ARCHITECTURE.md: src/{module} has no row in the module table')
    return problems


def including_files(sources, module, target):
    return [os.path.relpath(p, ROOT) for p, (m, t) in sources.items()
            if m == module and re.search(r'#\s*include\s+"' + target + '/', t)]


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
            files = including_files(sources, module, banned)
            problems.append(f'{module} includes {banned}: ' + ', '.join(sorted(files)))
    for path, (module, text) in sorted(sources.items()):
        for header in re.findall(r'#\s*include\s+"kv/([^"]+)"', text):
            if module == 'model' and header != 'kv_cache_view.h':
                problems.append(f'{os.path.relpath(path, ROOT)}: the model may see only kv/kv_cache_view.h of src/kv')
        if module not in FILE_READERS and FILE_IO.search(text):
            problems.append(f'{os.path.relpath(path, ROOT)}: module {module} opens files (only loading modules may)')
    rows, table_problems = parse_module_table(open(ARCHITECTURE, encoding='utf-8').read())
    problems += table_problems + check_table(rows, graph, sources)
    for p in problems:
        print('module graph: ' + p)
    if not problems:
        print(f'module graph: {len(graph)} modules, {sum(len(v) for v in graph.values())} edges, acyclic, rules hold, '
              'ARCHITECTURE.md\'s table matches')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
