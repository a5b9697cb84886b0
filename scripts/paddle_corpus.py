#!/usr/bin/env python3
"""Runs a corpus of PaddlePaddle's own CPU static-graph scripts under the
Paddle compatibility switch and reports, as JSON lines, which pass.

The scripts are Paddle's code and are not part of Flotilla: put copies in a
directory of your own (``--ref-dir``), named as in the manifest
(``scripts/paddle_corpus.json``). Each manifest entry says::

    {"script": "test_fleet_base.py",
     "paddle_path": "python/paddle/fluid/tests/unittests/test_fleet_base.py",
     "commit": "<Paddle commit the copy was taken at>",
     "how": "unittest" | "script",
     "data": ["mnist", "uci_housing", ...],   # local datasets it reads
     "timeout": 300}

``how`` is how Paddle's own harness runs the file: ``unittest`` is
``python -m unittest <module>`` (Paddle's ``py_test_modules``), ``script``
is ``python <file>`` (``py_test``). Either way the interpreter is
``/usr/bin/python3 -m flotilla.paddle_compat``, in a fresh working
directory, with the script's directory on ``PYTHONPATH`` and nothing else of
the script changed. Datasets are never downloaded: ``--data-dir`` (default:
made here by :func:`make_local_datasets`) is passed as
``FLOTILLA_DATA_HOME`` and ``paddle.dataset.*`` reads Paddle's file layout
there.

Usage::

    PYTHONPATH=build/python python3 scripts/paddle_corpus.py --ref-dir /work/paddle_ref
    ... --only test_fleet_base.py,test_lod_tensor.py --verbose

One JSON line per script, then a summary line
``{"summary": "paddle_corpus", "passed": P, "total": T, ...}``.
The exit status is 0 when at least ``--min-pass-rate`` of the scripts pass.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MANIFEST = os.path.join(HERE, "paddle_corpus.json")
PYTHON = "/usr/bin/python3"
UCI_HOUSING_CSV = "/usr/lib/python3/dist-packages/sklearn/datasets/data/boston_house_prices.csv"

_RAN = re.compile(r"^Ran (\d+) tests? in", re.M)
_FAILED = re.compile(r"^FAILED \(([^)]*)\)", re.M)
_OK = re.compile(r"^OK(?: \(([^)]*)\))?\s*$", re.M)


def load_manifest(path: str) -> List[Dict[str, Any]]:
    """The manifest's entries, checked for the fields every entry needs."""
    with open(path, encoding="utf-8") as f:
        entries = json.load(f)["scripts"]
    for e in entries:
        for key in ("script", "paddle_path", "how"):
            if key not in e:
                raise ValueError(f"{path}: entry {e!r} lacks {key!r}")
        if e["how"] not in ("unittest", "script"):
            raise ValueError(f"{path}: {e['script']}: how must be 'unittest' or 'script', got {e['how']!r}")
    return entries


def make_local_datasets(data_dir: str) -> None:
    """Writes small local datasets in Paddle's cache layout under
    ``data_dir`` (what ``paddle.dataset.*`` reads with
    FLOTILLA_DATA_HOME): MNIST's four idx files and a CIFAR-10 archive made
    from sklearn's digits, and the UCI housing csv Debian's python3-sklearn
    ships."""
    import shutil
    from flotilla.dataset import cifar, mnist
    mnist.write_local_copy(os.path.join(data_dir, "mnist"), train_size=2000, test_size=500)
    cifar.write_local_copy(os.path.join(data_dir, "cifar"), train_size=640, test_size=256)
    shutil.copy(UCI_HOUSING_CSV, data_dir)


def _counts(text: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    m = _RAN.search(text)
    if m:
        out["tests"] = int(m.group(1))
    for m in (_FAILED.search(text), _OK.search(text)):
        if m and m.group(1):
            for part in m.group(1).split(","):
                key, _, value = part.strip().partition("=")
                if value.isdigit():
                    out[key] = int(value)
    return out


def _first_error(text: str) -> str:
    """The last exception line of the output (what failed), or ''."""
    lines = [ln for ln in text.splitlines() if re.match(r"^[\w.]+(Error|Exception|Exit)\b.*", ln)]
    return lines[-1][:300] if lines else ""


def run_one(entry: Dict[str, Any], ref_dir: str, data_dir: str, pythonpath: str,
            default_timeout: float) -> Dict[str, Any]:
    """Runs one script as its entry says; the result as a dict (one JSON
    line): status pass/fail/timeout/absent, the unittest counts, seconds and
    the last error line."""
    script = os.path.join(ref_dir, entry["script"])
    result: Dict[str, Any] = {"script": entry["script"], "paddle_path": entry["paddle_path"],
                              "how": entry["how"]}
    if not os.path.isfile(script):
        result.update(status="absent", detail=f"no copy at {script}")
        return result
    env = dict(os.environ)
    # Absolute: the script runs in a fresh working directory.
    paths = [os.path.dirname(script)] + [os.path.abspath(p) for p in pythonpath.split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env["FLOTILLA_DATA_HOME"] = data_dir
    module = os.path.splitext(entry["script"])[0]
    if entry["how"] == "unittest":
        cmd = [PYTHON, "-m", "flotilla.paddle_compat", "-m", "unittest", module]
    else:
        cmd = [PYTHON, "-m", "flotilla.paddle_compat", script]
    timeout = float(entry.get("timeout", default_timeout))
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="paddle_corpus_") as work:
        try:
            proc = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=timeout, text=True, errors="replace")
            text, rc = proc.stdout, proc.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            text = out if isinstance(out, str) else out.decode(errors="replace")
            rc = None
    result["seconds"] = round(time.monotonic() - start, 2)
    result.update(_counts(text))
    if rc is None:
        result["status"] = "timeout"
    elif rc == 0 and not (entry["how"] == "unittest" and result.get("tests", 0) == 0):
        result["status"] = "pass"
    else:
        result["status"] = "fail"
        result["returncode"] = rc
    if result["status"] != "pass":
        result["error"] = _first_error(text)
    result["_output"] = text
    return result


def main(argv: Optional[List[str]] = None) -> int:
    """Runs the corpus and prints one JSON line per script and a summary."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ref-dir", required=True, help="directory with the copies of Paddle's scripts")
    ap.add_argument("--manifest", default=DEFAULT_MANIFEST)
    ap.add_argument("--data-dir", help="local datasets in Paddle's layout (default: made in a temporary dir)")
    ap.add_argument("--pythonpath", default=os.environ.get("PYTHONPATH", ""),
                    help="where the flotilla package is (default: $PYTHONPATH)")
    ap.add_argument("--only", help="comma-separated script names to run")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per script unless the entry says")
    ap.add_argument("--verbose", action="store_true", help="print a failing script's output to stderr")
    ap.add_argument("--min-pass-rate", type=float, default=0.9)
    args = ap.parse_args(argv)

    entries = load_manifest(args.manifest)
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e["script"] in wanted]
    if args.pythonpath:
        sys.path.insert(0, args.pythonpath)
    with tempfile.TemporaryDirectory(prefix="paddle_corpus_data_") as tmp_data:
        data_dir = args.data_dir or tmp_data
        if not args.data_dir and any(e.get("data") for e in entries):
            make_local_datasets(data_dir)
        passed = 0
        for entry in entries:
            result = run_one(entry, args.ref_dir, data_dir, args.pythonpath, args.timeout)
            output = result.pop("_output", "")
            if result["status"] == "pass":
                passed += 1
            elif args.verbose:
                sys.stderr.write(f"----- {entry['script']} -----\n{output[-6000:]}\n")
            print(json.dumps(result), flush=True)
    total = len(entries)
    rate = passed / total if total else 0.0
    print(json.dumps({"summary": "paddle_corpus", "passed": passed, "total": total,
                      "pass_rate": round(rate, 3)}), flush=True)
    return 0 if rate >= args.min_pass_rate else 1


if __name__ == "__main__":
    sys.exit(main())
