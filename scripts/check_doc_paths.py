#!/usr/bin/env python3
"""Fails when a document cites a file path of the repository that does not exist.

Usage: check_doc_paths.py [REPO_ROOT]

Reads every tracked Markdown file and checks each path it cites — in a code
span or a link target — under one of the repository's top-level folders
(``src/``, ``include/``, ``tests/``, ``bench/``, ``docs/``, ...), or a layer's
file cited from inside the layer (``fleet/heter_split.h``). A program may be
cited by name (``tests/x_test`` for ``tests/x_test.cc``); globs (``*``) must
match at least one file; brace lists (``a{,_b}.cc``) are expanded. Text inside
double quotes (JSON values such as ``"python/cpp"``) is not a citation.
"""

import glob
import itertools
import os
import re
import subprocess
import sys
from typing import Iterator, List

TOP_DIRS = ("src", "include", "tests", "bench", "docs", "scripts", "examples", "python",
            "tools", "deploy", "cmake", ".ci")
PATH_RE = re.compile(r'(?<![\w./"-])((?:%s)/[\w./*{},+-]*[\w*}])' % "|".join(re.escape(d) for d in TOP_DIRS))

# A layer's file cited from inside the layer: `fleet/heter_split.h` is
# src/fleet/heter_split.h or include/flotilla/fleet/heter_split.h.
LAYERS = ("common", "core", "trace", "roles", "launch", "comm", "ps", "framework", "io", "api",
          "fleet", "models")
LAYER_RE = re.compile(r'(?<![\w./"-])((?:%s)/[\w./{},+-]*\.(?:h|cc))\b' % "|".join(LAYERS))
LAYER_ROOTS = ("src", "include/flotilla")


def expand_braces(path: str) -> List[str]:
    """``a{,_b}.cc`` -> ``a.cc``, ``a_b.cc`` (one level, any number of groups)."""
    parts = re.split(r"\{([^{}]*)\}", path)
    choices = [[p] if i % 2 == 0 else p.split(",") for i, p in enumerate(parts)]
    return ["".join(c) for c in itertools.product(*choices)]


# Where a document cites: code spans and link targets.
CITATION_RE = re.compile(r"`([^`]+)`|\]\(([^)\s]+)\)")


def citations(line: str) -> Iterator[str]:
    for match in CITATION_RE.finditer(line):
        yield match.group(1) or match.group(2)


def cited_paths(text: str) -> Iterator[List[str]]:
    """Each path cited in ``text`` (a code span or link target), as the paths
    any one of which it may name."""
    for span in citations(text):
        yield from paths_in(span)


def paths_in(text: str) -> Iterator[List[str]]:
    for match in PATH_RE.finditer(text):
        for path in expand_braces(match.group(1).rstrip(".,")):
            yield [path]
    for match in LAYER_RE.finditer(text):
        for path in expand_braces(match.group(1)):
            yield [f"{root}/{path}" for root in LAYER_ROOTS]


# A program is cited by its name: tests/x_test is built from tests/x_test.cc.
PROGRAM_SOURCES = ("", ".cc", ".py", ".sh")


def exists(root: str, path: str) -> bool:
    full = os.path.join(root, path)
    if "*" in path:
        return bool(glob.glob(full))
    return any(os.path.exists(full + ext) for ext in PROGRAM_SOURCES)


def documents(root: str) -> List[str]:
    out = subprocess.run(["git", "-C", root, "ls-files", "*.md"], capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout: the usual places
        return ["README.md"] + sorted(glob.glob("docs/*.md", root_dir=root))
    return out.stdout.split()


def main(argv: List[str]) -> int:
    root = argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    missing = []
    for doc in documents(root):
        with open(os.path.join(root, doc), encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                for candidates in cited_paths(line):
                    if not any(exists(root, path) for path in candidates):
                        missing.append(f"{doc}:{lineno}: cites {' or '.join(candidates)}, "
                                       "which is not in the tree")
    for m in missing:
        print(m)
    print(f"check_doc_paths: {len(missing)} missing path(s)")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
