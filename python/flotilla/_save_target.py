"""Where a save goes. The C++ core writes a directory under a temporary
name and swaps it into place, which replaces everything in it; a directory
that cannot be swapped — the working directory or one above it, as in
Paddle's ``fluid.io.save_persistables(exe, "./")`` — instead receives the
saved files one by one, each renamed into place, and keeps its other files."""

import contextlib
import os
import shutil
import tempfile
from typing import Iterator


def _holds_cwd(dirname: str) -> bool:
    target = os.path.realpath(dirname)
    cwd = os.path.realpath(os.getcwd())
    return cwd == target or cwd.startswith(target.rstrip(os.sep) + os.sep)


@contextlib.contextmanager
def save_target(dirname: str) -> Iterator[str]:
    """Yields the directory to hand to the C++ save for ``dirname``."""
    if not _holds_cwd(dirname):
        yield dirname
        return
    staging = tempfile.mkdtemp(prefix=".flotilla-save-", dir=dirname)
    try:
        inner = os.path.join(staging, "saved")
        yield inner
        if os.path.isdir(inner):  # in a fleet only trainer 0 writes
            for name in os.listdir(inner):
                src, dst = os.path.join(inner, name), os.path.join(dirname, name)
                if os.path.isdir(dst) and not os.path.islink(dst):
                    shutil.rmtree(dst)
                os.replace(src, dst)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


__all__ = ["save_target"]
