#!/usr/bin/python3
"""Checks every #include against the layer rule of docs/layers.md.

Usage: check_layers.py [SOURCE_DIR]   (default: the checkout holding this script)

Reads the order (the ```layers block) from docs/layers.md, then every C++ file under src/, include/flotilla/,
python/src/, tools/ and examples/. An include is one of
  "flotilla/L/file.h"  a public header of layer L: allowed at or above L;
  "L/file.h"           a private header of layer L (L a layer name): allowed
                       only in L's own folder, and never in a public header;
  anything else        a file beside the includer or a library's: not checked.
Prints one line per violation (file:line, the header, the rule) and exits 1
when there is any, else prints a summary and exits 0.
"""
import os
import re
import sys

RULES = "docs/layers.md"
SUFFIXES = (".h", ".hpp", ".cc", ".cpp", ".cxx", ".c", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def block(text, name):
    """The lines of the fenced block ```name in `text`, without comments."""
    m = re.search(r"^```" + name + r"\n(.*?)^```", text, re.S | re.M)
    if m is None:
        sys.exit(f"{RULES}: no ```{name} block")
    lines = (line.split("#", 1)[0].split() for line in m.group(1).splitlines())
    return [fields for fields in lines if fields]


def read_rules(root):
    with open(os.path.join(root, RULES), encoding="utf-8") as f:
        text = f.read()
    order = block(text, "layers")  # [name, folder]
    layers = {name: rank for rank, (name, _) in enumerate(order)}
    folders = [(folder.rstrip("/") + "/", name) for name, folder in order]
    return layers, folders


def owner(path, layers, folders):
    """(layer, is_public_header) of a repository path, or (None, False)."""
    m = re.match(r"include/flotilla/([^/]+)/", path)
    if m:
        return (m.group(1) if m.group(1) in layers else None), True
    for folder, name in folders:
        if path.startswith(folder):
            return name, False
    return None, False


def files(root, folders):
    tops = ["include/flotilla"] + [folder.rstrip("/") for folder, _ in folders]
    for top in sorted(set(tops)):
        for dirpath, dirnames, names in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(names):
                if name.endswith(SUFFIXES):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def check(root):
    layers, folders = read_rules(root)
    problems, count = [], 0
    for path in files(root, folders):
        mine, public = owner(path, layers, folders)
        if mine is None:
            problems.append(f"{path}: in no layer of {RULES}'s order (rule: every file "
                            "belongs to one layer)")
            continue
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if m is None:
                continue
            header, where = m.group(1), f"{path}:{number}"
            parts = header.split("/")
            if len(parts) < 2:
                continue
            count += 1
            if parts[0] == "flotilla" and len(parts) > 2:
                theirs = parts[1]
                if theirs not in layers:
                    problems.append(f'{where}: includes "{header}": no layer "{theirs}" in '
                                    f"{RULES} (rule: public headers live in "
                                    "include/flotilla/<layer>/)")
                elif layers[theirs] > layers[mine]:
                    problems.append(f'{where}: includes "{header}", a header of layer '
                                    f"{theirs}, above {mine} (rule: a layer includes only "
                                    f"layers below it; order in {RULES})")
                continue
            theirs = parts[0]
            if theirs not in layers:
                continue
            if public:
                problems.append(f'{where}: includes "{header}", a private header of layer '
                                f"{theirs}, in a public header (rule: include/flotilla/ "
                                f"headers include only public ones; {RULES})")
            elif theirs != mine:
                problems.append(f'{where}: includes "{header}", a private header of layer '
                                f"{theirs}, from layer {mine} (rule: another layer's "
                                f"headers only through include/flotilla/{theirs}/; {RULES})")
    return problems, count


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    problems, count = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) break the layer rule ({RULES})")
        return 1
    print(f"layer rule holds: {count} includes checked ({RULES})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
