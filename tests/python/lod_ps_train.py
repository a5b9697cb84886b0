"""A bag-of-ids CTR model on a parameter server: two variable-length id
slots (lod_level 1) looked up in sparse tables on the server, pooled per
sample, and a small fc on top. Run under ``flotilla launch --paddle_compat
--server_num=1 --worker_num=1 lod_ps_train.py <mode> [pyreader|dataset|shuffle]``.

pyreader (default): exe.run fed by a DataFeeder; the worker prints
``STEP <n> <loss>`` lines. dataset: ``exe.train_from_dataset`` on two
threads from a QueueDataset (the samples as MultiSlot files read through
the pipe command); before training and after each of three passes the
worker prints ``PASS <n> <test loss>`` (infer_from_dataset over held-out
samples) next to train_from_dataset's ``batch: N, loss: x`` lines.
shuffle (any number of workers): each worker loads its own samples into an
InMemoryDataset, global_shuffle(fleet) exchanges them, the worker prints
``SHUFFLED <json>`` (its sizes and the slot-1 ids it holds) and trains on
them as dataset does."""
import contextlib
import io
import json
import re
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


def samples(count=1600, seed=7):
    """Label 1 when slot 0 holds an id below 50; ragged slots, some empty."""
    rng = np.random.RandomState(seed)
    for _ in range(count):
        a = rng.randint(0, 1000, rng.randint(0, 5)).tolist()
        b = rng.randint(0, 1000, rng.randint(1, 4)).tolist()
        yield a, b, [int(any(i < 50 for i in a))]


def train_with_feeder(exe):
    feeder = fluid.DataFeeder(feed_list=slots + [label], place=fluid.CPUPlace())
    for step, batch in enumerate(paddle.batch(samples, batch_size=16)()):
        (loss,) = exe.run(fluid.default_main_program(), feed=feeder.feed(batch), fetch_list=[avg_cost.name])
        print("STEP", step, float(np.mean(loss)), flush=True)


def multislot_files(name, parts, count, seed):
    """samples(count, seed) as MultiSlot text, split into `parts` files."""
    lines = [" ".join(str(v) for s in sample for v in [len(s)] + s) for sample in samples(count, seed)]
    paths = []
    for p in range(parts):
        paths.append(f"{name}-{p}")
        with open(paths[-1], "w") as f:
            f.write("\n".join(lines[p::parts]) + "\n")
    return paths


def queue_dataset(files):
    ds = fluid.DatasetFactory().create_dataset("QueueDataset")
    ds.set_use_var(slots + [label])
    ds.set_pipe_command("cat")
    ds.set_batch_size(16)
    ds.set_thread(2)
    ds.set_filelist(files)
    ds.dataset.set_allow_empty_slots(True)  # slot 0 may be empty
    return ds


def shuffled_dataset():
    """This worker's samples (seeded by its index) in an InMemoryDataset,
    globally shuffled; prints SHUFFLED."""
    ds = fluid.DatasetFactory().create_dataset("InMemoryDataset")
    ds.set_use_var(slots + [label])
    ds.set_batch_size(16)
    ds.set_thread(2)
    ds.set_filelist(multislot_files(f"train-worker{fleet.worker_index()}", 2, 800, 7 + fleet.worker_index()))
    ds.dataset.set_allow_empty_slots(True)
    ds.load_into_memory()
    loaded = ds.dataset.memory_data_size()
    ds.global_shuffle(fleet)
    ids = []
    for b in range(ds.dataset.batch_count()):
        ids.extend(ds.dataset.batch(b)["slot1"][0].tolist())
    print("SHUFFLED", json.dumps({"loaded": loaded, "held": ds.dataset.memory_data_size(),
                                  "total": ds.get_memory_data_size(fleet), "ids": sorted(ids)}), flush=True)
    return ds


def train_from_dataset(exe, train):
    test = queue_dataset(multislot_files("test", 1, 320, 99))
    for p in range(4):
        if p > 0:
            exe.train_from_dataset(fluid.default_main_program(), train, thread=2, fetch_list=[avg_cost],
                                   fetch_info=["loss"], print_period=20)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exe.infer_from_dataset(fluid.default_main_program(), test, thread=1, fetch_list=[avg_cost],
                                   fetch_info=["loss"], print_period=1)
        losses = [float(x) for x in re.findall(r"loss: (\S+)", out.getvalue())]
        print("PASS", p, np.mean(losses), flush=True)


def main():
    if fleet.is_server():
        fleet.init_server()
        return fleet.run_server()
    exe = fluid.Executor(fluid.CPUPlace())
    exe.run(fluid.default_startup_program())
    fleet.init_worker()
    if sys.argv[2:] == ["dataset"]:
        train_from_dataset(exe, queue_dataset(multislot_files("train", 4, 1600, 7)))
    elif sys.argv[2:] == ["shuffle"]:
        train_from_dataset(exe, shuffled_dataset())
    else:
        train_with_feeder(exe)
    fleet.stop_worker()


main()
