"""Seed 004's wide & deep model in GEO mode, fed batch by batch with the
next batch's sparse rows pulled ahead (fleet.prefetch_sparse) while the
current batch trains. Run under ``flotilla launch --paddle_compat``;
each worker prints ``STEP <n> <loss>`` lines, then ``REFUSED <message>``
for a feed without the ids the lookups read."""
import os
import sys

import numpy as np
import paddle
import paddle.distributed.fleet as fleet
import paddle.distributed.fleet.base.role_maker as role_maker

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "seeds", "wide_and_deep"))
from model import net  # noqa: E402
from reader import data_reader  # noqa: E402

paddle.enable_static()
fleet.init(role_maker.PaddleCloudRoleMaker())
feeds, predict, avg_cost, auc = net()
strategy = fleet.DistributedStrategy()
strategy.a_sync = True
strategy.a_sync_configs = {"k_steps": 20}
optimizer = fleet.distributed_optimizer(paddle.optimizer.SGD(learning_rate=0.05), strategy)
optimizer.minimize(avg_cost)


def batches_of(names):
    """The reader's samples as feed dicts of 8 samples each."""
    out = []
    for batch in paddle.batch(data_reader(), batch_size=8)():
        out.append({n: np.stack(c) for n, c in zip(names, zip(*batch))})
    return out


def train(exe, batches):
    """One pass, each batch's successor prefetched while it trains."""
    for step, feed in enumerate(batches):
        if step + 1 < len(batches):
            fleet.prefetch_sparse(batches[step + 1])
        (loss,) = exe.run(paddle.static.default_main_program(), feed=feed, fetch_list=[avg_cost.name])
        print("STEP", step, float(np.mean(loss)), flush=True)


def main():
    if fleet.is_server():
        fleet.init_server()
        return fleet.run_server()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.default_startup_program())
    fleet.init_worker()
    batches = batches_of([v.name for v in feeds])
    train(exe, batches)
    try:
        fleet.prefetch_sparse({"dense_input": batches[0]["dense_input"]})
    except Exception as e:  # the feed lacks the slots' ids
        print("REFUSED", e, flush=True)
    fleet.stop_worker()


main()
