#!/usr/bin/env python3
"""The repository stands alone: no tracked file names a path outside it (a sibling folder reached with two dots, the
machine's own work tree), so a clone from the project's home builds, tests and reproduces its figures by itself.
Fails (exit 1) naming each offending line. Run by ctest (self_contained) and by hand:
python3 scripts/check/self_contained.py
"""
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
# Spelled in pieces so that this file does not match itself.
OUTSIDE = re.compile(r'\.\./' + 'shared\\b|(?<![\\w.~])/' + 'work/')


def tracked_files():
    out = subprocess.run(['git', '-C', ROOT, 'ls-files', '-z'], capture_output=True, check=True).stdout
    return [p for p in out.decode().split('\0') if p]


def main():
    bad = []
    for rel in tracked_files():
        path = os.path.join(ROOT, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        try:
            with open(path, encoding='utf-8') as f:
                for number, line in enumerate(f, 1):
                    if OUTSIDE.search(line):
                        bad.append(f'{rel}:{number}: {line.strip()[:160]}')
        except UnicodeDecodeError:
            continue  # binary files (models, vocabularies)
    for line in bad:
        print(f'path outside the repository: {line}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
