"""Ctrl-C while the C++ core runs: SIGINT to a child in a long ``exe.run``
raises KeyboardInterrupt there within 1 s, and the child can keep going."""

import signal
import subprocess
import sys
import time

from conftest import child_env

CHILD = r"""
import sys, time
import numpy as np
import flotilla
from flotilla import fluid

x = fluid.layers.data(name="x", shape=[512], dtype="float32")
h = x
for _ in range(400):            # ~10 ms per layer: a run of several seconds
    h = fluid.layers.fc(input=h, size=512, act="tanh")
exe = fluid.Executor(fluid.CPUPlace())
exe.run(fluid.default_startup_program())
feed = {"x": np.random.rand(512, 512).astype("float32")}
exe.run(feed={"x": feed["x"][:1]}, fetch_list=[h])   # warm up
start = time.monotonic()
print("running", flush=True)
try:
    exe.run(feed=feed, fetch_list=[h])
    print("finished", time.monotonic() - start, flush=True)
except KeyboardInterrupt:
    print("interrupted", time.monotonic(), flush=True)
    (out,) = exe.run(feed={"x": np.zeros((1, 512), "float32")}, fetch_list=[h])
    print("usable", out.shape, flush=True)
"""


def test_sigint_during_run_raises_keyboard_interrupt_within_a_second():
    child = subprocess.Popen([sys.executable, "-c", CHILD], env=child_env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "running"
        time.sleep(0.3)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    lines = out.splitlines()
    assert lines and lines[0].startswith("interrupted"), (out, err)
    latency = float(lines[0].split()[1]) - sent
    assert latency < 1.0, f"KeyboardInterrupt {latency:.2f} s after SIGINT"
    assert lines[1] == "usable (1, 512)", (out, err)
    assert child.returncode == 0, err
