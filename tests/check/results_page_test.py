#!/usr/bin/env python3
"""Unit tests of scripts/bench/results.py's page rendering: a block is filled from its JSON, a stale page, a missing
or unreferenced JSON and a malformed row all fail the check."""
import importlib.util
import json
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("results", ROOT / "scripts" / "bench" / "results.py")
results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(results)

RESULT = {"id": "demo", "command": "scripts/bench/demo.sh", "measured": "2026-12-06", "pagoda": "abc1234",
          "machine": "lscpu \"AMD EPYC\", 2 cores", "peer": None, "columns": ["a", "b"], "rows": [["1", "2"]]}


class ResultsPageTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.root = Path(self.dir.name)
        (self.root / "results").mkdir()
        self.page = self.root / "page.md"

    def tearDown(self):
        self.dir.cleanup()

    def write(self, page, result=RESULT):
        self.page.write_text(page)
        if result is not None:
            (self.root / "results" / f"{result['id']}.json").write_text(json.dumps(result))

    def render(self, check):
        return results.render(check, self.page, self.root / "results")

    def test_a_block_is_filled_from_its_json_and_then_checks_clean(self):
        self.write("intro\n<!-- results: demo -->\n<!-- /results -->\nafter\n")
        self.assertEqual(self.render(check=True), 1)  # stale: the block is empty
        self.assertEqual(self.render(check=False), 0)
        text = self.page.read_text()
        self.assertIn("| a | b |\n|---|---|\n| 1 | 2 |\n<!-- /results -->", text)
        self.assertIn("recorded 2026-12-06, pagoda abc1234. `scripts/bench/demo.sh`:", text)
        self.assertTrue(text.startswith("intro\n") and text.endswith("after\n"))
        self.assertEqual(self.render(check=True), 0)

    def test_a_hand_edited_table_fails_the_check(self):
        self.write("<!-- results: demo -->\n<!-- /results -->\n")
        self.render(check=False)
        self.page.write_text(self.page.read_text().replace("| 1 | 2 |", "| 1 | 3 |"))
        self.assertEqual(self.render(check=True), 1)

    def test_a_missing_json_fails(self):
        self.write("<!-- results: absent -->\n<!-- /results -->\n", result=None)
        self.assertEqual(self.render(check=False), 1)

    def test_a_json_in_no_block_fails(self):
        self.write("no blocks\n")
        self.assertEqual(self.render(check=True), 1)

    def test_after_a_record_the_other_blocks_are_filled_and_the_check_still_fails(self):
        # What record renders with: a table lacking its block (or a block its file) warns and the rest is written,
        # so a script recording several tables goes on.
        self.write("<!-- results: demo -->\n<!-- /results -->\n<!-- results: absent -->\n<!-- /results -->\n")
        self.assertEqual(results.render(False, self.page, self.root / "results", strict=False), 0)
        self.assertIn("| 1 | 2 |", self.page.read_text())
        self.assertEqual(self.render(check=True), 1)

    def test_a_row_of_the_wrong_width_fails(self):
        self.write("<!-- results: demo -->\n<!-- /results -->\n", dict(RESULT, rows=[["1"]]))
        self.assertEqual(self.render(check=False), 1)


if __name__ == "__main__":
    unittest.main()
