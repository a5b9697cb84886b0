"""A bag-of-ids CTR model on a parameter server: two variable-length id
slots (lod_level 1) looked up in sparse tables on the server, pooled per
sample, and a small fc on top. Run under ``flotilla launch --paddle_compat
--server_num=1 --worker_num=1 lod_ps_train.py <mode>``; the worker prints
``STEP <n> <loss>`` lines."""
import sys

import numpy as np
import paddle
import paddle.distributed.fleet as fleet
import paddle.distributed.fleet.base.role_maker as role_maker
import paddle.fluid as fluid

paddle.enable_static()
fleet.init(role_maker.PaddleCloudRoleMaker())
slots = [fluid.layers.data(name=f"slot{i}", shape=[1], dtype="int64", lod_level=1) for i in range(2)]
label = fluid.layers.data(name="label", shape=[1], dtype="int64")
pooled = [fluid.layers.sequence_pool(fluid.layers.embedding(s, size=[1000, 8], is_sparse=True,
                                                            param_attr=fluid.ParamAttr(name=f"emb{i}")), "sum")
          for i, s in enumerate(slots)]
predict = fluid.layers.fc(fluid.layers.concat(pooled, axis=1), size=2, act="softmax")
avg_cost = fluid.layers.mean(fluid.layers.cross_entropy(predict, label))
strategy = fleet.DistributedStrategy()
strategy.a_sync = sys.argv[1] != "sync"
if sys.argv[1] == "geo":
    strategy.a_sync_configs = {"k_steps": 5}
optimizer = fleet.distributed_optimizer(fluid.optimizer.SGD(learning_rate=0.1), strategy)
optimizer.minimize(avg_cost)


def samples():
    """Label 1 when slot 0 holds an id below 50; ragged slots, some empty."""
    rng = np.random.RandomState(7)
    for _ in range(1600):
        a = rng.randint(0, 1000, rng.randint(0, 5)).tolist()
        b = rng.randint(0, 1000, rng.randint(1, 4)).tolist()
        yield a, b, [int(any(i < 50 for i in a))]


def main():
    if fleet.is_server():
        fleet.init_server()
        return fleet.run_server()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    fleet.init_worker()
    feeder = fluid.DataFeeder(feed_list=slots + [label], place=fluid.CPUPlace())
    for step, batch in enumerate(paddle.batch(samples, batch_size=16)()):
        (loss,) = exe.run(fluid.default_main_program(), feed=feeder.feed(batch), fetch_list=[avg_cost.name])
        print("STEP", step, float(np.mean(loss)), flush=True)
    fleet.stop_worker()


main()
