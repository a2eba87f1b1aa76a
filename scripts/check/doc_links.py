#!/usr/bin/env python3
"""Checks the relative links of the documentation: README.md and docs/*.md.

Every markdown link [text](target) whose target is not a URL must name a file or folder that exists (relative to
the page that links it), and a #anchor must name a heading of the page it points at, slugged as GitHub slugs
headings. Links inside code spans and fenced code blocks are not links and are skipped. Prints each broken link as
FILE:LINE: target: why, and exits 1 if there is any.

Usage: scripts/check/doc_links.py [REPO_ROOT]   (default: the repository this script is in)
A ctest (doc_links, tests/CMakeLists.txt). Before the pages, it checks its own parser and slugs on a few fixed
cases, so a checker that finds no links at all fails instead of passing.
"""
import re
import sys
from pathlib import Path

LINK = re.compile(r"(?<!\!)\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(?:<([^<>]*)>|([^()\s]*(?:\([^()\s]*\)[^()\s]*)*))"
                  r"(?:\s+\"[^\"]*\")?\s*\)")
IMAGE = re.compile(r"!\[[^\]]*\]\(\s*(?:<([^<>]*)>|([^()\s]+))(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")  # http:, https:, mailto:, ...


def strip_code_spans(line):
    """The line with each code span blanked out (same length, so columns stay)."""
    return CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)


def prose_lines(text):
    """(line number, line) for the lines outside fenced code blocks and indented code blocks."""
    in_fence = False
    previous_blank = True
    for number, line in enumerate(text.split("\n"), start=1):
        if FENCE.match(line):
            in_fence = not in_fence
            previous_blank = False
            continue
        if in_fence:
            continue
        indented_code = previous_blank and (line.startswith("    ") or line.startswith("\t")) and line.strip()
        blank = not line.strip()
        if indented_code:
            # An indented block continues over its lines until a blank line; list items' continuation lines are
            # indented by two spaces here, never four, so four spaces after a blank line is code.
            previous_blank = True
            continue
        previous_blank = blank
        yield number, line


def slug(heading_text):
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces to hyphens."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading_text)  # links and images: their text
    text = text.replace("`", "")
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML tags
    text = re.sub(r"(\*\*|__|\*)", "", text)
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path, cache={}):
    if path not in cache:
        seen = {}
        anchors = set()
        for _, line in prose_lines(path.read_text(encoding="utf-8")):
            m = HEADING.match(line)
            if not m:
                continue
            base = slug(m.group(2))
            n = seen.get(base, 0)
            seen[base] = n + 1
            anchors.add(base if n == 0 else f"{base}-{n}")
        cache[path] = anchors
    return cache[path]


def links_of(text):
    """(line number, target) of every link and image outside code."""
    for number, line in prose_lines(text):
        line = strip_code_spans(line)
        for pattern in (LINK, IMAGE):
            for m in pattern.finditer(line):
                yield number, m.group(1) if m.group(1) is not None else m.group(2)


def check_page(page, root):
    problems = []
    for number, target in links_of(page.read_text(encoding="utf-8")):
        where = f"{page.relative_to(root)}:{number}: {target}"
        if not target:
            problems.append(f"{where}: empty link target")
            continue
        if EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        destination = (page.parent / path_part).resolve() if path_part else page
        if path_part.startswith("/"):
            problems.append(f"{where}: an absolute path (links must be relative to the page)")
            continue
        if not destination.exists():
            problems.append(f"{where}: no such file")
            continue
        try:
            destination.relative_to(root.resolve())
        except ValueError:
            problems.append(f"{where}: outside the repository")
            continue
        if anchor and destination.suffix == ".md":
            if anchor not in anchors_of(destination):
                problems.append(f"{where}: no heading with anchor #{anchor} in {destination.relative_to(root.resolve())}")
    return problems


def self_check():
    """The parser and the slugs on fixed cases (GitHub's anchors for these headings, checked by hand)."""
    cases = {
        "Decode and prefill against llama.cpp": "decode-and-prefill-against-llamacpp",
        "Reports (`--report DIR`)": "reports---report-dir",
        "`pagoda grammar`: the constraints without a model": "pagoda-grammar-the-constraints-without-a-model",
        "pagoda bench isa": "pagoda-bench-isa",
        "pagoda's own tensor types in GGUF": "pagodas-own-tensor-types-in-gguf",
        "**Bold** and [a link](x.md)": "bold-and-a-link",
    }
    failures = [f"slug({h!r}) = {slug(h)!r}, expected {want!r}" for h, want in cases.items() if slug(h) != want]
    text = "\n".join([
        "See [a](a.md) and [b](b.md#x), `[not](code.md)`, ![img](i.png) and [web](https://example.com).",
        "",
        "    [indented](code.md)",
        "",
        "```",
        "[fenced](code.md)",
        "```",
        "[c](<c d.md>) [e](f.md \"title\")",
    ])
    got = [t for _, t in links_of(text)]
    want = ["a.md", "b.md#x", "https://example.com", "i.png", "c d.md", "f.md"]
    if sorted(got) != sorted(want):
        failures.append(f"links_of found {got}, expected {want}")
    return failures


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent.parent
    failures = self_check()
    if failures:
        print("doc_links: the checker itself is wrong:\n  " + "\n  ".join(failures))
        return 1
    pages = [root / "README.md"] + sorted((root / "docs").glob("*.md"))
    missing = [p for p in pages if not p.exists()]
    if missing:
        print("doc_links: missing pages: " + ", ".join(str(p) for p in missing))
        return 1
    problems = []
    num_links = 0
    for page in pages:
        num_links += sum(1 for _ in links_of(page.read_text(encoding="utf-8")))
        problems += check_page(page, root)
    if problems:
        print(f"doc_links: {len(problems)} broken links:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"doc_links: {num_links} links in {len(pages)} pages, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
