"""LocalSGD at run time on two ranks: before begin_step (Paddle 1.x's
warm-up steps) the ranks average their parameters every step, so they stay
equal; from begin_step on each rank trains on its own and the parameters
are equal only right after every k_steps-th step's averaging. The same
schedule from Paddle 2.x's localsgd_configs, from 1.x's names on the 2.x
strategy and from the 1.x collective strategy."""

import json
import textwrap

import numpy as np
import pytest

from conftest import build_path, child_env

import subprocess

SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from flotilla import fluid
    from flotilla.distributed import fleet
    from flotilla.fluid.incubate.fleet.collective import DistributedStrategy as CollectiveStrategy

    names, out = sys.argv[1], sys.argv[2]
    x = fluid.layers.data(name="x", shape=[3], dtype="float32")
    y = fluid.layers.data(name="y", shape=[1], dtype="float32")
    w = fluid.ParamAttr(name="w", initializer=fluid.initializer.Constant(0.5))
    pred = fluid.layers.fc(input=x, size=1, bias_attr=False, param_attr=w)
    loss = fluid.layers.mean(fluid.layers.square_error_cost(input=pred, label=y))
    fleet.init(is_collective=True)
    if names == "2x":
        s = fleet.DistributedStrategy()
        s.localsgd = True
        s.localsgd_configs = {"k_steps": 3, "begin_step": 4}
    elif names == "1x_on_2x":
        s = fleet.DistributedStrategy()
        s.use_local_sgd = True
        s.local_sgd_steps = 3
        s.local_sgd_is_warm_steps = 3
    else:
        s = CollectiveStrategy()
        s.use_local_sgd = True
        s.local_sgd_steps = 3
        s.local_sgd_is_warm_steps = 3
    fleet.distributed_optimizer(fluid.optimizer.SGD(learning_rate=0.1), s).minimize(loss)
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    rank = fleet.worker_index()
    rng = np.random.default_rng(100 + rank)  # each rank its own data
    weights = []
    for step in range(9):
        xs = rng.random((8, 3), np.float32)
        exe.run(fluid.default_main_program(), feed={"x": xs, "y": xs.sum(1, keepdims=True) * (rank + 1)})
        weights.append(np.array(fluid.global_scope().find_var("w").get_tensor()).ravel().tolist())
    with open(f"{out}.rank{rank}", "w") as f:
        json.dump(weights, f)
""")

# Steps 1-3 warm up (averaged every step); then every 3rd step (6, 9) averages.
EQUAL_AFTER_STEP = [True, True, True, False, False, True, False, False, True]


@pytest.mark.parametrize("names", ["2x", "1x_on_2x", "1x"])
def test_no_local_steps_before_begin_step_and_averaging_every_k_after(tmp_path, names):
    script = tmp_path / "localsgd.py"
    script.write_text(SCRIPT)
    proc = subprocess.run([build_path("bin", "flotilla"), "launch", "--nproc_per_node", "2", "--log_dir", "log",
                           str(script), names, "w.json"], cwd=str(tmp_path), env=child_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    ranks = [np.array(json.loads((tmp_path / f"w.json.rank{r}").read_text())) for r in range(2)]
    equal = [bool(np.array_equal(a, b)) for a, b in zip(*ranks)]
    assert equal == EQUAL_AFTER_STEP, np.abs(ranks[0] - ranks[1]).max(axis=1)
    gap = np.abs(ranks[0] - ranks[1]).max(axis=1)
    assert gap[3] > 1e-4 and gap[4] > 1e-4  # the ranks' own steps really diverge
