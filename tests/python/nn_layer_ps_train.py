"""The wide&deep nn.Layer model of test_nn_layer.py in a parameter-server
job (fleet, PaddleCloudRoleMaker's environment): the worker prints
``STEP <n> <loss>`` for each of the test's batches; ``--mode sync|async``."""
import os
import sys

import numpy as np

import flotilla
from flotilla import fluid
from flotilla.distributed import fleet
from flotilla.distributed.fleet.base import role_maker

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_nn_layer as T  # noqa: E402


def main(mode: str, steps: int) -> None:
    fleet.init(role_maker.PaddleCloudRoleMaker())
    main_program, startup = T._programs()
    with flotilla.program_guard(main_program, startup), flotilla.unique_name_guard():
        loss = T._wide_deep_layer_loss()
        strategy = fleet.DistributedStrategy()
        strategy.a_sync = mode == "async"
        fleet.distributed_optimizer(fluid.optimizer.SGD(learning_rate=T.LEARNING_RATE), strategy).minimize(loss)
    if fleet.is_server():
        fleet.init_server()
        fleet.run_server()
        return
    exe = flotilla.Executor()
    exe.run(startup)
    fleet.init_worker()
    for step, feed in enumerate(T._wide_deep_batches(steps)):
        (value,) = exe.run(main_program, feed=feed, fetch_list=[loss])
        print("STEP", step, repr(float(np.asarray(value).ravel()[0])), flush=True)
    fleet.stop_worker()


if __name__ == "__main__":
    main(sys.argv[sys.argv.index("--mode") + 1], 20)
