"""Shared fixtures of the Python package's tests (run by ctest with
PYTHONPATH=build/python and FLOTILLA_BUILD_DIR set)."""

import os
import subprocess
import sys
from typing import Dict, List, Optional

import pytest

import flotilla

BUILD_DIR = os.environ.get("FLOTILLA_BUILD_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(flotilla.__file__))))
SOURCE_DIR = os.environ.get("FLOTILLA_SOURCE_DIR") or os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__))))
PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(flotilla.__file__)))


def build_path(*parts: str) -> str:
    """A path inside the build directory (build/bin/flotilla, build/tests/...)."""
    return os.path.join(BUILD_DIR, *parts)


def child_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment of a child Python process: the in-tree package importable."""
    env = dict(os.environ)
    env["PYTHONPATH"] = PYTHON_DIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.update(extra or {})
    return env


def run_python(args: List[str], timeout: float = 120, **kwargs) -> subprocess.CompletedProcess:
    """Runs ``sys.executable args...`` with the package importable; captures output."""
    env = child_env(kwargs.pop("env", None))
    return subprocess.run([sys.executable] + args, env=env, capture_output=True, text=True, timeout=timeout,
                          **kwargs)


@pytest.fixture
def programs():
    """Fresh main and startup programs as the defaults, a fresh global scope
    and restarted unique names: (main, startup, scope)."""
    main, startup = flotilla.Program(), flotilla.Program()
    scope = flotilla._core.Scope()
    with flotilla.scope_guard(scope), flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        yield main, startup, scope
