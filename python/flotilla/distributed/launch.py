"""``python3 -m flotilla.distributed.launch [options] train.py [args...]``:
the launcher with exactly the flags of ``flotilla launch`` (Paddle's
``python -m paddle.distributed.launch``). A ``.py`` training script runs
with this interpreter, with this Flotilla package importable.

The launcher is the C++ ``flotilla`` program; this module finds it
(``$FLOTILLA_BIN``, the build's ``bin/flotilla`` next to an in-tree package,
or on PATH) and replaces this process with it.
"""

import os
import shutil
import sys
from typing import List, NoReturn, Optional

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def launcher_path() -> str:
    """The ``flotilla`` program: $FLOTILLA_BIN, the build's (BUILD/bin next
    to BUILD/python/flotilla), the package's own (pip), or the one on PATH. Raises FileNotFoundError
    saying where it looked."""
    in_tree = os.path.join(os.path.dirname(os.path.dirname(_PACKAGE_DIR)), "bin", "flotilla")
    installed = os.path.join(_PACKAGE_DIR, "bin", "flotilla")  # pip install . puts it there
    candidates = [os.environ.get("FLOTILLA_BIN"), in_tree, installed, shutil.which("flotilla")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError(f"the flotilla launcher was not found (looked at $FLOTILLA_BIN, {in_tree} "
                            "and PATH): set FLOTILLA_BIN, or build or install Flotilla")


def launcher_env(env: Optional[dict] = None) -> dict:
    """The launcher's environment: this interpreter for .py scripts and this
    package importable by them."""
    env = dict(os.environ if env is None else env)
    env.setdefault("FLOTILLA_PYTHON", sys.executable)
    root = os.path.dirname(_PACKAGE_DIR)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if root not in paths:
        env["PYTHONPATH"] = os.pathsep.join([root] + paths)
    return env


def exec_launcher(subcommand: str, args: List[str]) -> NoReturn:
    """Replaces this process with ``flotilla <subcommand> args...``."""
    path = launcher_path()
    os.execve(path, [path, subcommand] + list(args), launcher_env())


def main(argv: Optional[List[str]] = None) -> NoReturn:
    """Entry point of ``python3 -m flotilla.distributed.launch``."""
    exec_launcher("launch", sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    main()
