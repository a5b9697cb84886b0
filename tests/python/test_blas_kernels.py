"""A Python process that loaded NumPy's OpenBLAS first, with poor kernels,
runs Flotilla's GEMMs on the same kernels as a C++ process.

OPENBLAS_CORETYPE=Prescott, exported before Python starts, gives NumPy's
OpenBLAS the SSE3 kernels it falls back to on a CPU newer than its table.
Flotilla's GEMM (a matmul op run by the executor) must still give the same
bits as math::Gemm in a C++ process (py_blas_probe) started in the normal
environment, and both must report the kernels chosen from the CPU's
features. Different kernels round differently, which the bits show: the
probe forced to Prescott's kernels gives other bits, checked here too.
"""

import json
import platform
import subprocess

import pytest


from conftest import build_path, child_env, run_python

M, K, N = 64, 300, 80

PYTHON_SIDE = r"""
import ctypes, json, sys
import numpy as np  # loads the shared OpenBLAS first, as a user's script does
np.dot(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32))
import flotilla
from flotilla import fluid

m, k, n = (int(v) for v in sys.argv[1:4])
a = (((np.arange(m * k, dtype=np.int64) * 7919) % 1000).astype(np.float32) / np.float32(1000)
     - np.float32(0.5)).reshape(m, k)
b = (((np.arange(k * n, dtype=np.int64) * 104729) % 997).astype(np.float32) / np.float32(997)
     - np.float32(0.5)).reshape(k, n)
main, startup = flotilla.Program(), flotilla.Program()
with flotilla.program_guard(main, startup):
    x = fluid.layers.data(name="a", shape=[m, k], dtype="float32", append_batch_size=False)
    y = fluid.layers.data(name="b", shape=[k, n], dtype="float32", append_batch_size=False)
    c = fluid.layers.matmul(x, y)
exe = fluid.Executor(fluid.CPUPlace())
out = np.ascontiguousarray(exe.run(main, feed={"a": a, "b": b}, fetch_list=[c])[0], dtype=np.float32)
digest = 1469598103934665603
for byte in out.tobytes():
    digest = ((digest ^ byte) * 1099511628211) % (1 << 64)
shared = ctypes.CDLL("libopenblas.so.0")  # the instance NumPy loaded
shared.openblas_get_corename.restype = ctypes.c_char_p
print(json.dumps({"kernels": flotilla._core.blas_kernels(), "digest": "%016x" % digest,
                  "numpy_core": shared.openblas_get_corename().decode(),
                  "max_error": float(np.abs(out - a.astype(np.float64) @ b.astype(np.float64)).max())}))
"""


def cpp_side(extra=None) -> dict:
    done = subprocess.run([build_path("tests", "py_blas_probe"), str(M), str(K), str(N)], env=child_env(extra),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def python_side(extra=None) -> dict:
    done = run_python(["-c", PYTHON_SIDE, str(M), str(K), str(N)], env=extra, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


X86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="OpenBLAS's x86-64 core types")


@X86_64
def test_python_after_numpy_on_poor_kernels_runs_the_cpp_kernels():
    cpp = cpp_side()
    py = python_side({"OPENBLAS_CORETYPE": "Prescott"})
    print("C++:", cpp, "\nPython:", py)
    assert py["numpy_core"] == "Prescott", "NumPy's OpenBLAS should carry the poor kernels of this scenario"
    kernels = py["kernels"]
    assert kernels["private_instance"] and cpp["private_instance"]
    assert kernels["core"] == cpp["core"], f"Python ran {kernels['core']}, C++ ran {cpp['core']}"
    assert kernels["chosen_by"] == cpp["chosen_by"] == "CPU features"
    assert py["max_error"] < 1e-4
    assert py["digest"] == cpp["digest"], "the same GEMM gave other bits in Python than in C++"


@X86_64
def test_other_kernels_give_other_bits():
    """The digest tells kernel levels apart, so the test above can fail."""
    mine = cpp_side()
    if mine["core"] == "Prescott":
        return  # this CPU's own choice; there is no poorer level to compare with
    prescott = cpp_side({"FLOTILLA_BLAS_CORETYPE": "Prescott"})
    assert prescott["core"] == "Prescott" and prescott["chosen_by"] == "FLOTILLA_BLAS_CORETYPE"
    assert prescott["digest"] != mine["digest"]


def test_kernels_reported_in_python():
    k = run_python(["-c", "import flotilla, json; print(json.dumps(flotilla._core.blas_kernels()))"],
                   env={"OPENBLAS_NUM_THREADS": "1"})
    assert k.returncode == 0, k.stderr
    info = json.loads(k.stdout)
    assert info["library"].startswith("OpenBLAS ")
    assert info["threads"] == 1
    assert info["core"] in info["summary"] and info["cpu"] in info["summary"]


@X86_64
def test_env_explain_names_the_isa_and_kernels():
    cpp = cpp_side()
    done = subprocess.run([build_path("bin", "flotilla"), "env", "--explain"], env=child_env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    math = done.stdout[done.stdout.index("math kernels:"):]
    assert f"kernels   {cpp['core']}, chosen by CPU features" in math, math
    assert f"blas      {cpp['library']}, Flotilla's own instance" in math, math
    assert "threads   1 " in math, math  # OPENBLAS_NUM_THREADS=1 in the tests' environment
    assert "cpu       " in math and ("SSE3" in math or "none" in math), math
