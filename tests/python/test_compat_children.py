"""The Paddle compatibility switch reaches the processes a script starts —
``sys.executable child.py``, pipe commands (``python3 reader.py`` through a
shell), Paddle's ``-m paddle.distributed.launch``, the workers of
``fleetrun`` — and no process started otherwise; and every Paddle API
Flotilla lacks names itself when called, subclassed or used as a decorator."""

import os
import subprocess
import sys
import types

import pytest

from conftest import build_path, child_env, run_python
from flotilla import paddle_compat

CHILD = """
import paddle
import paddle.fluid as fluid
import paddle.distributed.fleet as fleet
print("child imported", paddle.enable_static.__module__, fluid.Executor.__module__,
      type(fleet.util).__name__, flush=True)
"""

PARENT = """
import os
import subprocess
import sys

print(subprocess.run([sys.executable, "child.py"], capture_output=True, text=True, check=True).stdout.strip())
# Paddle's harnesses (TestFleetBase, TestDistBase) give a child only PATH and PYTHONPATH.
bare = {"PATH": os.environ["PATH"], "PYTHONPATH": os.environ["PYTHONPATH"].split(os.pathsep)[0]}
print("bare", subprocess.run([sys.executable, "child.py"], env=bare, capture_output=True, text=True,
                             check=True).stdout.strip())
# A pipe command, as Dataset.set_pipe_command('python3 reader.py') runs it.
print("pipe", subprocess.run("python3 reader.py < data.txt", shell=True, capture_output=True, text=True,
                             check=True).stdout.strip())
opted_out = dict(os.environ, FLOTILLA_PADDLE_COMPAT="0")
print("opted out:", subprocess.run([sys.executable, "child.py"], env=opted_out, capture_output=True,
                                   text=True).stderr.strip().splitlines()[-1])
"""

READER = """
import sys
import paddle
print("reader", paddle.__name__, paddle.in_dynamic_mode(), sum(int(line) for line in sys.stdin), flush=True)
"""

SERVED = "flotilla.paddle_compat.paddle_root flotilla.executor UtilBase"


def with_python3_on_path(tmp_path) -> dict:
    """PATH whose `python3` is this interpreter (as a job's image would have it)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_children_of_a_script_under_the_switch_import_flotillas_paddle(tmp_path):
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "reader.py").write_text(READER)
    (tmp_path / "data.txt").write_text("1\n2\n39\n")
    (tmp_path / "parent.py").write_text(PARENT)
    proc = run_python(["-m", "flotilla.paddle_compat", "parent.py"], cwd=str(tmp_path),
                      env=with_python3_on_path(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert lines[0] == f"child imported {SERVED}"
    assert lines[1] == f"bare child imported {SERVED}"
    assert lines[2] == "pipe reader paddle False 42"
    assert lines[3] == "opted out: ModuleNotFoundError: No module named 'paddle'"


def test_a_process_not_under_the_switch_has_no_paddle(tmp_path):
    (tmp_path / "child.py").write_text(CHILD)
    proc = run_python(["child.py"], cwd=str(tmp_path))
    assert proc.returncode != 0 and "ModuleNotFoundError: No module named 'paddle'" in proc.stderr
    # install() alone serves this process only: its children are not under the switch.
    proc = run_python(["-c", "import subprocess, sys\n"
                             "from flotilla import paddle_compat\n"
                             "paddle_compat.install()\n"
                             "import paddle\n"
                             "r = subprocess.run([sys.executable, 'child.py'], capture_output=True, text=True)\n"
                             "print(paddle.__name__, r.returncode, r.stderr.strip().splitlines()[-1])\n"],
                      cwd=str(tmp_path))
    assert proc.stdout.strip() == "paddle 1 ModuleNotFoundError: No module named 'paddle'", proc.stderr
    assert paddle_compat.CHILD_PATH not in os.environ.get("PYTHONPATH", "")


def test_export_to_children_is_idempotent_and_first_on_pythonpath():
    env = {"PYTHONPATH": "/a:/b"}
    paddle_compat.export_to_children(env)
    paddle_compat.export_to_children(env)
    assert env == {"PYTHONPATH": f"{paddle_compat.CHILD_PATH}:/a:/b", "FLOTILLA_PADDLE_COMPAT": "1"}


def test_fleetrun_command_and_paddle_launch_module_resolve(tmp_path):
    fleetrun = build_path("bin", "fleetrun")
    proc = subprocess.run([fleetrun, "--help"], env=child_env(), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "--server_num" in proc.stdout and "--paddle_compat" in proc.stdout
    # A child of a script under the switch runs Paddle's launcher module.
    (tmp_path / "parent.py").write_text(
        "import subprocess, sys\n"
        "r = subprocess.run([sys.executable, '-m', 'paddle.distributed.launch', '--help'], capture_output=True,\n"
        "                   text=True)\n"
        "print(r.returncode, '--nproc_per_node' in r.stdout)\n")
    proc = run_python(["-m", "flotilla.paddle_compat", "parent.py"], cwd=str(tmp_path))
    assert proc.stdout.strip() == "0 True", proc.stderr[-3000:]


def test_fleetrun_workers_and_their_children_import_flotillas_paddle(tmp_path):
    (tmp_path / "child.py").write_text(CHILD)
    (tmp_path / "train.py").write_text(
        "import subprocess, sys\n"
        "import paddle.distributed.fleet as fleet\n"
        "fleet.init(is_collective=True)\n"
        "child = subprocess.run([sys.executable, 'child.py'], capture_output=True, text=True, check=True)\n"
        "print('worker', fleet.worker_index(), 'of', fleet.worker_num(), child.stdout.strip(), flush=True)\n")
    proc = subprocess.run([build_path("bin", "fleetrun"), "--nproc_per_node", "2", "train.py"], cwd=str(tmp_path),
                          env=child_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for rank in range(2):
        with open(tmp_path / "log" / f"workerlog.{rank}") as f:
            assert f"worker {rank} of 2 child imported {SERVED}" in f.read()


MISSING = """
import paddle
for name, attempt in [
        ("subclass", lambda: exec("class M(paddle.nn.XYZ): pass")),
        ("decorator", lambda: exec("@paddle.jit.to_static\\ndef f(): pass")),
        ("decorator call", lambda: exec("@paddle.no_grad_xyz()\\ndef f(): pass")),
        ("call", lambda: paddle.nn.functional.grid_sample(None, None)),
        ("with", lambda: exec("with paddle.amp.auto_cast_xyz: pass"))]:
    try:
        attempt()
        print(name, "ran")
    except NotImplementedError as e:
        print(name, "->", e)
print("isinstance", isinstance(3, paddle.XYZTensor), issubclass(int, (paddle.XYZTensor, int)))
"""


def test_missing_paddle_apis_name_themselves_when_subclassed_decorating_or_called(tmp_path):
    (tmp_path / "missing.py").write_text(MISSING)
    proc = run_python(["-m", "flotilla.paddle_compat", "missing.py"], cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = proc.stdout.splitlines()
    assert out[0] == ("subclass -> subclassing paddle.nn.XYZ is not in Flotilla; nearest Flotilla API: the layers "
                      "of paddle.nn (Linear, Embedding, Conv2D, BatchNorm2D, ...) or paddle.static.nn")
    assert out[1] == ("decorator -> paddle.jit.to_static is not in Flotilla; nearest Flotilla API: a static program "
                      "saved with save_inference_model")
    assert out[2].startswith("decorator call -> paddle.no_grad_xyz is not in Flotilla; nearest Flotilla API: ")
    assert out[3].startswith("call -> paddle.nn.functional.grid_sample is not in Flotilla")
    assert out[4].startswith("with -> with paddle.amp.auto_cast_xyz is not in Flotilla")
    assert out[5] == "isinstance False True"


@pytest.mark.parametrize("api", ["paddle.nn.XYZ", "paddle.fluid.dygraph.Layer"])
def test_missing_stub_refuses_subclassing_in_process(api):
    stub = paddle_compat._Missing(api)
    with pytest.raises(NotImplementedError, match=f"subclassing {api} is not in Flotilla; nearest Flotilla API: "):
        types.new_class("M", (stub,))
    with pytest.raises(NotImplementedError, match=f"^{api} is not in Flotilla"):
        stub(lambda: None)
    assert not isinstance(object(), stub) and not issubclass(int, stub)
