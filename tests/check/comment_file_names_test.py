#!/usr/bin/env python3
"""Tests of scripts/check/comment_file_names.py on synthetic files and trees: the file names of //, /* */, # and Python
comments are found and checked (by path suffix, or as a glob), code, URLs, absolute and home paths and the listed
other projects' files are not, and a name no file matches is reported with its line.
Run by ctest (comment_file_names_checker) and by hand: python3 tests/check/comment_file_names_test.py
"""
import importlib.util
import os
import unittest

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'scripts', 'check',
                     'comment_file_names.py')
_SPEC = importlib.util.spec_from_file_location('comment_file_names', _PATH)
names = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(names)

TREE = ['src/kernels/avx2/matmul_int4x8.cc', 'src/quant/block_q4_0x8.h', 'src/quant/block_awq_int4x8.h',
        'scripts/peer/llama.sh', 'docs/ARCHITECTURE.md']


def stale(path, text):
    return names.stale_names([(path, text)], TREE)


class CommentFileNamesTest(unittest.TestCase):
    def test_existing_names_pass(self):
        text = ('// as in matmul_int4x8.cc and kernels/avx2/matmul_int4x8.cc (quant/block_*x8.h);\n'
                '/* see docs/ARCHITECTURE.md and llama.sh. */\n'
                'int x = 0;  // llama.cpp\'s ggml-quants.c does the same\n')
        self.assertEqual(stale('src/a.cc', text), [])

    def test_missing_names_fail_with_their_line(self):
        text = ('#include "quant/gone.h"\n'  # code, not a comment
                '// the kernel (kernels/avx2/matmul_awq_int4x8.cc)\n'
                'int y;\n'
                '/* one\n'
                '   weight_type_kernels.cc fills it */\n')
        self.assertEqual(stale('src/k.h', text),
                         ['src/k.h:2: kernels/avx2/matmul_awq_int4x8.cc', 'src/k.h:5: weight_type_kernels.cc'])

    def test_folder_must_match_too(self):
        self.assertEqual(stale('src/a.cc', '// avx512/matmul_int4x8.cc\n'), ['src/a.cc:1: avx512/matmul_int4x8.cc'])

    def test_globs(self):
        self.assertEqual(stale('src/a.cc', '// block_*x8.h\n'), [])
        self.assertEqual(stale('src/a.cc', '// block_*x16.h\n'), ['src/a.cc:1: block_*x16.h'])

    def test_python_comments_only(self):
        text = 'x = "# gone.cc"  # see DESIGN.md\n# gone.h\n'
        self.assertEqual(stale('scripts/x.py', text), ['scripts/x.py:1: DESIGN.md', 'scripts/x.py:2: gone.h'])

    def test_hash_comments_of_scripts_and_cmake(self):
        self.assertEqual(stale('scripts/x.sh', 'echo "$#"  # see DESIGN.md\nrun gone.py\n'),
                         ['scripts/x.sh:1: DESIGN.md'])
        self.assertEqual(stale('src/CMakeLists.txt', '# (see DESIGN.md)\nadd_library(x gone.cc)\n'),
                         ['src/CMakeLists.txt:1: DESIGN.md'])

    def test_urls_absolute_and_home_paths_are_not_checked(self):
        text = ('// https://github.com/ggml-org/llama.cpp/blob/master/src/unicode.cpp\n'
                '// ~/.cache/pagoda-peer/llama.cpp/tools/server.cpp and /usr/include/stdio.h\n')
        self.assertEqual(stale('src/a.cc', text), [])

    def test_files_without_a_known_comment_syntax_are_skipped(self):
        self.assertEqual(stale('tests/data/story.txt', '// gone.cc\n'), [])


if __name__ == '__main__':
    unittest.main()
