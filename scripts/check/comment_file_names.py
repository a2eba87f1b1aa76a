#!/usr/bin/env python3
"""Comments name files that exist: every file name a comment in the repository's code mentions (`foo.h`,
`kernels/avx2/x.cc`, `block_*x8.h`; C++, JavaScript, shell, Python, CMake and Makefile comments) must be a file
somewhere in the repository, or one of the other projects' files listed in EXTERNAL.

A name with a folder matches a path that ends with it; one with `*` is a glob. Absolute and home paths (`/proc/...`,
`~/.cache/...`) and URLs are not checked. Fails (exit 1) naming each comment line whose file is gone.
Run by ctest (comment_file_names) and by hand: python3 scripts/check/comment_file_names.py
"""
import fnmatch
import io
import os
import re
import subprocess
import sys
import tokenize

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
SKIPPED_DIRS = {'.git', 'node_modules', '.cache', 'Testing'}

# Files of other projects that comments cite as sources, and system headers; not expected in this repository.
EXTERNAL = {
    'llama.cpp', 'llama2.c', 'whisper.cpp',  # projects named like files
    'ggml-quants.c', 'ggml-common.h', 'src/llama-vocab.cpp', 'grammars/README.md', 'convert_hf_to_gguf.py',  # llama.cpp's
    'constants.py',  # gguf-py's
    'benchmark_serving.py',  # vLLM's
    'mpi.h', 'asm/prctl.h', 'avx512fintrin.h',  # system and compiler headers
    'a.cc', 'b.cc',  # placeholders in a usage line
}
NAME = re.compile(r'(?<![\w./*~-])([\w./*~-]*[\w*]\.(?:h|hpp|cc|cpp|c|py|sh|mjs|md))(?![\w-])')
URL = re.compile(r'\w+://\S+')
SLASH_COMMENT = ('.h', '.hpp', '.cc', '.cpp', '.c', '.mjs', '.js')
HASH_COMMENT = ('.sh', '.cmake')
HASH_COMMENT_NAMES = ('CMakeLists.txt', 'Makefile', 'run')


def comment_lines(path, text):
    """(line number, comment text) for each line's comments: // and /* */ in C++ and JavaScript, # in shell,
    CMake and Makefiles, Python's comment tokens; nothing for other files."""
    name = os.path.basename(path)
    out = []
    if name.endswith('.py'):
        try:
            for token in tokenize.generate_tokens(io.StringIO(text).readline):
                if token.type == tokenize.COMMENT:
                    out.append((token.start[0], URL.sub(' ', token.string[1:])))
        except (tokenize.TokenError, SyntaxError):
            pass
        return out
    if name.endswith(SLASH_COMMENT):
        in_block = False
        for number, line in enumerate(text.split('\n'), 1):
            line = URL.sub(' ', line)
            parts = []
            while line:
                if in_block:
                    end = line.find('*/')
                    parts.append(line if end < 0 else line[:end])
                    if end < 0:
                        break
                    line, in_block = line[end + 2:], False
                    continue
                slash, block = line.find('//'), line.find('/*')
                if slash >= 0 and (block < 0 or slash < block):
                    parts.append(line[slash + 2:])
                    break
                if block < 0:
                    break
                line, in_block = line[block + 2:], True
            if parts:
                out.append((number, ' '.join(parts)))
    elif name.endswith(HASH_COMMENT) or name in HASH_COMMENT_NAMES:
        for number, line in enumerate(text.split('\n'), 1):
            match = re.search(r'(?:^|\s)#(?!!)(.*)', URL.sub(' ', line))
            if match:
                out.append((number, match.group(1)))
    return out


def names_in(comment):
    return [n.rstrip('.') for n in NAME.findall(comment)]


def exists(name, paths):
    """Whether the name is one of the paths (relative to the root, '/'-separated), a suffix of one after a '/', or,
    with a '*', a glob one of them matches."""
    if '*' in name:
        return any(fnmatch.fnmatchcase(p, name) or fnmatch.fnmatchcase(p, '*/' + name) for p in paths)
    return any(p == name or p.endswith('/' + name) for p in paths)


def stale_names(files, paths):
    """files: (relative path, text) of the checked files; paths: every file of the tree. Returns 'path:line: name'
    for each name no file matches."""
    problems = []
    for path, text in files:
        for number, comment in comment_lines(path, text):
            for name in names_in(comment):
                if name.startswith(('/', '~')) or name in EXTERNAL or exists(name, paths):
                    continue
                problems.append(f'{path}:{number}: {name}')
    return problems


def tree(root):
    """The repository's files: git's tracked and not-ignored ones (so no build folder, whatever its name), or, outside a
    git checkout, every file but those under .git, node_modules and build*."""
    try:
        listed = subprocess.run(['git', '-C', root, 'ls-files', '-z', '--cached', '--others', '--exclude-standard'],
                                capture_output=True, check=True).stdout.decode('utf-8').split('\0')
        return sorted(p for p in listed if p and os.path.isfile(os.path.join(root, p)))
    except (OSError, subprocess.CalledProcessError):
        pass
    paths = []
    for dirpath, dirnames, files in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith('build')]
        for name in files:
            paths.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, '/'))
    return sorted(paths)


def main():
    paths = tree(ROOT)
    files = []
    for path in paths:
        name = os.path.basename(path)
        if name.endswith(SLASH_COMMENT + HASH_COMMENT + ('.py',)) or name in HASH_COMMENT_NAMES:
            files.append((path, open(os.path.join(ROOT, path), encoding='utf-8').read()))
    problems = stale_names(files, paths)
    for p in problems:
        print('comment names a missing file: ' + p)
    if not problems:
        print(f'comment file names: {len(files)} files checked, every file a comment names exists')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
