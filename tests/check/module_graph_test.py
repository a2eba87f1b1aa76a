#!/usr/bin/env python3
"""Tests of scripts/check/module_graph.py's ARCHITECTURE.md table check, on synthetic tables and include graphs: a true
table passes; a wrong `uses` entry, a missing one, an unknown name, a missing or doubled row, a row above a module it
uses, and a file without the table fail; and the script exits 1 on a temporary copy of the real table with one entry
dropped (the real file is the module_graph test's).
Run by ctest (module_graph_checker) and by hand: python3 tests/check/module_graph_test.py
"""
import contextlib
import importlib.util
import io
import os
import tempfile
import unittest

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts', 'check', 'module_graph.py')
_SPEC = importlib.util.spec_from_file_location('module_graph', _PATH)
module_graph = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(module_graph)

# A small include graph: module -> the modules its files include.
GRAPH = {
    'core': set(),
    'quant': {'core'},
    'kv': {'core'},
    'model': {'core', 'quant', 'kv'},
}

TRUE_TABLE = """# arch

| module | holds | uses |
|---|---|---|
| `core` | status, types (`a | b` in code) | - |
| `quant` | block formats | core |
| `kv` | the block pool | `core` |
| `model` | the forward pass | core, quant, kv (view only) |

Text after the table.
"""


def problems(table, graph=GRAPH):
    rows, parse_problems = module_graph.parse_module_table(table)
    return parse_problems + module_graph.check_table(rows, graph)


class ModuleTableTest(unittest.TestCase):
    def test_true_table_passes(self):
        self.assertEqual(problems(TRUE_TABLE), [])

    def test_parses_notes_backticks_and_dash(self):
        rows, _ = module_graph.parse_module_table(TRUE_TABLE)
        self.assertEqual([(modules, uses) for _, modules, uses in rows],
                         [(['core'], []), (['quant'], ['core']), (['kv'], ['core']),
                          (['model'], ['core', 'quant', 'kv'])])

    def test_wrong_uses_entry_fails(self):
        # quant is listed as using kv, which none of its files include.
        found = problems(TRUE_TABLE.replace('| block formats | core |', '| block formats | core, kv |'))
        self.assertEqual(len(found), 1, found)
        self.assertIn('says `quant` uses kv, but no file of src/quant includes kv/', found[0])

    def test_missing_uses_entry_fails(self):
        # model includes quant, but its row no longer says so.
        found = problems(TRUE_TABLE.replace('core, quant, kv (view only)', 'core, kv (view only)'))
        self.assertEqual(len(found), 1, found)
        self.assertIn('`model` includes quant/', found[0])
        self.assertIn('does not list', found[0])

    def test_include_the_table_does_not_know_fails(self):
        graph = dict(GRAPH, kv={'core', 'quant'})
        found = problems(TRUE_TABLE, graph)
        self.assertEqual(len(found), 1, found)
        self.assertIn('`kv` includes quant/', found[0])

    def test_placeholder_names_fail(self):
        for cell in ('core, ...', 'everything'):
            found = problems(TRUE_TABLE.replace('core, quant, kv (view only)', cell))
            self.assertTrue(any('is not a module of src/' in p for p in found), (cell, found))

    def test_missing_row_fails(self):
        found = problems(TRUE_TABLE.replace('| `kv` | the block pool | `core` |\n', ''))
        self.assertIn('ARCHITECTURE.md: src/kv has no row in the module table', found)

    def test_row_of_a_module_that_does_not_exist_fails(self):
        table = TRUE_TABLE.replace('| `model` |', '| `gone` | old | core |\n| `model` |')
        self.assertTrue(any('`gone` is not a module of src/' in p for p in problems(table)))

    def test_doubled_row_and_two_modules_in_one_row_fail(self):
        doubled = TRUE_TABLE.replace('| `kv` | the block pool | `core` |', '| `kv` | a | core |\n| `kv` | b | core |')
        self.assertTrue(any('`kv` has a second row' in p for p in problems(doubled)))
        combined = TRUE_TABLE.replace('| `kv` | the block pool | `core` |', '| `kv`, `quant` | both | core |')
        self.assertTrue(any('one module in backticks, this one 2' in p for p in problems(combined)))

    def test_used_module_below_its_user_fails(self):
        lines = TRUE_TABLE.split('\n')
        kv = next(i for i, line in enumerate(lines) if line.startswith('| `kv`'))
        model = next(i for i, line in enumerate(lines) if line.startswith('| `model`'))
        lines[kv], lines[model] = lines[model], lines[kv]
        found = problems('\n'.join(lines))
        self.assertEqual(len(found), 1, found)
        self.assertIn('`model` uses kv, whose row is not above it', found[0])

    def test_no_table_fails(self):
        self.assertEqual(len(problems('# arch\n\nno table here\n')), 1 + len(GRAPH))

    def test_wrong_cell_count_fails(self):
        found = problems(TRUE_TABLE.replace('| `quant` | block formats | core |', '| `quant` | core |'))
        self.assertTrue(any('needs 3 cells, has 2' in p for p in found), found)


class MainTest(unittest.TestCase):
    """main() on the real includes, with a copy of the real ARCHITECTURE.md whose eval row drops one used module."""

    def run_main(self, architecture_text):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, 'ARCHITECTURE.md')
            with open(path, 'w', encoding='utf-8') as f:
                f.write(architecture_text)
            saved, module_graph.ARCHITECTURE = module_graph.ARCHITECTURE, path
            out = io.StringIO()
            try:
                with contextlib.redirect_stdout(out):
                    status = module_graph.main()
            finally:
                module_graph.ARCHITECTURE = saved
        return status, out.getvalue()

    def test_exit_status(self):
        real = open(module_graph.ARCHITECTURE, encoding='utf-8').read()
        row = next(line for line in real.split('\n') if line.startswith('| `eval` |'))
        uses = row.rstrip(' |').rsplit('|', 1)[1].strip().split(', ')
        self.assertIn('loader', uses)
        broken = real.replace(row, row.replace(', loader', ''))
        status, out = self.run_main(broken)
        self.assertEqual(status, 1, out)
        self.assertIn('`eval` includes loader/', out)


if __name__ == '__main__':
    unittest.main()
