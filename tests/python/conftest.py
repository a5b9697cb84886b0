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


def run_python_processes(args: List[List[str]], envs: Optional[List[Dict[str, str]]] = None, timeout: float = 60,
                         **kwargs) -> List[subprocess.CompletedProcess]:
    """Runs ``sys.executable args[i]...`` side by side (``envs[i]`` added to
    each one's environment) until all have exited; kills and reaps any still
    running after ``timeout`` seconds or on an error. Captures output."""
    procs = [subprocess.Popen([sys.executable] + a, env=child_env(envs[i] if envs else None), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, **kwargs) for i, a in enumerate(args)]
    try:
        outputs = [p.communicate(timeout=timeout) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return [subprocess.CompletedProcess(p.args, p.returncode, out, err) for p, (out, err) in zip(procs, outputs)]


def run_ps_job(tmp_path, script: str, *args: str, timeout: float = 120, workers: int = 1) -> List[str]:
    """Runs tests/python/<script> args... under ``flotilla launch
    --paddle_compat --server_num=1 --worker_num=<workers>`` in tmp_path (the
    launcher ends every process); asserts it succeeded and returns the
    workers' logs."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), script)
    launcher = build_path("bin", "flotilla")
    env = child_env({"FLOTILLA_BIN": launcher, "FLOTILLA_PYTHON": sys.executable})
    proc = subprocess.run([launcher, "launch", "--paddle_compat", "--server_num=1", f"--worker_num={workers}", path,
                           *args], cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    logs = []
    for w in range(workers):
        with open(os.path.join(str(tmp_path), "log", f"workerlog.{w}")) as f:
            logs.append(f.read())
    return logs


@pytest.fixture
def programs():
    """Fresh main and startup programs as the defaults, a fresh global scope
    and restarted unique names: (main, startup, scope)."""
    main, startup = flotilla.Program(), flotilla.Program()
    scope = flotilla._core.Scope()
    with flotilla.scope_guard(scope), flotilla.program_guard(main, startup), flotilla.unique_name_guard():
        yield main, startup, scope
